# Sourced by the scripts in this folder: which Python environment Orrery lives in. The virtual
# environment already active (the `python3` on PATH is a venv's) is used as it is; otherwise the
# project's own `.venv` (made by setup.sh with the standard venv module) is put first on PATH.
# Debian's and Ubuntu's own Python refuse pip outside a virtual environment (PEP 668).

ORRERY_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROJECT_VENV="$ORRERY_ROOT/.venv"
# The extras setup.sh installs and CI tests: everything but CUDA (no NVIDIA GPU there) and the
# benchmark peers.
ORRERY_EXTRAS="test,sycl,formats,video,mpi,compression,serve,jupyter"

# One line as each phase of a long script starts, with the seconds since the script began (bash's
# SECONDS): the first runs take minutes, and a silent minute reads as a hang.
phase() { echo "== $1 ($SECONDS s)"; }

# Debian packages installed with apt, through sudo unless this is root.
apt_install() {
  local sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "$@"
}

in_active_venv() {
  python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)' 2>/dev/null
}

use_orrery_env() {
  in_active_venv && return 0
  if [ ! -x "$PROJECT_VENV/bin/python" ]; then
    echo "No Orrery environment: run 'bash scripts/setup.sh' first (it makes $PROJECT_VENV)." >&2
    exit 1
  fi
  export VIRTUAL_ENV="$PROJECT_VENV" PATH="$PROJECT_VENV/bin:$PATH"
}
