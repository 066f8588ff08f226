"""``orrery calibrate``: time every solver that can run here over a geometric range of particle
counts, find where each is fastest, and store the crossovers for the ``auto`` solver; with
``--accuracy``, measure the accuracy table instead (each approximate solver's RMS and
90th-percentile force error at each theta on every shipped scenario), which ``accuracy=``
chooses theta from."""

from __future__ import annotations

import sys
from pathlib import Path

from tqdm import tqdm

from ...engine import ics
from ...engine.contracts import AccuracyCalibrated
from ...engine.errors import InvalidInputError
from ...engine.solvers import solver_specs, split_available
from ...engine.tuning import accuracy_table
from ...engine.tuning.calibration import Calibration, check_cache_writable, save_calibration
from ...engine.tuning.solver_timing import (as_timing_curves, geometric_sizes, measure_curves,
                                           timed_solvers, timing_kwargs)
from ..command_line import integer, number, output_file
from ..text_table import format_table


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="measure solver crossovers on this machine for `auto`",
        description="Time each available solver (approximate ones at auto's default accuracy, "
                    "1e-3) over a geometric range of particle counts, find which is fastest "
                    "where, and store the crossovers in the cache directory for the `auto` "
                    "solver. With --accuracy, measure the accuracy table instead.")
    # Options of one mode only default to None, so that one given in the other mode is
    # refused instead of ignored (_check_mode); their defaults are TIMING_DEFAULTS.
    parser.add_argument("--n-min", type=integer(minimum=2), help="smallest N (default: 256)")
    parser.add_argument("--n-max", type=integer(minimum=2),
                        help="largest N, if the budget allows (default: 262144)")
    parser.add_argument("--factor", type=number(above=1),
                        help="ratio between consecutive sizes (default: 2)")
    parser.add_argument("--budget", type=number(at_least=0),
                        help="seconds each solver may spend in total (default: 60)")
    parser.add_argument("--max-eval", type=number(at_least=0),
                        help="stop growing N for a solver once one evaluation takes longer "
                             "(seconds, default: 1)")
    parser.add_argument("--trials", type=integer(minimum=1, maximum=MAX_TRIALS),
                        help=f"timed trials per size, at most {MAX_TRIALS:,} (default: 5)")
    parser.add_argument("--warmup", type=integer(minimum=0, maximum=MAX_TRIALS),
                        help=f"untimed trials first, at most {MAX_TRIALS:,} (default: 1)")
    parser.add_argument("--precision", default="f32", choices=("f32", "f64"),
                        help="precision to calibrate (default: f32; `auto` uses the one it runs at)")
    parser.add_argument("--solvers", nargs="+", metavar="NAME",
                        help="time only these solvers (default: every available one)")
    parser.add_argument("--ic", choices=sorted(ics.GENERATORS),
                        help="initial conditions timed (default: plummer)")
    parser.add_argument("--seed", type=integer(minimum=0), default=0,
                        help="random seed of the initial conditions")
    parser.add_argument("--dry-run", action="store_true",
                        help="measure and print, but do not store the result")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    accuracy = parser.add_argument_group(
        "accuracy table", "with --accuracy: errors of each approximate solver (one with an "
        "accuracy option) against float64 direct summation, instead of timings")
    accuracy.add_argument("--accuracy", action="store_true",
                          help="measure the accuracy table that accuracy= chooses theta from")
    accuracy.add_argument("--thetas", type=number(at_least=0), nargs="+", default=None,
                          help="opening angles measured (default: each variant's grid, 0.05 to "
                               "1.5 for the trees, 0.2 to 0.9 for the FMMs, 0.5 to 0.95 for "
                               "the FMMs with heavy nodes)")
    accuracy.add_argument("--sizes", type=integer(minimum=2), nargs="+",
                          help="particle counts measured (default: 1024 to 65536, factors of 2)")
    accuracy.add_argument("--scenarios", nargs="+", default=None, metavar="NAME",
                          help="scenarios measured (default: every shipped one but the "
                               "uniform cube and the satellite, engine/tuning/accuracy_table.py "
                               "says why)")
    accuracy.add_argument("--device", default=None,
                          help="compute device of the GPU solvers (default: the first found)")
    accuracy.add_argument("--output", default=None, metavar="PATH", type=output_file,
                          help="write the table here instead of the cache directory (the "
                               "package's defaults: engine/tuning/accuracy_defaults.json)")
    parser.set_defaults(handler=run)


# More trials than anyone times: the budget is checked between sizes, so 10**30 trials of one
# size never ended.
MAX_TRIALS = 10_000
# The options of the timing mode (without --accuracy) and their defaults.
TIMING_DEFAULTS = {"n_min": 256, "n_max": 262_144, "factor": 2.0, "budget": 60.0,
                   "max_eval": 1.0, "trials": 5, "warmup": 1, "ic": "plummer"}
# The options of --accuracy alone (None: the default is decided later).
ACCURACY_OPTIONS = ("thetas", "sizes", "scenarios", "device", "output")


