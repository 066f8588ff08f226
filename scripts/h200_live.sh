#!/usr/bin/env bash
# The live path on an NVIDIA GPU (issue 20): its GPU tests, then `orrery bench live` at 1M and
# 10M particles (galaxy collision, gpu-tree). Run from the repository root of an installed
# checkout (pip install --no-build-isolation .) with moderngl and the GL loaders available;
# logs and JSON rows go to $OUT (default /tmp/orrery-live).
set -uo pipefail
OUT=${OUT:-/tmp/orrery-live}
mkdir -p "$OUT"
lib=/usr/lib/x86_64-linux-gnu
export ORRERY_LIBGL=${ORRERY_LIBGL:-$lib/libGL.so.1} ORRERY_LIBEGL=${ORRERY_LIBEGL:-$lib/libEGL.so.1}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv \
  | tee "$OUT/gpu.txt"
timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/engine/gpu/test_gpu_live.py \
  tests/engine/gpu/test_gpu_direct.py tests/engine/gpu/test_gpu_tree.py 2>&1 | tee "$OUT/tests.log" | tail -25
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/engine/test_runner.py \
  tests/app/test_renderer.py 2>&1 | tee -a "$OUT/tests.log" | tail -5
bench() { timeout 200 orrery bench live --solver gpu-tree --seconds 4 --warmup 1.5 "$@"; }
bench --n 1000000 --json "$OUT/live_1m.json" 2>&1 | tee "$OUT/bench.log"
bench --n 10000000 --modes headless capped --json "$OUT/live_10m.json" 2>&1 | tee -a "$OUT/bench.log"
bench --n 1000000 --modes capped uncapped --no-interop --json "$OUT/live_1m_host.json" 2>&1 \
  | tee -a "$OUT/bench.log"
