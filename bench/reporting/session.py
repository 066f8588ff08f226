"""One report session: the measuring protocol from start to end.

1. A canary (one fixed small ``cpu-direct`` evaluation, N = 1024, f32) is timed first.
2. Each benchmark module in ``BENCHMARKS`` is called (``run(**options)``) with its defaults,
   plus ``quick=True`` in quick mode and ``peers=True`` when a peer package is installed, where
   its options table has them (in quick mode one without ``quick`` is skipped); a cool-down
   follows each.
3. The report's own measurements: every available solver over a geometric range of N (the
   same code as ``orrery calibrate``), then accuracy against cost at one N.
4. The canary again: if it moved, the machine changed speed during the session.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np

from ...engine import ics
from ...engine.accuracy import max_relative_error, rms_relative_error
from ...engine.options import SOFTENING
from ...engine.solvers import make_solver, solver_specs
from ...engine.tuning.solver_timing import (CurvePoint, geometric_sizes, measure_curves,
                                            solver_kwargs, timed_solvers)
from ...engine.tuning.timing import Timing, time_trials
from .. import BENCHMARKS
from ..harness import machine_description

CANARY_N = 1024
PEER_PACKAGES = ("pytreegrav", "rebound")
REPORTS = ("suite", "report")  # the modules that measure nothing of their own or run the others


@dataclass(frozen=True)
class Plan:
    """Sizes and repetitions of one session (see :func:`quick_plan` and :func:`full_plan`)."""

    quick: bool
    sizes: tuple[int, ...]
    warmup: int
    trials: int
    budget_s: float
    max_eval_s: float
    cooldown_s: float
    accuracy_n: int
    thetas: tuple[float, ...]
    benchmarks: tuple[str, ...] | None = None  # None: every registered one


def quick_plan(**overrides) -> Plan:
    """Tiny sizes: seconds, for tests and CI; the numbers only show the report works."""
    return Plan(quick=True, sizes=tuple(geometric_sizes(64, 512)), warmup=1, trials=3,
                budget_s=5.0, max_eval_s=0.5, cooldown_s=0.0, accuracy_n=256,
                thetas=(0.3, 0.5, 0.8), **overrides)


def full_plan(**overrides) -> Plan:
    """Sizes for a real report: up to 262,144 particles as each solver's budget allows."""
    return Plan(quick=False, sizes=tuple(geometric_sizes(256, 262_144)), warmup=2, trials=7,
                budget_s=180.0, max_eval_s=2.0, cooldown_s=2.0, accuracy_n=16_384,
                thetas=(0.2, 0.3, 0.5, 0.7, 1.0), **overrides)


@dataclass
class BenchmarkResult:
    name: str
    command: str
    rows: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    skipped: str | None = None  # why it did not run
    failed: str | None = None  # the error it stopped with


@dataclass
class Session:
    plan: Plan
    started: str
    machine: dict
    load_start: tuple[float, float, float] | None
    canary_start: Timing | None = None
    canary_end: Timing | None = None
    load_end: tuple[float, float, float] | None = None
    finished: str = ""
    benchmarks: list[BenchmarkResult] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    curves: dict[str, list[CurvePoint]] = field(default_factory=dict)
    accuracy: list[dict] = field(default_factory=list)
    peers: tuple[str, ...] = ()

    @property
    def canary_drift(self) -> float | None:
        """End-of-session canary median over the start one, minus one."""
        if not (self.canary_start and self.canary_end):
            return None
        return self.canary_end.median / self.canary_start.median - 1.0


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _load() -> tuple[float, float, float] | None:
    return os.getloadavg() if hasattr(os, "getloadavg") else None


def _log(message: str) -> None:
    print(f"[report] {message}", file=sys.stderr, flush=True)


