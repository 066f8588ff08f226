"""``orrery calibrate``: time every solver that can run here over a geometric range of particle
counts, find where each is fastest, and store the crossovers for the ``auto`` solver."""

from __future__ import annotations

import sys

from tqdm import tqdm

from ...engine import ics
from ...bench.harness import format_table
from ...bench.solver_timing import (as_timing_curves, geometric_sizes, measure_curves,
                                           solver_kwargs, timed_solvers)
from ...engine.calibration import Calibration, check_cache_writable, save_calibration
from ._arg_types import integer, number


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="measure solver crossovers on this machine for `auto`",
        description="Time each available solver (at its default accuracy) over a geometric "
                    "range of particle counts, find which is fastest where, and store the "
                    "crossovers in the cache directory for the `auto` solver.")
    parser.add_argument("--n-min", type=integer(minimum=2), default=256, help="smallest N (default: 256)")
    parser.add_argument("--n-max", type=integer(minimum=2), default=262_144,
                        help="largest N, if the budget allows (default: 262144)")
    parser.add_argument("--factor", type=number(above=1), default=2.0,
                        help="ratio between consecutive sizes (default: 2)")
    parser.add_argument("--budget", type=number(at_least=0), default=60.0,
                        help="seconds each solver may spend in total (default: 60)")
    parser.add_argument("--max-eval", type=number(at_least=0), default=1.0,
                        help="stop growing N for a solver once one evaluation takes longer "
                             "(seconds, default: 1)")
    parser.add_argument("--trials", type=integer(minimum=1), default=5,
                        help="timed trials per size (default: 5)")
    parser.add_argument("--warmup", type=integer(minimum=0), default=1,
                        help="untimed trials first (default: 1)")
    parser.add_argument("--precision", default="f32", choices=("f32", "f64"),
                        help="precision to calibrate (default: f32; `auto` uses the one it runs at)")
    parser.add_argument("--solvers", nargs="+", metavar="NAME",
                        help="time only these solvers (default: every available one)")
    parser.add_argument("--ic", default="plummer", choices=sorted(ics.GENERATORS),
                        help="initial conditions timed (default: plummer)")
    parser.add_argument("--seed", type=integer(minimum=0), default=0,
                        help="random seed of the initial conditions")
    parser.add_argument("--dry-run", action="store_true",
                        help="measure and print, but do not store the result")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run)


def run(args) -> int:
    if not args.dry_run:
        check_cache_writable()  # before measuring for the whole budget
    solvers, unavailable = timed_solvers(args.solvers)
    for name, reason in unavailable.items():
        print(f"skipping {name}: {reason}", file=sys.stderr)
    sizes = geometric_sizes(args.n_min, args.n_max, args.factor)
    if not solvers:
        print("orrery calibrate: no solver can run here", file=sys.stderr)
        return 1
    with tqdm(total=len(solvers) * len(sizes), unit="size", disable=args.quiet, file=sys.stderr,
              dynamic_ncols=True) as bar:
        def advance(point):
            if point is not None:
                bar.set_postfix_str(f"{point.solver} N={point.n:,} "
                                    f"{point.timing.median * 1e3:.3g} ms")
            bar.update(1)

        curves = measure_curves(solvers, sizes, precision=args.precision, ic=args.ic,
                                seed=args.seed, warmup=args.warmup, trials=args.trials,
                                budget_s=args.budget, max_eval_s=args.max_eval, on_point=advance)
    settings = {"ic": args.ic, "seed": args.seed, "trials": args.trials, "warmup": args.warmup,
                "options": {name: solver_kwargs(name, args.precision) for name in solvers},
                "note": "every solver at its default accuracy options (trees: default theta)"}
    calibration = Calibration(precision=args.precision, curves=as_timing_curves(curves),
                              settings=settings)
    print(_timing_table(curves, sizes))
    schedule = calibration.schedule()
    print(f"\nFastest here ({args.precision}): {schedule.describe()}.")
    if args.dry_run:
        print("Not stored (--dry-run).")
    else:
        print(f"Stored in {save_calibration(calibration)}; `auto` uses it from now on.")
    return 0


def _timing_table(curves, sizes) -> str:
    rows = []
    for n in sizes:
        row = {"N": n}
        for name, points in curves.items():
            point = next((p for p in points if p.n == n), None)
            row[f"{name} ms"] = "-" if point is None else \
                f"{point.timing.median * 1e3:.4g} ±{point.timing.iqr * 1e3:.2g}"
        rows.append(row)
    return format_table(rows, ["N"] + [f"{name} ms" for name in curves])
