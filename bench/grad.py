"""``orrery bench grad``: the time of a whole run's gradient (``engine/gradients.py``: K
reversible steps forward, then the backward pass that reconstructs each step and carries the
adjoint back) against K reversible steps forward alone, taking turns in the same run.

Rows: ``forward_s`` and ``gradient_s`` (medians, with interquartile ranges), their ratio
``grad_over_forward``, ``memory_over_forward`` (the peak of host memory allocated through Python
during one untimed gradient over that of one untimed forward run, by ``tracemalloc``: native
buffers the solvers allocate themselves are not seen); where the run keeps its state on a
GPU solver's device (gpu-direct, gpu-fmm: ``engine/solvers/_device_lattice.py``) also ``device``,
``forward_device_bytes`` and ``gradient_device_bytes`` (peak bytes of the device arrays
allocated during one untimed forward run and one untimed gradient, each on a new solver so that
its tree, lists, expansions and VJP arrays are counted, as the compute layer counts them,
``engine/compute/_memory.py``) and their ratio ``device_memory_over_forward``;
``reversible`` (the backward pass came back to the initial lattice state
bit for bit); with ``--against-direct``, ``direct_error``: the largest difference of the
gradient from cpu-direct's float64 gradient of the same run (the same bodies, steps and
lattice) over the largest component of that one, the worst of positions, velocities and
masses; and, with ``--check``, ``fd_error``: over ``--check-samples`` coordinates of each of
the initial positions, velocities and masses (chosen at random, fixed by ``--seed``), the
largest relative error |gradient - difference| / |difference| against five-point central
differences, every perturbed run on the same lattice. The loss is linear in the final state
with random weights (``L = sum c . x_K + u . v_K``).

The differences' steps: a loss summed over thousands of particles carries round-off of about
1e-13, which a two-point difference with small steps turns into errors above 1e-6 (a mass's
relative step of 1e-5 moves the loss by only ~1e-9 at N = 2048); the five-point stencil's
error falls as the fourth power of the step, so it can take steps large enough to leave that
noise far below: 3e-4 for positions and velocities, a tenth of the mass for masses (the run is
smooth in each).
"""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import numpy as np

from ..app.text_table import format_table
from ..engine import Particles, ics, make_solver
from ..engine.errors import UnknownSolverError
from ..engine.gradients import ReversibleRun, run_gradient, runs_on_device
from ..engine.solvers import solver_specs
from ..engine.options import ACCURACY, PRECISION, Option
from ..engine.tuning.timing import time_interleaved
from ._options import SOLVER_RUN, BenchmarkSpec, several

HELP = "gradient of a whole reversible run against the forward run: time ratio, reversibility, error"

COLUMNS = ["solver", "precision", "n", "steps", "accuracy", "theta", "order", "heavy_share",
           "threads", "device", "forward_s", "gradient_s", "grad_over_forward", "forward_iqr_s",
           "gradient_iqr_s",
           "memory_over_forward", "forward_device_bytes", "gradient_device_bytes",
           "device_memory_over_forward", "reversible", "direct_error", "fd_error"]

POSITION_STEP = 3e-4  # positions and velocities, absolute
MASS_STEP = 0.1  # relative

