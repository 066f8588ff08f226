"""``orrery bench interchange``: what a GPU solver's force evaluation costs at N bodies, three
ways in (issue 19, ADR 0093):

- ``resident``: the state a Simulation keeps on the device (``bind(...).compute_accelerations``),
  the floor;
- ``device``: ``accelerations(pos, mass)`` with device arrays of the backend's framework (CuPy on
  CUDA, USM arrays on SYCL), results left on the device: goal within 5% of ``resident``;
- ``host``: ``accelerations(pos, mass)`` with NumPy arrays in and out: goal within 1.5x.

Every call is followed by a synchronisation of the solver's device, so a trial is the whole
evaluation. The three paths take turns trial by trial (``time_interleaved``), so load from
elsewhere falls on all of them and the ratios ``host_over_resident`` and
``device_over_resident`` hold.
"""

from __future__ import annotations

from ..app.text_table import format_table
from ..engine import ics, make_solver
from ..engine.options import DEVICE, PRECISION, SOFTENING, Option
from ..engine.tuning.timing import time_interleaved
from ._options import IC, SEED, BenchmarkSpec, several

HELP = "GPU solver: device-resident state vs device arrays vs NumPy arrays in and out"
PATHS = ("resident", "device", "host")
GOALS = {"device": 1.05, "host": 1.5}  # of the resident time (issue 19)
_COLUMNS = ["solver", "precision", "n", "path", "median_s", "iqr_s", "drift", "of_resident", "goal"]


SPEC = BenchmarkSpec("interchange", HELP, options=(
    several(Option("n", int, None, "particle counts", minimum=1), (1_000_000,)),
    Option("solver", str, "gpu-tree", "GPU solver", choices=("gpu-direct", "gpu-tree")),
    PRECISION,
    DEVICE,
    SOFTENING,
    IC,
    SEED,
    Option("trials", int, 20, "timed trials per path", minimum=1),
    Option("warmup", int, 1, "untimed calls per path first", minimum=0),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    solver = make_solver(args.solver, device=args.device, precision=args.precision,
                         softening=args.softening)
    context = solver.context
    rows = []
    for n in args.n:
        particles = ics.make(args.ic, n, seed=args.seed, precision=args.precision)
        state = solver.bind(particles)
        device_pos = context.export(context.upload(particles.pos))
        device_mass = context.export(context.upload(particles.mass))
        calls = {"resident": state.compute_accelerations,
                 "device": lambda: solver.accelerations(device_pos, device_mass),
                 "host": lambda: solver.accelerations(particles.pos, particles.mass)}
        timings = time_interleaved({path: _synchronized(calls[path], context) for path in PATHS},
                                   warmup=args.warmup, trials=args.trials)
        floor = timings["resident"].median
        path_rows = [{"table": "interchange", "solver": args.solver, "device": context.info.spec,
                      "device_name": context.info.name, "precision": args.precision, "n": n,
                      "path": path, **timing.summary(), "of_resident": timing.median / floor,
                      "goal": GOALS.get(path, "")}
                     for path, timing in timings.items()]
        print(f"\n{args.solver} on {context.info.spec} ({context.info.name}), N = {n:,}, "
              f"{args.precision}, {args.ic}")
        print(format_table(path_rows, _COLUMNS))
        rows += path_rows
        rows.append({"table": "ratios", "solver": args.solver, "device": context.info.spec,
                     "precision": args.precision, "n": n,
                     "host_over_resident": timings["host"].median / floor,
                     "device_over_resident": timings["device"].median / floor})
    print("(the machine may be shared: ratios measured in one run are the figures to quote)")
    return rows


def _synchronized(call, context):
    """``call`` and a wait for the device, so that a trial times the evaluation, not its launch."""
    def timed():
        call()
        context.synchronize()
    return timed
