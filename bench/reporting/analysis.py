"""Figures derived from measured rows: fitted scaling exponents, GPU against CPU ratios, the
winner at each size, and interaction rates. Pure functions of rows, no timing."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np

from ..harness import FLOP_PER_INTERACTION

# Columns a benchmark's rows may use for the particle count, the time and the series label.
_SIZE_COLUMNS = ("n", "N", "particles")
_TIME_COLUMNS = ("median_s", "seconds", "time_s")
_LABEL_COLUMNS = ("solver", "kernel", "variant", "name", "config", "backend")


def fit_exponent(points: Iterable[tuple[float, float]]) -> float | None:
    """Least-squares slope of log(time) against log(N): the ``b`` in time ∝ N^b. None with
    fewer than two distinct N."""
    pairs = [(n, t) for n, t in points if n > 0 and t > 0 and math.isfinite(t)]
    if len({n for n, _ in pairs}) < 2:
        return None
    x = np.log([n for n, _ in pairs])
    y = np.log([t for _, t in pairs])
    return float(np.polyfit(x, y, 1)[0])


def scaling_exponents(curves: dict[str, list[tuple[int, float]]], *,
                      from_n: int = 1024) -> dict[str, tuple[float | None, int]]:
    """``{solver: (exponent, points used)}`` fitted over N >= ``from_n`` where at least three
    such points exist (the asymptotic range), else over every point."""
    result = {}
    for name, points in curves.items():
        large = [p for p in points if p[0] >= from_n]
        used = large if len(large) >= 3 else list(points)
        result[name] = (fit_exponent(used), len(used))
    return result


def series_from_rows(rows: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """``{label: [(N, seconds), ...]}`` when rows carry a size and a time column (any benchmark
    that reports per-size timings), else empty."""
    if not rows:
        return {}
    size = next((c for c in _SIZE_COLUMNS if all(c in r for r in rows)), None)
    seconds = next((c for c in _TIME_COLUMNS if all(c in r for r in rows)), None)
    if size is None or seconds is None:
        return {}
    labels = [c for c in _LABEL_COLUMNS if any(c in r for r in rows)]
    series: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        try:
            n, t = float(row[size]), float(row[seconds])
        except (TypeError, ValueError):
            continue
        label = " ".join(str(row[c]) for c in labels if row.get(c) not in (None, "")) or "all"
        series.setdefault(label, []).append((n, t))
    return series


def timing_grid(curves: dict[str, list[tuple[int, float]]]) -> tuple[list[int], dict]:
    """(every measured N in order, {solver: {N: seconds}})."""
    sizes = sorted({n for points in curves.values() for n, _ in points})
    return sizes, {name: dict(points) for name, points in curves.items()}


def gpu_versus_cpu(curves: dict[str, list[tuple[int, float]]], kinds: dict[str, str]) -> list[dict]:
    """For each GPU solver and N: its time, the fastest CPU solver's, and their ratio
    (``kinds``: each solver's ``SolverSpec.kind``)."""
    sizes, by_name = timing_grid(curves)
    gpus = [n for n in curves if kinds[n] == "gpu"]
    cpus = [n for n in curves if kinds[n] != "gpu"]
    rows = []
    for gpu in gpus:
        for n in sizes:
            cpu_times = {c: by_name[c][n] for c in cpus if n in by_name[c]}
            if n not in by_name[gpu] or not cpu_times:
                continue
            best_cpu = min(cpu_times, key=cpu_times.get)
            rows.append({"gpu solver": gpu, "N": n, "gpu ms": by_name[gpu][n] * 1e3,
                         "fastest cpu": best_cpu, "cpu ms": cpu_times[best_cpu] * 1e3,
                         "speed-up": cpu_times[best_cpu] / by_name[gpu][n]})
    return rows


def winners(curves: dict[str, list[tuple[int, float]]]) -> list[dict]:
    """The fastest measured solver at each N, and how much slower the runner-up was."""
    sizes, by_name = timing_grid(curves)
    rows = []
    for n in sizes:
        times = sorted((by_name[s][n], s) for s in curves if n in by_name[s])
        row = {"N": n, "fastest": times[0][1], "ms": times[0][0] * 1e3}
        if len(times) > 1:
            row["runner-up"] = times[1][1]
            row["runner-up slower by"] = times[1][0] / times[0][0]
        rows.append(row)
    return rows


def direct_rates(points: list[tuple[int, float]]) -> list[dict]:
    """Interactions per second and Gflop/s (20 flop per interaction) of a direct solver."""
    return [{"N": n, "ms": t * 1e3, "G interactions/s": n * (n - 1) / t / 1e9,
             "Gflop/s": FLOP_PER_INTERACTION * n * (n - 1) / t / 1e9} for n, t in points]