def run_session(plan: Plan) -> Session:
    """Measure everything the report shows, following the protocol in the module docstring."""
    session = Session(plan=plan, started=_now(), machine=_machine(), load_start=_load(),
                      peers=tuple(p for p in PEER_PACKAGES if importlib.util.find_spec(p)))
    _log("canary (start)")
    session.canary_start = _canary()
    for name in BENCHMARKS:
        if name in REPORTS or (plan.benchmarks is not None and name not in plan.benchmarks):
            continue
        session.benchmarks.append(_run_benchmark(name, plan, session.peers))
        _cool_down(plan)
    solvers, session.unavailable = timed_solvers()
    _log(f"timing solvers {solvers} at N = {list(plan.sizes)}")
    session.curves = measure_curves(solvers, list(plan.sizes), warmup=plan.warmup,
                                    trials=plan.trials, budget_s=plan.budget_s,
                                    max_eval_s=plan.max_eval_s, cooldown_s=plan.cooldown_s)
    _log(f"accuracy against cost at N = {plan.accuracy_n}")
    session.accuracy = _accuracy_versus_cost(solvers, plan)
    _log("canary (end)")
    session.canary_end = _canary()
    session.load_end = _load()
    session.finished = _now()
    return session


def _machine() -> dict:
    from ...engine.tuning.calibration import device_key, machine_key
    from ...engine.cpu_features import build_info

    return {**machine_description(), **machine_key(), **device_key(),
            "system": f"{platform.system()} {platform.release()}", "build": build_info()}


def _canary() -> Timing:
    particles = ics.plummer(CANARY_N, seed=0)
    solver = make_solver("cpu-direct", precision="f32")
    pos, mass = particles.pos.astype(np.float32), particles.mass.astype(np.float32)
    return time_trials(lambda: solver.accelerations(pos, mass), warmup=3, trials=15)


def _cool_down(plan: Plan) -> None:
    if plan.cooldown_s > 0:
        time.sleep(plan.cooldown_s)


def _run_benchmark(name: str, plan: Plan, peers: tuple[str, ...]) -> BenchmarkResult:
    module = importlib.import_module(f"..{name}", __package__)
    spec = module.SPEC
    wanted = {**({"quick": True} if plan.quick else {}), **({"peers": True} if peers else {})}
    options = {key: value for key, value in wanted.items() if spec.has(key)}
    result = BenchmarkResult(name, spec.command(options))
    if plan.quick and not spec.has("quick"):
        result.skipped = "it has no --quick option; a full report (without --quick) runs it"
        return result
    _log(f"benchmark: {result.command}")
    start = time.perf_counter()
    try:
        result.rows = list(module.run(**options) or [])
    # One failing benchmark (a missing device, a driver error) must not lose the rest of the
    # session: the report says which one failed and why.
    except Exception as error:  # noqa: BLE001
        result.failed = f"{type(error).__name__}: {error}"
    result.seconds = time.perf_counter() - start
    return result


def _accuracy_versus_cost(solvers: list[str], plan: Plan) -> list[dict]:
    """Each solver at its default options and, for those with an opening angle, at each θ (and
    with quadrupoles when offered): time and error against ``reference`` at one N."""
    particles = ics.plummer(plan.accuracy_n, seed=1)
    specs = solver_specs()
    exact = make_solver("reference", softening=SOFTENING.default).accelerations(particles.pos,
                                                                                 particles.mass)
    rows = []
    for name in solvers:
        options = {o.name for o in specs[name].options}
        variants = [{}]
        if "theta" in options:
            quadrupoles = (False, True) if "quadrupole" in options else (None,)
            variants = [{"theta": theta, **({} if q is None else {"quadrupole": q})}
                        for theta in plan.thetas for q in quadrupoles]
        for variant in variants:
            solver = make_solver(name, **solver_kwargs(name, "f32"), **variant)
            pos = particles.pos.astype(solver.dtype)
            mass = particles.mass.astype(solver.dtype)
            timing = time_trials(lambda: solver.accelerations(pos, mass), warmup=plan.warmup,
                                 trials=plan.trials)
            approx = solver.accelerations(pos, mass)
            rows.append({"solver": name,
                         "options": ", ".join(f"{k}={v}" for k, v in variant.items()) or "defaults",
                         "N": plan.accuracy_n, "median ms": timing.median * 1e3,
                         "iqr ms": timing.iqr * 1e3, "rms error": rms_relative_error(approx, exact),
                         "max error": max_relative_error(approx, exact)})
            _cool_down(plan)
    return rows
