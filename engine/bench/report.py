"""``orrery bench report``: run the benchmark suite with the full protocol (warm-up, medians,
IQR, drift, cool-downs, a canary at both ends) and write a generated report, ``index.md`` plus
PNG plots, to ``docs/report/`` (or ``--out``)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..errors import InvalidInputError
from . import BENCHMARKS
from .reporting.markdown import ReportWriter
from .reporting.plots import draw_plots, plotting_unavailable
from .reporting.session import full_plan, quick_plan, run_session
from .solver_timing import as_timing_curves

HELP = "run every benchmark and write the performance report (docs/report/index.md)"


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (seconds): shows the report works, for tests and CI")
    parser.add_argument("--out", default="docs/report",
                        help="folder for index.md and the plots (default: docs/report)")
    parser.add_argument("--benchmarks", nargs="*", metavar="KIND",
                        help="run only these benchmarks (default: all; none: only the "
                             "report's own solver timings)")
    parser.add_argument("--cooldown", type=float,
                        help="seconds to rest between configurations (default: 2, quick: 0)")
    parser.add_argument("--trials", type=int,
                        help="timed trials per configuration (default: 7, quick: 3)")
    parser.add_argument("--n-max", type=int,
                        help="largest N for the solver timings (default: 262144, quick: 512)")


def _plan(args):
    plan = quick_plan() if args.quick else full_plan()
    changes = {}
    if args.cooldown is not None:
        changes["cooldown_s"] = args.cooldown
    if args.trials is not None:
        changes["trials"] = args.trials
    if args.n_max is not None:
        changes["sizes"] = tuple(n for n in plan.sizes if n <= args.n_max) or plan.sizes[:1]
    if args.benchmarks is not None:
        included = [name for name in BENCHMARKS if name != "report"]
        unknown = sorted(set(args.benchmarks) - set(included))
        if unknown:
            raise InvalidInputError(f"no benchmark(s) {unknown} to include; choose from {included}")
        changes["benchmarks"] = tuple(args.benchmarks)
    return dataclasses.replace(plan, **changes)


def _command(args) -> str:
    parts = ["orrery bench report"]
    if args.quick:
        parts.append("--quick")
    if args.out != "docs/report":
        parts.append(f"--out {args.out}")
    return " ".join(parts)


def run(args) -> list[dict]:
    session = run_session(_plan(args))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figures = draw_plots(session, as_timing_curves(session.curves), out)
    path = ReportWriter(session, figures, plotting_unavailable(), _command(args)).write(out)
    print(f"report written to {path}" + (f" with {len(figures)} plots" if figures else
                                         f" without plots: {plotting_unavailable()}"),
          file=sys.stderr)
    rows = [{"section": "solver timing", **point.row()}
            for points in session.curves.values() for point in points]
    rows += [{"section": "accuracy", **row} for row in session.accuracy]
    return rows
