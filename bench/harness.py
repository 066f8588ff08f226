"""The timing protocol every benchmark uses: warm-up trials discarded, several timed trials,
the median reported with the interquartile range beside it, and a drift figure (median of the
second half of the trials over the first) that shows a machine changing speed under load.

Benchmarks return rows (dicts); ``write_rows`` saves them as CSV or JSON.
"""

from __future__ import annotations

import csv
import json
import platform
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

# Floating-point operations counted per pairwise interaction (the N-body literature's convention).
FLOP_PER_INTERACTION = 20


def one_evaluation(solver, particles, *, resident: bool) -> Callable[[], None]:
    """What an approximate-solver benchmark times: one force evaluation, resident on the solver's
    device and waited for (a device evaluation queues without waiting: ADR 0162), or through
    the host API (upload, evaluate, download)."""
    if resident:
        state = solver.bind(particles)

        def evaluate():
            state.compute_accelerations()
            state.synchronize()
        return evaluate
    return lambda: solver.accelerations(particles.pos, particles.mass)


@contextmanager
def launched_one_by_one(solver):
    """Within: ``solver``'s evaluations launched kernel by kernel, so that ``last_stats`` and
    ``launch_times()`` have their stages (gpu-fmm replays planned evaluations from a CUDA graph,
    whose kernels are not timed one by one: the timed trials measure that, the stage times come
    from an evaluation launched within)."""
    replay = getattr(solver, "replay", False)
    if replay:
        solver.replay = False
    try:
        yield
    finally:
        if replay:
            solver.replay = True


@dataclass(frozen=True)
class Timing:
    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return float(np.median(self.samples))

    @property
    def iqr(self) -> float:
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q3 - q1)

    @property
    def relative_iqr(self) -> float:
        return self.iqr / self.median if self.median > 0 else float("nan")

    @property
    def drift(self) -> float:
        """Median of the second half of the trials over the first, minus one."""
        half = len(self.samples) // 2
        if half == 0:
            return 0.0
        first = np.median(self.samples[:half])
        second = np.median(self.samples[-half:])
        return float(second / first - 1.0) if first > 0 else float("nan")

    def summary(self) -> dict:
        return {"median_s": self.median, "iqr_s": self.iqr, "drift": self.drift,
                "trials": len(self.samples)}


def time_trials(fn: Callable[[], object], *, warmup: int = 2, trials: int = 7,
                timer: Callable[[], float] = time.perf_counter) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then ``trials`` times timed."""
    if trials < 1:
        raise ValueError("at least one timed trial is needed")
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(trials):
        start = timer()
        fn()
        samples.append(timer() - start)
    return Timing(tuple(samples))


def time_interleaved(fns: dict[str, Callable[[], object]], *, warmup: int = 2, trials: int = 7,
                     timer: Callable[[], float] = time.perf_counter) -> dict[str, Timing]:
    """Like :func:`time_trials` for several contenders, taking turns trial by trial, so that
    outside load changing during a run falls on all of them alike and their ratios hold."""
    if trials < 1:
        raise ValueError("at least one timed trial is needed")
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(trials):
        for name, fn in fns.items():
            start = timer()
            fn()
            samples[name].append(timer() - start)
    return {name: Timing(tuple(values)) for name, values in samples.items()}


def machine_description() -> dict:
    from ..engine.cpu_features import hardware_threads

    return {"machine": platform.machine(), "processor": platform.processor(),
            "python": platform.python_version(), "threads": hardware_threads()}


def write_rows(rows: list[dict], path: str | Path, *, meta: dict | None = None) -> None:
    """Save benchmark rows: ``.json`` gets ``{"meta": ..., "rows": [...]}``, anything else CSV."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        payload = {"meta": {**machine_description(), **(meta or {})}, "rows": rows}
        path.write_text(json.dumps(payload, indent=2, default=_jsonable))
        return
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _jsonable(value):
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def format_table(rows: list[dict], columns: list[str]) -> str:
    """A plain aligned text table of the given columns (floats to 4 significant digits)."""
    def cell(value):
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)
    cells = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
