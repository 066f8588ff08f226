#!/usr/bin/env bash
# Installs what Orrery needs on a fresh Debian machine (system GL and X packages, then the package
# itself with its test, viewer and SYCL extras) into the current Python. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

system_packages=(libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri libglx-mesa0 xvfb xauth xdotool imagemagick)
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

python3 -m pip install -q --upgrade pip
python3 -m pip install -q -e '.[test,sycl,viewer]'
