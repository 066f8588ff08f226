"""``orrery bench suite``: run the benchmark suite with the full protocol (warm-up, medians,
IQR, drift, cool-downs, a canary at both ends) and write a generated report, ``index.md`` plus
PNG plots, to ``docs/report/`` (or ``--out``)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..engine.errors import InvalidInputError
from ..engine.options import Option
from ..engine.tuning.solver_timing import as_timing_curves
from . import BENCHMARKS
from ._options import BenchmarkSpec, several
from .reporting.markdown import ReportWriter
from .reporting.plots import draw_plots, plotting_unavailable
from .reporting.session import full_plan, quick_plan, run_session

HELP = "run every benchmark and write the measured session's report (docs/report/index.md)"


SPEC = BenchmarkSpec("suite", HELP, options=(
    Option("quick", bool, False, "tiny sizes (seconds): shows the report works, for tests and CI"),
    Option("out", str, "docs/report", "folder for index.md and the plots"),
    several(Option("benchmarks", str, None, ""), None,
            "run only these benchmarks (default: all; none: only the report's own solver timings)",
            allow_empty=True),
    Option("cooldown", float, None, "seconds to rest between configurations (default: 2, "
                                    "quick: 0)", minimum=0.0),
    Option("trials", int, None, "timed trials per configuration (default: 7, quick: 3)",
           minimum=1),
    Option("n_max", int, None, "largest N for the solver timings (default: 262144, quick: 512)",
           minimum=2),
))


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
        included = [name for name in BENCHMARKS if name not in ("suite", "report")]
        unknown = sorted(set(args.benchmarks) - set(included))
        if unknown:
            raise InvalidInputError(f"no benchmark(s) {unknown} to include; choose from {included}")
        changes["benchmarks"] = tuple(args.benchmarks)
    return dataclasses.replace(plan, **changes)


def _command(args) -> str:
    parts = ["orrery bench suite"]
    if args.quick:
        parts.append("--quick")
    if args.out != SPEC.option("out").default:
        parts.append(f"--out {args.out}")
    return " ".join(parts)


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
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
