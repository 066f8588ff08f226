"""``orrery bench ceilings``: this machine's limits, measured natively on all threads.

Probes (``native/ceilings_kernel.hpp``, through the same SIMD dispatch as the solvers):
multiply-add throughput (flop/s), exact 1/sqrt as a square root and a divide (pairs/s), the
approximate 1/sqrt instruction (estimates/s), each in float32 and float64, and read bandwidth
over a buffer far larger than the last-level cache (bytes/s).

Ceilings travel as a dict keyed ``fma_f32``, ``fma_f64``, ``sqrt_div_f32``, ``sqrt_div_f64``,
``rsqrt_estimate_f32``, ``rsqrt_estimate_f64`` and ``read`` (a missing key: not measured).
``--device DEVICE`` measures a compute device instead, through
``orrery.engine.tuning.ceilings.measure(device)``, which returns the same keys in the same units.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from .. import _native
from ..app.text_table import format_table
from ..engine.cpu_features import hardware_threads, simd_level
from ..engine.options import DEVICE, SIMD, THREADS, Option
from ..engine.tuning.timing import time_interleaved
from ._options import BenchmarkSpec

HELP = "measure this machine's ceilings: FMA, sqrt+divide, rsqrt and read bandwidth"

PROBES = (("fma", "f32"), ("fma", "f64"), ("sqrt_div", "f32"), ("sqrt_div", "f64"),
          ("rsqrt_estimate", "f32"), ("rsqrt_estimate", "f64"))
UNITS = {"fma": "flop/s", "sqrt_div": "pairs/s", "rsqrt_estimate": "estimates/s", "read": "B/s"}
COLUMNS = ["probe", "precision", "simd", "threads", "rate_g", "unit", "median_s", "iqr_s", "drift"]

SPEC = BenchmarkSpec("ceilings", HELP, options=(
    THREADS,
    SIMD,
    replace(DEVICE, doc="measure a compute device instead, e.g. 'cuda:0' (needs the GPU "
                         "compute layer)"),
    Option("trial_seconds", float, 0.1, "length of one timed trial per probe",
           minimum=0.0, exclusive_minimum=True),
    Option("trials", int, 5, "timed trials per probe", minimum=1),
    Option("read_mib", int, None, "read-bandwidth buffer in MiB (default: 8x the last-level "
                                  "cache, at least 256)", minimum=1),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    if args.device:
        rows = rows_from_rates(measure_device(args.device), simd=args.device, threads=None)
    else:
        rows = measure_cpu(threads=args.threads, simd=args.simd, trial_seconds=args.trial_seconds,
                           trials=args.trials, read_mib=args.read_mib)
    print(format_table(rows, COLUMNS))
    return rows


@dataclass(frozen=True)
class Probe:
    """One calibrated probe: ``run()`` performs ``operations`` of its kind (flop, pairs,
    estimates or bytes) in about the trial length asked for."""

    probe: str
    precision: str
    operations: float
    run: Callable[[], object]

    @property
    def key(self) -> str:
        return "read" if self.probe == "read" else f"{self.probe}_{self.precision}"


def make_probes(*, threads: int, level: str, trial_seconds: float = 0.1,
                read_mib: int | None = None, read: bool = True) -> list[Probe]:
    """Every probe this SIMD level has, calibrated to about ``trial_seconds`` per call, so a
    benchmark can time them interleaved with its own contenders. ``read=False`` leaves out the
    bandwidth probe (and its large buffer)."""
    probes = []
    for probe, precision in PROBES:
        if not probe_available(probe, precision, level):
            continue

        def call(rounds, probe=probe, precision=precision):
            return _native.probe_operations(probe, precision, rounds, threads, level)

        rounds = _calibrate(call, trial_seconds)
        probes.append(Probe(probe, precision, call(rounds), lambda call=call, rounds=rounds: call(rounds)))
    if read:
        buffer = np.ones((read_mib or default_read_mib()) * 2**17)
        one_pass = _native.probe_read_bytes(buffer, threads, level)
        start = time.perf_counter()
        _native.probe_read_bytes(buffer, threads, level)
        passes = max(1, math.ceil(trial_seconds / max(time.perf_counter() - start, 1e-6)))
        probes.append(Probe("read", "f64", one_pass * passes, lambda: [
            _native.probe_read_bytes(buffer, threads, level) for _ in range(passes)]))
    return probes


def measure_cpu(*, threads: int | None = None, simd: str | None = None, trial_seconds: float = 0.1,
                trials: int = 5, read_mib: int | None = None, read: bool = True) -> list[dict]:
    """Every probe on ``threads`` threads (default all) at SIMD level ``simd``, timed in turns;
    one row each, with ``rate`` in the probe's unit and the harness's timing summary."""
    level = simd_level(simd)["level"]
    threads = threads or hardware_threads()
    probes = make_probes(threads=threads, level=level, trial_seconds=trial_seconds,
                         read_mib=read_mib, read=read)
    timings = time_interleaved({p.key: p.run for p in probes}, warmup=1, trials=trials)
    return [probe_row(p, timings[p.key], level, threads) for p in probes]


def probe_row(probe: Probe, timing, level: str, threads: int) -> dict:
    rate = probe.operations / timing.median
    return {"probe": probe.probe, "precision": probe.precision, "simd": level, "threads": threads,
            "rate": rate, "rate_g": rate / 1e9, "unit": UNITS[probe.probe], **timing.summary()}


def probe_available(probe: str, precision: str, level: str) -> bool:
    """AVX2 has no float64 1/sqrt estimate and the scalar level none at all."""
    if probe != "rsqrt_estimate":
        return True
    return level == "avx512" or (level == "avx2" and precision == "f32")


def rows_from_rates(ceilings: dict[str, float], *, simd: str, threads: int | None) -> list[dict]:
    """Rows for a ceilings dict measured elsewhere (the GPU compute layer)."""
    rows = []
    for key, rate in ceilings.items():
        probe, _, precision = key.rpartition("_") if key != "read" else ("read", "", "")
        rows.append({"probe": probe, "precision": precision, "simd": simd, "threads": threads,
                     "rate": rate, "rate_g": rate / 1e9, "unit": UNITS.get(probe, "")})
    return rows


def measure_device(device: str) -> dict[str, float]:
    """A compute device's rates (imported only when asked for: it may load dpctl or CuPy); the
    device's own description (``device``, ``name``) is left out, so every value is a rate."""
    from ..engine.tuning import ceilings as device_ceilings

    measured = device_ceilings.measure(device)
    return {key: rate for key, rate in measured.items() if key not in ("device", "name")}


def default_read_mib() -> int:
    """Eight times the last-level cache (so caches hardly help), at least 256 MiB."""
    largest = 0
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            text = (index / "size").read_text().strip()
        except OSError:
            continue
        scale = {"K": 1, "M": 1024, "G": 1024 * 1024}.get(text[-1:], None)
        if scale and text[:-1].isdigit():
            largest = max(largest, int(text[:-1]) * scale)
    return max(256, 8 * largest // 1024)


def _calibrate(call, trial_seconds: float) -> int:
    """Rounds per call so that one call takes about ``trial_seconds``."""
    rounds = 1000
    while True:
        start = time.perf_counter()
        call(rounds)
        elapsed = time.perf_counter() - start
        if elapsed >= trial_seconds / 4 or rounds >= 2**40:
            return max(1, int(rounds * trial_seconds / max(elapsed, 1e-9)))
        rounds *= 8
