#!/usr/bin/env bash
# Installs what Orrery needs on a fresh Debian machine: the system GL and X packages, then the
# package itself (editable, with the extras named in _env.sh) into a virtual environment: the
# one already active, else the project's `.venv`, made here from `python3`. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_env.sh

if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "Orrery needs Python 3.11 or newer; python3 here is $(python3 -V 2>&1)." >&2
  exit 1
fi

# chromium and its driver: the served client's tests drive Debian's browser (no browser download)
system_packages=(libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri libglx-mesa0 xvfb xauth xdotool imagemagick
                 chromium chromium-driver)
# What Debian's python3 lacks until asked: virtual environments, and the headers and compiler
# the native module builds with.
in_active_venv || python3 -c 'import ensurepip' 2>/dev/null || system_packages+=(python3-venv)
python3 -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
  system_packages+=(python3-dev)
command -v c++ >/dev/null || system_packages+=(g++)
missing=()
for package in "${system_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  phase "system packages (apt): ${missing[*]}"
  apt_install "${missing[@]}"
fi

if ! in_active_venv && [ ! -x "$PROJECT_VENV/bin/python" ]; then
  phase "a virtual environment in .venv (python3 -m venv)"
  python3 -m venv "$PROJECT_VENV"
fi
use_orrery_env
# The build requirements live in the environment rather than in a fresh isolated one per run, so
# the native module builds in place (build/) and a second run recompiles only what changed.
read -r -a build_requires < <(python -c 'import tomllib
print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))')
phase "build tools into $VIRTUAL_ENV (pip): ${build_requires[*]} cmake ninja"
python -m pip install -q --upgrade pip "${build_requires[@]}" cmake ninja
phase "Orrery with the extras $ORRERY_EXTRAS (pip), compiling the native module: minutes the first time"
# pip's verbose output goes to a log; what shows is each package pip fetches, each step of the
# C++ build ([step/steps]), a line every 30 s of silence (the last compiles take minutes), and
# the log's end if it fails.
log=build/setup-pip.log
mkdir -p build
progress() {
  local line quiet=0
  while true; do
    if IFS= read -r -t 30 line; then
      quiet=0
      if [[ $line =~ ^\ *\[[0-9]+/[0-9]+\]\  || $line =~ ^(Collecting|Installing\ collected|Successfully\ installed)\  ]]; then
        echo "$line"
      fi
    elif [ $? -gt 128 ]; then
      quiet=$((quiet + 30))
      echo "  still working: ${quiet} s since the last line above ($SECONDS s in all)"
    else
      return 0
    fi
  done
}
if ! python -m pip install -v --no-build-isolation -e ".[$ORRERY_EXTRAS]" 2>&1 | tee "$log" | progress; then
  echo "pip failed; the end of its log ($log):" >&2
  tail -n 40 "$log" >&2
  exit 1
fi
phase "done"
if [ "$VIRTUAL_ENV" = "$PROJECT_VENV" ]; then
  echo "Installed into .venv; 'source .venv/bin/activate' puts orrery, orrery-viewer and its python on PATH."
fi
