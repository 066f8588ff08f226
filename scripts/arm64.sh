#!/usr/bin/env bash
# The native core for AArch64, built here with Debian's cross compiler and run under qemu-user:
#  1. an arm64 root of Debian's Python 3.11 (its .deb files unpacked, nothing installed) and the
#     aarch64 wheels of the engine's dependencies and pytest (pip --platform, into a folder);
#  2. the extension module cross-compiled by CMake (scripts/aarch64-linux-gnu.cmake): scalar, NEON
#     and SVE kernel tables (one per vector length: 128, 256 and 512 bits), and a check that the
#     SVE files put no SVE instruction in a function other files define too
#     (scripts/sve_confined.py);
#  3. under qemu-aarch64 on four CPUs, one without SVE and SVE ones of 128, 256 and 512-bit
#     vectors (qemu's -cpu max,sve=off and max,sveN=on): the results of
#     scripts/platform_results.py at the CPU's widest level compared with this machine's (bit for
#     bit where the code promises it, within its tolerances elsewhere) and the tests of the levels
#     found (tests/engine/test_cpu_features.py); then on the 256-bit CPU the tests of the CPU
#     solvers, the flock and float16 narrowing at every SIMD level the build has (scalar, neon,
#     sve), and on the other two SVE CPUs those tests at the sve level alone.
# qemu runs each program explicitly (no binfmt_misc needed), so a test that starts a child Python
# cannot run here and is left out.
#   bash scripts/arm64.sh                 # everything
#   bash scripts/arm64.sh -k neon         # arguments go to pytest (every CPU's run)
# ORRERY_ARM64_CACHE holds the root, the wheels and the build (default ~/.cache/orrery/arm64).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_env.sh
use_orrery_env
source scripts/_arm64_root.sh
build=$cache/build
stage=$cache/stage
# The CPUs emulated: no SVE, then SVE at each vector length with a table. The solvers' tests run in
# full on one of them (every level once), at the sve level on the others.
no_sve_cpu=max,sve=off
sve_cpus=(max,sve128=on max,sve256=on max,sve512=on)
full_tests_cpu=max,sve256=on

phase "the native module for aarch64 (cmake, $build)"
cmake -S . -B "$build" -G Ninja "${cross_cmake_args[@]}" -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" \
  >"$cache/cmake.log"
cmake --build "$build" -j "${ORRERY_BUILD_JOBS:-2}" >>"$cache/cmake.log" ||
  { tail -n 30 "$cache/cmake.log" >&2; exit 1; }
grep "warning:" "$cache/cmake.log" >&2 || true
python scripts/sve_confined.py "$build"/native/CMakeFiles/_native.dir/simd_sve*.cpp.o

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
PYTHONPATH= python scripts/platform_results.py write "$cache/x86_64.npz"
solver_tests=(tests/engine/test_cpu_direct.py tests/engine/test_cpu_tree.py tests/engine/test_cpu_fmm.py
              tests/engine/test_flock.py tests/engine/test_recording_half.py)
for cpu in "$no_sve_cpu" "${sve_cpus[@]}"; do
  phase "qemu-aarch64 -cpu $cpu: levels, results compared with x86-64 (scripts/platform_results.py)"
  python_on "$cpu" -c 'from orrery.engine.cpu_features import build_info, simd_level; i = build_info()
print("built with", i["compiler"] + "; SIMD levels", i["simd_compiled"], "this CPU", i["simd_cpu"],
      "with the", simd_level()["kernels"], "table")'
  python_on "$cpu" scripts/platform_results.py write "$cache/aarch64.npz"
  PYTHONPATH= python scripts/platform_results.py compare "$cache/x86_64.npz" "$cache/aarch64.npz"
  python_on "$cpu" -m pytest -p no:cacheprovider -q tests/engine/test_cpu_features.py "$@"
  [ "$cpu" != "$no_sve_cpu" ] || continue
  # Left out: the tree's degenerate-input cases, which run in a child process of sys.executable
  # (an AArch64 program that only qemu can start, and without binfmt_misc nothing starts it).
  if [ "$cpu" = "$full_tests_cpu" ]; then
    phase "qemu-aarch64 -cpu $cpu: the solvers' tests at every level (pytest)"
    python_on "$cpu" -m pytest -p no:cacheprovider -q -k "not degenerate" "${solver_tests[@]}" "$@"
  else
    phase "qemu-aarch64 -cpu $cpu: the solvers' tests at the sve level (pytest)"
    python_on "$cpu" -m pytest -p no:cacheprovider -q -k "sve and not degenerate" "${solver_tests[@]}" "$@"
  fi
done
phase "done"
