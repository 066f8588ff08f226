#!/usr/bin/env bash
# The test suite, in Orrery's environment (see _env.sh); arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_env.sh
use_orrery_env
exec python -m pytest "$@"
