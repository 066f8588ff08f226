#!/usr/bin/env bash
# Builds the native module with each compiler named (default: g++, clang++ and MinGW-w64's g++ for
# Windows) in a build folder of its own (build/native-warnings/COMPILER, beside the wheel's
# build), with the warnings CMakeLists.txt asks for (-Wall -Wextra -Wpedantic, -std=c++17 without
# GNU extensions), and prints how many warnings each gave. Fails if any compiler gave one or failed
# to build: the count must stay at zero. A compiler missing is installed from Debian's packages
# (g++, clang, g++-mingw-w64-x86-64-posix). The Windows build is the core alone (ORRERY_CORE_ONLY:
# no Windows Python here to build the module against), its x86 levels and their CPUID dispatch
# included.
#   bash scripts/native-warnings.sh               # all three
#   bash scripts/native-warnings.sh clang++       # one compiler
# ORRERY_BUILD_JOBS sets the parallel compiles (default: 2); ORRERY_WARNINGS_BUILD the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_env.sh
use_orrery_env
compilers=("$@")
windows=x86_64-w64-mingw32-g++-posix
[ ${#compilers[@]} -gt 0 ] || compilers=(g++ clang++ "$windows")
# In the checkout: a folder shared by checkouts would hold another checkout's CMake cache.
builds=${ORRERY_WARNINGS_BUILD:-build/native-warnings}
# Debian's package for each compiler, installed where missing.
declare -A package_of=([g++]=g++ [clang++]=clang [$windows]=g++-mingw-w64-x86-64-posix)
missing=()
for compiler in "${compilers[@]}"; do
  command -v "$compiler" >/dev/null || missing+=("${package_of[$compiler]:?no Debian package known for $compiler}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} (apt)"
  apt_install "${missing[@]}"
fi
failed=0
for compiler in "${compilers[@]}"; do
  build="$builds/$compiler"
  log="$build.log"
  mkdir -p "$build"
  started=$SECONDS
  if [ "$compiler" = "$windows" ]; then
    configure=(-DCMAKE_TOOLCHAIN_FILE="$PWD/scripts/x86_64-w64-mingw32.cmake" -DORRERY_CORE_ONLY=ON)
  else
    configure=(-DCMAKE_CXX_COMPILER="$compiler" -Dpybind11_DIR="$(python -m pybind11 --cmakedir)"
               -DPython_EXECUTABLE="$(command -v python)")
  fi
  # -k 0: every file is compiled, so one run counts every warning.
  if cmake -S . -B "$build" -G Ninja "${configure[@]}" >"$log" 2>&1 &&
     cmake --build "$build" -j "${ORRERY_BUILD_JOBS:-2}" -- -k 0 >>"$log" 2>&1; then
    built=yes
  else
    built=no
  fi
  warnings=$(grep -c "warning:" "$log" || true)
  echo "$compiler ($("$compiler" --version | head -n 1)): $warnings warnings, built: $built," \
       "$((SECONDS - started)) s (log: $log)"
  if [ "$warnings" -ne 0 ] || [ "$built" != yes ]; then
    grep -E "warning:|error:" "$log" | head -n 20 >&2 || true
    failed=1
  fi
done
exit $failed