def _check_mode(args) -> None:
    """Refuse an option the chosen mode would ignore (the user meant something by it: an
    --output ignored without --accuracy overwrote the calibration cache), then fill in the
    defaults of the mode's own."""
    ignored = TIMING_DEFAULTS if args.accuracy else ACCURACY_OPTIONS
    given = ["--" + name.replace("_", "-") for name in ignored if getattr(args, name) is not None]
    if given:
        mode = "timing crossovers (without --accuracy)" if args.accuracy else "--accuracy"
        raise InvalidInputError(f"{', '.join(given)} only appl{'ies' if len(given) == 1 else 'y'}"
                                f" to {mode}: nothing was measured")
    if args.output is not None and args.dry_run:
        raise InvalidInputError("--dry-run stores nothing, so --output has nothing to write")
    for name, default in TIMING_DEFAULTS.items():
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.sizes is None:
        args.sizes = list(accuracy_table.DEFAULT_SIZES)


def run(args) -> int:
    _check_mode(args)
    if args.accuracy:
        if not args.dry_run and not args.output:  # before measuring for the whole budget
            check_cache_writable(path=accuracy_table.cache_file())
        return run_accuracy(args)
    if not args.dry_run:
        check_cache_writable()
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
                "accuracy": accuracy_table.DEFAULT_ACCURACY,
                "options": {name: timing_kwargs(name, args.precision) for name in solvers},
                "note": "approximate solvers at auto's default accuracy, the others at their defaults"}
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


def approximate_solvers(requested) -> tuple[list[str], dict[str, str]]:
    """Solvers with an accuracy option that can run here, and why the others cannot."""
    specs = solver_specs()
    names = [name for name, spec in specs.items() if name != "auto"
             and any(option.name == "accuracy" for option in spec.options)]
    if requested:
        names = [name for name in names if name in requested]
    return split_available(names)


def run_accuracy(args) -> int:
    solvers, unavailable = approximate_solvers(args.solvers)
    for name, reason in unavailable.items():
        print(f"skipping {name}: {reason}", file=sys.stderr)
    if not solvers:
        print("orrery calibrate --accuracy: no approximate solver can run here", file=sys.stderr)
        return 1
    names = args.scenarios or list(accuracy_table.SCENARIOS)
    specs = solver_specs()
    rows = {}
    for name in solvers:
        calibrated: AccuracyCalibrated = specs[name].factory
        variants = {accuracy_table.variant_key(v): v for v in calibrated.accuracy_variants}
        has_device = any(option.name == "device" for option in specs[name].options)
        options = {"precision": args.precision, **({"device": args.device} if has_device and
                                                    args.device else {})}
        with tqdm(total=len(names) * len(args.sizes), unit="case", disable=args.quiet,
                  file=sys.stderr, dynamic_ncols=True, desc=name) as bar:
            def advance(solver, variant, scenario, size):
                bar.set_postfix_str(f"{scenario} N={size:,}")
                if variant == next(reversed(variants)):
                    bar.update(1)

            # Angles beyond a solver's range (an FMM's theta < 1) are not measured for it.
            theta_option = next(o for o in specs[name].options if o.name == "theta")
            thetas = {key: [t for t in args.thetas or calibrated.accuracy_thetas(variant)
                            if theta_option.maximum is None or t <= theta_option.maximum]
                      for key, variant in variants.items()}
            rows.update(accuracy_table.measure(name, variants, thetas, names, args.sizes,
                                               seed=args.seed, solver_options=options,
                                               reference_device=options.get("device"),
                                               on_point=advance))
    settings = {"precision": args.precision, "seed": args.seed, "targets": accuracy_table.TARGETS,
                "scenarios": names, "sizes": args.sizes,
                "thetas": args.thetas or "each variant's accuracy_thetas",
                "note": "RMS and 90th-percentile relative force errors against float64 direct "
                        "summation, each scenario with its own softening"}
    table = accuracy_table.AccuracyTable(rows, {key: "this run" for key in rows})
    print(_accuracy_summary(table, rows, args.sizes))
    if args.dry_run:
        print("Not stored (--dry-run).")
    else:
        path = accuracy_table.save_table(rows, settings, path=args.output and Path(args.output))
        print(f"Stored in {path}; accuracy= chooses theta from it from now on.")
    return 0


def _accuracy_summary(table, rows, sizes) -> str:
    """Theta chosen per solver, variant and target at the largest size measured."""
    out = []
    for solver, variant in rows:
        row = {"solver": solver, "variant": variant}
        for target in (1e-2, 1e-3, 1e-4):
            try:
                choice = table.choose(solver, [variant], target, max(sizes))
                row[f"theta @ {target:g}"] = f"{choice.theta:g} ({choice.error:.2g})"
            except InvalidInputError:
                row[f"theta @ {target:g}"] = "unreachable"
        out.append(row)
    columns = ["solver", "variant"] + [f"theta @ {t:g}" for t in (1e-2, 1e-3, 1e-4)]
    return ("\nTheta chosen for each target at N >= " + f"{max(sizes):,}" +
            " (the worst scenario's larger of RMS and 90th percentile there):\n" + format_table(out, columns))


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
