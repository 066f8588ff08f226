"""Time whole solvers over a geometric range of particle counts with the harness's protocol,
under a time budget per solver: what ``orrery calibrate`` and ``orrery bench suite`` measure
the crossovers from, with the timing protocol of :mod:`.timing`.

An evaluation is ``solver.accelerations(pos, mass)`` on a Plummer sphere (by default) with the
solver's default options (approximate solvers at ``auto``'s default accuracy), so a GPU
solver's time includes its host transfers: the cost a caller outside a simulation pays, and an
upper bound on the in-simulation cost.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from ..errors import InvalidInputError
from ..initial_conditions import ics
from ..particles import as_dtype
from ..solvers import make_solver, solver_specs, split_available
from ..solvers.auto import EXCLUDED
from .accuracy_table import DEFAULT_ACCURACY
from .timing import Timing, time_trials


def timed_solvers(requested: Iterable[str] | None = None) -> tuple[list[str], dict[str, str]]:
    """(solvers that can run here, {solver: why not} for the others), ``reference`` and
    ``auto`` excluded; ``requested`` narrows the list (unknown names are an error)."""
    specs = solver_specs()
    # Never timed for crossovers: the solvers auto never picks (the yardstick, auto itself).
    names = [n for n in specs if n not in EXCLUDED]
    if requested is not None:
        requested = list(requested)
        unknown = sorted(set(requested) - set(names))
        if unknown:
            raise InvalidInputError(f"cannot time {unknown}; choose from {names}")
        names = [n for n in names if n in requested]
    return split_available(names)


def geometric_sizes(n_min: int, n_max: int, factor: float = 2.0) -> list[int]:
    """``n_min, n_min*factor, ...`` up to ``n_max`` (inclusive), as integers."""
    if n_min < 2 or n_max < n_min:
        raise InvalidInputError(f"need 2 <= n_min <= n_max, got {n_min} and {n_max}")
    if factor <= 1:
        raise InvalidInputError(f"the size factor must exceed 1, got {factor}")
    count = int(math.floor(math.log(n_max / n_min) / math.log(factor) + 1e-9)) + 1
    return sorted({int(round(n_min * factor ** k)) for k in range(count)})


def solver_kwargs(name: str, precision: str) -> dict:
    """Options to make ``name`` with: the precision when it has one, defaults otherwise."""
    options = {o.name for o in solver_specs()[name].options}
    return {"precision": precision} if "precision" in options else {}


def timing_kwargs(name: str, precision: str) -> dict:
    """Options the crossovers are timed with: :func:`solver_kwargs`, and an approximate solver
    at ``auto``'s default accuracy (the accuracy ``auto`` runs it at)."""
    options = {o.name for o in solver_specs()[name].options}
    return {**solver_kwargs(name, precision),
            **({"accuracy": DEFAULT_ACCURACY} if "accuracy" in options else {})}


@dataclass(frozen=True)
class CurvePoint:
    solver: str
    n: int
    timing: Timing

    def row(self) -> dict:
        return {"solver": self.solver, "n": self.n, **self.timing.summary()}


def measure_curves(solvers: list[str], sizes: list[int], *, precision: str = "f32",
                   ic: str = "plummer", seed: int = 0, warmup: int = 1, trials: int = 5,
                   budget_s: float = 60.0, max_eval_s: float = 1.0, cooldown_s: float = 0.0,
                   on_point: Callable[[CurvePoint | None], None] | None = None,
                   ) -> dict[str, list[CurvePoint]]:
    """Time each solver at each size, in increasing N, until one of its evaluations takes more
    than ``max_eval_s`` or the next size would overrun its ``budget_s`` (seconds, including
    warm-up), predicted from the last two points' slope in log-log (clamped to [1, 2]).

    ``on_point`` is called after every measured point, and with None for every size skipped,
    so a progress bar can count both. ``cooldown_s`` is slept between configurations.
    """
    dtype = as_dtype(precision)
    inputs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    curves: dict[str, list[CurvePoint]] = {}
    for name in solvers:
        solver = make_solver(name, **timing_kwargs(name, precision))
        spent = 0.0
        points: list[CurvePoint] = []
        for index, n in enumerate(sizes):
            if n not in inputs:
                particles = ics.make(ic, n, seed=seed)
                inputs[n] = (particles.pos.astype(dtype), particles.mass.astype(dtype))
            pos, mass = inputs[n]
            start = time.perf_counter()
            timing = time_trials(lambda: solver.accelerations(pos, mass),
                                 warmup=warmup, trials=trials)
            spent += time.perf_counter() - start
            points.append(CurvePoint(name, n, timing))
            if on_point:
                on_point(points[-1])
            if cooldown_s > 0:
                time.sleep(cooldown_s)
            if index + 1 < len(sizes):
                growth = _local_exponent(points)
                predicted = timing.median * (sizes[index + 1] / n) ** growth * (warmup + trials)
                if timing.median > max_eval_s or spent + predicted > budget_s:
                    if on_point:
                        for _ in sizes[index + 1:]:
                            on_point(None)
                    break
        curves[name] = points
    return curves


def _local_exponent(points: list[CurvePoint]) -> float:
    """How time grew with N over the last two points, clamped to [1, 2] (2 with one point)."""
    if len(points) < 2:
        return 2.0
    before, last = points[-2], points[-1]
    if before.timing.median <= 0 or last.timing.median <= 0:
        return 2.0
    slope = math.log(last.timing.median / before.timing.median) / math.log(last.n / before.n)
    return min(2.0, max(1.0, slope))


def as_timing_curves(curves: dict[str, list[CurvePoint]]) -> dict[str, list[tuple[int, float]]]:
    """``{solver: [(N, median seconds), ...]}``, what :func:`find_schedule` reads."""
    return {name: [(p.n, p.timing.median) for p in points] for name, points in curves.items()}
