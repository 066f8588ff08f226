"""The timing protocol every measurement uses, ``orrery calibrate`` and the benchmarks alike:
warm-up trials discarded, several timed trials, the median reported with the interquartile
range beside it, and a drift figure (median of the second half of the trials over the first)
that shows a machine changing speed under load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np


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
