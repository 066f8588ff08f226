#!/usr/bin/env bash
# The native core for AArch64, built here with Debian's cross compiler and run under qemu-user:
#  1. an arm64 root of Debian's Python 3.11 (its .deb files unpacked, nothing installed) and the
#     aarch64 wheels of the engine's dependencies and pytest (pip --platform, into a folder);
#  2. the extension module cross-compiled by CMake (scripts/aarch64-linux-gnu.cmake): scalar and
#     NEON kernel tables;
#  3. under qemu-aarch64: the results of scripts/platform_results.py compared with this machine's
#     (bit for bit where the code promises it, within its tolerances elsewhere), then the tests
#     of the CPU solvers, the flock and float16 narrowing at every SIMD level the build has.
# qemu runs each program explicitly (no binfmt_misc needed), so a test that starts a child Python
# cannot run here and is left out.
#   bash scripts/arm64.sh                 # everything
#   bash scripts/arm64.sh -k neon         # arguments go to pytest
# ORRERY_ARM64_CACHE holds the root, the wheels and the build (default ~/.cache/orrery/arm64).
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
source scripts/_env.sh
use_orrery_env
cache=${ORRERY_ARM64_CACHE:-$HOME/.cache/orrery/arm64}
root=$cache/root
site=$cache/site
build=$cache/build
stage=$cache/stage
mkdir -p "$cache"

sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
host_packages=(g++-aarch64-linux-gnu qemu-user-static)
missing=()
for package in "${host_packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
lists_stale=no
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  phase "Debian's arm64 packages made visible to apt (dpkg --add-architecture arm64)"
  $sudo_cmd dpkg --add-architecture arm64
  lists_stale=yes
fi
if [ ${#missing[@]} -gt 0 ] || [ $lists_stale = yes ]; then
  phase "host packages (apt): ${missing[*]:-none, the package lists only}"
  $sudo_cmd apt-get update -qq
  [ ${#missing[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's arm64 Python and the libraries it and the module load (apt-cache depends of
# python3.11-minimal, libpython3.11-stdlib and libpython3.11-dev, less the tools).
root_packages=(libc6 libgcc-s1 libstdc++6 gcc-12-base python3.11-minimal libpython3.11-minimal
               libpython3.11-stdlib libpython3.11-dev libexpat1 zlib1g libffi8 libssl3 libbz2-1.0
               liblzma5 libsqlite3-0 libncursesw6 libtinfo6 libreadline8 libuuid1 libdb5.3
               libcrypt1 libnsl2 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3
               libkrb5support0 libkeyutils1 libcom-err2 libzstd1)
if [ ! -x "$root/usr/bin/python3.11" ]; then
  phase "the arm64 root (apt-get download, dpkg -x): ${#root_packages[@]} packages"
  mkdir -p "$cache/debs" "$root"
  (cd "$cache/debs" && apt-get download -qq "${root_packages[@]/%/:arm64}" 2>/dev/null)
  for deb in "$cache"/debs/*.deb; do dpkg -x "$deb" "$root"; done
fi
python_arm64=(qemu-aarch64-static -L "$root" "$root/usr/bin/python3.11")
# The engine's dependencies (pyproject.toml's, less the viewer's) and pytest, as aarch64 wheels.
site_packages=(numpy scipy h5py tqdm pytest)
if [ ! -f "$site/.complete" ]; then
  phase "aarch64 wheels into $site (pip --platform): ${site_packages[*]}"
  python -m pip install -q --platform manylinux2014_aarch64 --python-version 3.11 \
    --implementation cp --abi cp311 --only-binary=:all: --target "$site" "${site_packages[@]}"
  touch "$site/.complete"
fi

phase "the native module for aarch64 (cmake, $build)"
# A wrapper that runs the arm64 Python under qemu, so that CMake's FindPython asks it for its
# version and extension suffix.
wrapper=$cache/python3-aarch64
printf '#!/bin/sh\nexec %s "$@"\n' "${python_arm64[*]}" >"$wrapper"
chmod +x "$wrapper"
cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$checkout/scripts/aarch64-linux-gnu.cmake" \
  -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" -DPython_EXECUTABLE="$wrapper" \
  -DPython_INCLUDE_DIR="$root/usr/include/python3.11" -DCMAKE_CXX_FLAGS="-isystem $root/usr/include" \
  >"$cache/cmake.log"
cmake --build "$build" -j "${ORRERY_BUILD_JOBS:-2}" >>"$cache/cmake.log" ||
  { tail -n 30 "$cache/cmake.log" >&2; exit 1; }
grep "warning:" "$cache/cmake.log" >&2 || true

phase "the package, staged as the wheel lays it out ($stage)"
rm -rf "$stage"
mkdir -p "$stage"
python - "$stage" <<'EOF'
import os, sys, tomllib
stage = sys.argv[1]
mapping = tomllib.load(open("pyproject.toml", "rb"))["tool"]["scikit-build"]["wheel"]["packages"]
for target, source in mapping.items():
    if target == "orrery":  # the package's own files
        os.makedirs(os.path.join(stage, target))
        for name in os.listdir(source):
            os.symlink(os.path.abspath(os.path.join(source, name)), os.path.join(stage, target, name))
    else:
        os.symlink(os.path.abspath(source), os.path.join(stage, target))
EOF
cp "$build"/native/_native*.so "$stage/orrery/"
export PYTHONPATH="$stage:$site"
"${python_arm64[@]}" -c 'from orrery.engine.cpu_features import build_info; i = build_info()
print("built with", i["compiler"] + "; SIMD levels", i["simd_compiled"], "this CPU", i["simd_cpu"])'

phase "results compared with x86-64 (scripts/platform_results.py)"
PYTHONPATH= python scripts/platform_results.py write "$cache/x86_64.npz"
"${python_arm64[@]}" scripts/platform_results.py write "$cache/aarch64.npz"
PYTHONPATH= python scripts/platform_results.py compare "$cache/x86_64.npz" "$cache/aarch64.npz"

phase "tests under qemu-aarch64 (pytest)"
# Left out: the tree's degenerate-input cases, which run in a child process of sys.executable (an
# AArch64 program that only qemu can start, and without binfmt_misc nothing starts it for them).
"${python_arm64[@]}" -m pytest -p no:cacheprovider -q -k "not degenerate" \
  tests/engine/test_cpu_direct.py tests/engine/test_cpu_tree.py tests/engine/test_cpu_fmm.py \
  tests/engine/test_flock.py tests/engine/test_recording_half.py "$@"
phase "done"
