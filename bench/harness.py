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