SPEC = BenchmarkSpec("grad", HELP, options=(
    several(Option("n", int, None, "particle counts", minimum=2), (2048,)),
    Option("steps", int, 10, "steps K of the run", minimum=1),
    Option("dt", float, 1e-3, "time step", minimum=0.0, exclusive_minimum=True),
    Option("solver", str, "cpu-direct", "a solver with a force VJP: cpu-direct, reference, "
                                        "gpu-direct, cpu-tree (monopole cells), cpu-fmm or "
                                        "gpu-fmm"),
    several(replace(PRECISION, default="f64"), ("f64",)),
    Option("theta", float, None, "opening angle of a tree or FMM solver (default: its own)",
           minimum=0.0),
    ACCURACY,
    several(Option("order", int, None, "expansion orders of an FMM solver, a row each "
                                       "(default: its own)", minimum=1), None),
    *SOLVER_RUN,
    Option("trials", int, 5, "timed trials", minimum=1),
    Option("warmup", int, 1, "untimed warm-up runs", minimum=0),
    Option("against_direct", bool, False, "also measure direct_error against cpu-direct's "
                                          "float64 gradient of the same run"),
    Option("check", bool, False, "also measure fd_error against central differences"),
    Option("check_samples", int, 4, "coordinates of each of pos, vel and mass that --check "
                                    "differences", minimum=1),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    if args.solver not in solver_specs():
        raise UnknownSolverError(f"unknown solver {args.solver!r}; choose one of "
                                 f"{sorted(solver_specs())}")
    rows = []
    for n in args.n:
        particles = ics.make(args.ic, n, seed=args.seed)
        for precision in args.precision:
            for order in args.order or (None,):
                options = _solver_options(args, precision, order)
                rows.append(_measure(args, lambda: make_solver(args.solver, **options), particles))
    print(format_table(rows, [c for c in COLUMNS if any(c in r for r in rows)]))
    return rows


def _measure(args, make, particles) -> dict:
    """The row of one setting; ``make()`` builds its solver."""
    solver = make()
    rng = np.random.default_rng(args.seed)
    weights = rng.normal(size=(2, particles.n, 3))
    lattice = ReversibleRun(particles, solver, dt=args.dt, steps=0).lattice
    results = {}

    def loss_grad(pos, vel, mass):
        return float(np.sum(weights[0] * pos) + np.sum(weights[1] * vel)), weights[0], weights[1]

    def forward(on=solver):
        ReversibleRun(particles, on, dt=args.dt, steps=args.steps, lattice=lattice)

    def gradient(on=solver):
        results["gradient"] = run_gradient(particles, on, dt=args.dt, steps=args.steps,
                                           loss_grad=loss_grad, lattice=lattice)

    timings = time_interleaved({"forward": forward, "gradient": gradient},
                               warmup=args.warmup, trials=args.trials)
    row = {"solver": solver.name, "precision": solver.precision, "n": particles.n,
           "steps": args.steps, "threads": solver.last_stats.get("threads"),
           **({"accuracy": args.accuracy} if args.accuracy is not None else {}),
           **_setting(solver, particles.n),
           "forward_s": timings["forward"].median, "forward_iqr_s": timings["forward"].iqr,
           "gradient_s": timings["gradient"].median, "gradient_iqr_s": timings["gradient"].iqr,
           "grad_over_forward": timings["gradient"].median / timings["forward"].median,
           "memory_over_forward": _peak_memory(gradient) / _peak_memory(forward),
           "reversible": results["gradient"].reversible}
    if runs_on_device(solver):
        row["device"] = solver.context.info.spec
        # Each on a solver of its own, so that the solver's working arrays (its tree, lists and
        # expansions, the VJP's cotangents) count with the run's, as a process running it alone
        # holds them: the timed solver already holds them, and would count the run's alone.
        row["forward_device_bytes"] = _peak_device_memory(make(), forward)
        row["gradient_device_bytes"] = _peak_device_memory(make(), gradient)
        row["device_memory_over_forward"] = (row["gradient_device_bytes"]
                                             / row["forward_device_bytes"])
    if args.against_direct:
        direct = make_solver("cpu-direct", precision="f64", softening=solver.softening,
                             threads=args.threads)
        exact = run_gradient(particles, direct, dt=args.dt, steps=args.steps,
                             loss_grad=loss_grad, lattice=lattice)
        row["direct_error"] = max(
            float(np.abs(got - want).max() / np.abs(want).max())
            for got, want in zip((results["gradient"].pos, results["gradient"].vel,
                                  results["gradient"].mass), (exact.pos, exact.vel, exact.mass)))
    if args.check:
        row["fd_error"] = _fd_error(args, solver, particles, lattice, loss_grad,
                                    results["gradient"], rng)
    return row


def _setting(solver, n: int) -> dict:
    """The theta and variant (an FMM's order, a heavy share) of an evaluation of ``n`` bodies,
    given or chosen for accuracy=: read from the solver's setting, since a run on a device
    lattice records no stats."""
    if solver.setting is None:
        return {}
    return {"theta": solver.theta_in_use(n), **solver.setting.variant(n)}


def _peak_memory(fn) -> int:
    """Peak bytes allocated through Python's allocators while ``fn()`` runs."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _peak_device_memory(solver, fn) -> int:
    """Peak bytes of the device arrays allocated while ``fn(solver)`` runs, as the compute layer
    counts them (``Context.memory``)."""
    with solver.context.memory.measure() as usage:
        fn(solver)
    return usage.peak


def _fd_error(args, solver, particles, lattice, loss_grad, gradient, rng) -> float:
    """The largest relative error of the gradient against five-point central differences over
    sampled coordinates of each of pos, vel and mass."""
    state = (particles.pos.astype(np.float64), particles.vel.astype(np.float64),
             particles.mass.astype(np.float64))
    worst = 0.0
    for which, grad in enumerate((gradient.pos, gradient.vel, gradient.mass)):
        flat = rng.choice(grad.size, size=min(args.check_samples, grad.size), replace=False)
        for index in (np.unravel_index(i, grad.shape) for i in flat):
            step = MASS_STEP * state[2][index] if which == 2 else POSITION_STEP
            if step == 0:  # a massless particle: no relative step keeps its mass positive
                continue
            loss = {}
            for multiple in (-2, -1, 1, 2):
                moved = [a.copy() for a in state]
                moved[which][index] += multiple * step
                run = ReversibleRun(Particles(*moved), solver, dt=args.dt, steps=args.steps,
                                    lattice=lattice)
                loss[multiple] = loss_grad(run.positions, run.velocities, run.mass)[0]
            difference = (8 * (loss[1] - loss[-1]) - (loss[2] - loss[-2])) / (12 * step)
            error = abs(grad[index] - difference)
            worst = max(worst, error / abs(difference) if difference != 0 else error)
    return worst


def _solver_options(args, precision: str, order: int | None) -> dict:
    known = {o.name for o in solver_specs()[args.solver].options}
    options = {"precision": precision, "softening": args.softening, "threads": args.threads,
               "simd": args.simd, "device": args.device, "theta": args.theta,
               "accuracy": args.accuracy, "order": order}
    return {k: v for k, v in options.items() if k in known and v is not None}
