"""``orrery bench fmm``: a fast multipole solver's time and error per expansion order and opening
angle (RMS and 90th percentile of |da|/|a| over sampled targets against exact float64 sums),
its stage breakdown (sort, build, walk, upward, M2L, P2P, downward, from ``last_stats``) and,
with ``--versus``, the fastest setting of each solver that reaches each error target (by RMS and
by 90th percentile), measured in the same run (``--versus cpu-tree`` sweeps the tree's theta with and without quadrupoles).

Self-contained: it needs only the solvers, the initial conditions and the timing harness.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .. import ics, make_solver
from ..solvers import solver_specs
from ._tree_peers import plummer_exact
from .harness import Timing, format_table, time_trials

HELP = "fast multipole method: time and error per order and theta, stage breakdown, equal-error comparison"

STAGES = ("sort", "build", "walk", "lists", "upward", "m2l", "p2p", "downward")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, nargs="+", default=[65536], help="particle counts (default: 65536)")
    parser.add_argument("--solver", default="cpu-fmm", help="cpu-fmm or gpu-fmm (default: cpu-fmm)")
    parser.add_argument("--orders", type=int, nargs="+", default=[3, 4, 5, 6, 7],
                        help="expansion orders (default: 3 4 5 6 7)")
    parser.add_argument("--thetas", type=float, nargs="+", default=[0.4, 0.5, 0.6, 0.7],
                        help="opening angles (default: 0.4 0.5 0.6 0.7)")
    parser.add_argument("--precision", default="f32", help="f32 or f64 (default: f32)")
    parser.add_argument("--softening", type=float, default=0.01, help="softening length (default: 0.01)")
    parser.add_argument("--leaf-capacity", type=int, default=None, help="leaf capacity (default: the solver's)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all)")
    parser.add_argument("--device", default=None, help="compute device of gpu solvers (default: first found)")
    parser.add_argument("--ic", default="plummer", choices=sorted(ics.GENERATORS), help="initial conditions")
    parser.add_argument("--seed", type=int, default=1, help="seed of the initial conditions")
    parser.add_argument("--trials", type=int, default=3, help="timed trials per setting (default: 3)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed warm-up runs (default: 1)")
    parser.add_argument("--error-targets", type=int, default=1024,
                        help="target particles sampled for the errors (default: 1024)")
    parser.add_argument("--versus", default=None,
                        help="also sweep this theta solver (e.g. cpu-tree) and compare at equal RMS error")
    parser.add_argument("--versus-thetas", type=float, nargs="+", default=[0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
                        help="the compared solver's opening angles (default: 0.3 .. 0.8)")
    parser.add_argument("--targets", type=float, nargs="+", default=[1e-2, 3e-3, 1e-3, 3e-4],
                        help="error targets (RMS, then 90th percentile) of the equal-error table "
                             "(default: 1e-2 3e-3 1e-3 3e-4)")


def _make(name: str, args, **options):
    known = {option.name for option in solver_specs()[name].options}
    wanted = {"precision": args.precision, "softening": args.softening, "threads": args.threads,
              "device": args.device, "leaf_capacity": args.leaf_capacity if name == args.solver else None,
              **options}
    return make_solver(name, **{k: v for k, v in wanted.items() if v is not None and k in known})


def _measure(solver, particles, exact, targets, args) -> dict:
    run = lambda: solver.accelerations(particles.pos, particles.mass)  # noqa: E731
    timing: Timing = time_trials(run, warmup=args.warmup, trials=args.trials)
    acc = np.asarray(solver.accelerations(particles.pos, particles.mass), np.float64)[targets]
    errors = np.linalg.norm(acc - exact, axis=1) / np.linalg.norm(exact, axis=1)
    stats = solver.last_stats
    row = {**timing.summary(), "rms": float(np.sqrt(np.mean(errors ** 2))),
           "p90": float(np.percentile(errors, 90)),
           **{f"{stage}_s": stats[f"{stage}_s"] for stage in STAGES if f"{stage}_s" in stats}}
    if "m2l_interactions" in stats:
        row["m2l_per_particle"] = stats["m2l_interactions"] / len(particles.pos)
    if "particle_particle" in stats:
        row["p2p_per_particle"] = stats["particle_particle"] / len(particles.pos)
    return row


def run(args) -> list[dict]:
    spec = solver_specs().get(args.solver)
    if spec is None or "order" not in {option.name for option in spec.options}:
        raise SystemExit(f"orrery bench fmm: --solver must name a solver with an order option, got {args.solver!r}")
    rows = []
    for n in args.n:
        particles = ics.make(args.ic, n, seed=args.seed)
        targets = np.sort(np.random.default_rng(0).choice(n, size=min(n, args.error_targets), replace=False))
        start = time.perf_counter()
        exact = plummer_exact(particles.pos, particles.mass, targets, args.softening)
        print(f"N = {n}: exact sums of {len(targets)} targets in {time.perf_counter() - start:.1f} s")
        grid = []
        for order in args.orders:
            for theta in args.thetas:
                solver = _make(args.solver, args, order=order, theta=theta)
                grid.append({"table": "grid", "solver": args.solver, "n": n, "order": order, "theta": theta,
                             **_measure(solver, particles, exact, targets, args)})
        stage_columns = [f"{s}_s" for s in STAGES if f"{s}_s" in grid[0]]
        print(f"\n{args.solver} ({args.precision}, {args.ic}, N = {n}) per evaluation")
        print(format_table(grid, ["order", "theta", "median_s", "iqr_s", "rms", "p90", *stage_columns,
                                  "m2l_per_particle", "p2p_per_particle"]))
        rows += grid
        if args.versus:
            rows += _equal_error(args, n, particles, exact, targets, grid)
    print("(the machine may be shared: ratios measured in one run are the figures to quote)")
    return rows


def _equal_error(args, n, particles, exact, targets, grid) -> list[dict]:
    options = [{"theta": theta} for theta in args.versus_thetas]
    if "quadrupole" in {option.name for option in solver_specs()[args.versus].options}:
        options = [{**o, "quadrupole": q} for q in (False, True) for o in options]
    sweep = [{"table": "versus", "solver": args.versus, "n": n, **o,
              **_measure(_make(args.versus, args, **o), particles, exact, targets, args)} for o in options]
    print(f"\n{args.versus} sweep (N = {n})")
    print(format_table(sweep, ["theta", "quadrupole", "median_s", "rms", "p90"]))
    rows = []
    for metric in ("rms", "p90"):
        for target in args.targets:
            row = {"table": "equal_error", "n": n, "metric": metric, "target": target}
            for label, candidates in ((args.solver, grid), (args.versus, sweep)):
                meeting = [r for r in candidates if r[metric] <= target]
                best = min(meeting, key=lambda r: r["median_s"]) if meeting else None
                row[f"{label}_s"] = best["median_s"] if best else float("nan")
                row[f"{label}_setting"] = (", ".join(f"{k}={best[k]}" for k in ("order", "theta", "quadrupole")
                                                     if k in best) if best else "none reached it")
            row["speedup"] = row[f"{args.versus}_s"] / row[f"{args.solver}_s"]
            rows.append(row)
    print(f"\nfastest setting reaching each error target, by RMS and by 90th percentile (N = {n})")
    print(format_table(rows, ["metric", "target", f"{args.solver}_s", f"{args.solver}_setting", f"{args.versus}_s",
                              f"{args.versus}_setting", "speedup"]))
    return sweep + rows
