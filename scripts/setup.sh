#!/usr/bin/env bash
# Installs what Orrery needs on a fresh Debian machine: the system GL and X packages, then the
# package itself (editable, with its test and SYCL extras) into a virtual environment: the one
# already active, else the project's `.venv`, made here from `python3`. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_env.sh

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "Orrery needs Python 3.11 or newer; python3 here is $(python3 -V 2>&1)." >&2
  exit 1
fi

system_packages=(libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri libglx-mesa0 xvfb xauth xdotool imagemagick)
# Debian's python3 makes virtual environments only with python3-venv installed.
in_active_venv || python3 -c 'import ensurepip' 2>/dev/null || system_packages+=(python3-venv)
missing=()
for package in "${system_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! in_active_venv && [ ! -x "$PROJECT_VENV/bin/python" ]; then
  python3 -m venv "$PROJECT_VENV"
fi
use_orrery_env
python -m pip install -q --upgrade pip
python -m pip install -q -e '.[test,sycl]'
if [ "$VIRTUAL_ENV" = "$PROJECT_VENV" ]; then
  echo "Installed into .venv; 'source .venv/bin/activate' puts orrery, orrery-viewer and its python on PATH."
fi
