"""What the benchmarks share beyond the timing protocol (``orrery.engine.tuning.timing``): what
an evaluation of a solver is when timed, the machine a figure was measured on, and the rows
every benchmark returns (dicts), which ``write_rows`` saves as CSV or JSON.
"""

from __future__ import annotations

import csv
import json
import platform
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import numpy as np

from ..engine.solvers import Solver

# Floating-point operations counted per pairwise interaction (the N-body literature's convention).
FLOP_PER_INTERACTION = 20


class TimedEvaluation:
    """What an approximate-solver benchmark times: one force evaluation, resident on the solver's
    device and waited for (a device evaluation queues without waiting: ADR 0162), or through
    the host API (upload, evaluate, download). ``accelerations()`` is the result of the last
    evaluation timed, so that an error reported beside a time is that of the path timed (a
    resident gpu-fmm evaluation is replayed from a CUDA graph, not launched kernel by kernel)."""

    def __init__(self, solver, particles, *, resident: bool):
        self._solver, self._particles = solver, particles
        self._state = solver.bind(particles) if resident else None
        self._host = None

    def __call__(self) -> None:
        if self._state is None:
            self._host = self._solver.accelerations(self._particles.pos, self._particles.mass)
            return
        self._state.compute_accelerations()
        self._state.synchronize()

    def accelerations(self) -> np.ndarray:
        """The last timed evaluation's accelerations, (n, 3) on the host (one more evaluation
        if none was timed)."""
        if self._state is None:
            if self._host is None:
                self()
            return np.asarray(self._host)
        self._state.synchronize()
        return np.asarray(self._state.accelerations())


def one_evaluation(solver, particles, *, resident: bool) -> TimedEvaluation:
    """One force evaluation of ``solver`` as the benchmarks time it (:class:`TimedEvaluation`)."""
    return TimedEvaluation(solver, particles, resident=resident)


def replay_equals_launched(solver, timed: np.ndarray, particles) -> bool | None:
    """Whether ``timed`` (accelerations of evaluations replayed from a graph) equals, bit for bit,
    the same evaluation launched kernel by kernel; None where the last evaluation timed was not
    replayed (the solver replays nothing, or had not captured its graph yet)."""
    if not solver.replay or not solver.last_stats.get("graph"):
        return None
    with launched_one_by_one(solver):
        launched = np.asarray(solver.accelerations(particles.pos, particles.mass))
    return bool(np.array_equal(launched, timed))


@contextmanager
def launched_one_by_one(solver: Solver):
    """Within: ``solver``'s evaluations launched kernel by kernel, so that ``last_stats`` and
    ``launch_times()`` have their stages (gpu-fmm replays planned evaluations from a CUDA graph,
    whose kernels are not timed one by one: the timed trials measure that, the stage times come
    from an evaluation launched within)."""
    replay = solver.replay
    if replay:
        solver.replay = False
    try:
        yield
    finally:
        if replay:
            solver.replay = True


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
