"""``orrery bench tree``: a Barnes-Hut solver's time per evaluation against N (median, IQR,
interactions per particle, the stage breakdown from ``solver.last_stats``), the fitted exponent,
the crossover against ``cpu-direct`` measured in the same run, and optionally an accuracy-versus-
cost table, a leaf-capacity sweep and peers (pytreegrav, REBOUND) at equal or better RMS error.

Works for any solver with a ``theta`` option (``--solver cpu-tree`` by default). Errors are the
RMS and the 90th percentile of the relative errors over a random subset of target particles
against exact float64 summation.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace

import numpy as np

from ..app.text_table import format_table
from ..engine import ics, make_solver
from ..engine.accuracy import error_percentiles, rms_relative_error, sampled_exact
from ..engine.cpu_features import build_info, simd_level
from ..engine.errors import InvalidInputError
from ..engine.solvers import solver_specs
from ..engine.options import LEAF_CAPACITY, PRECISION, QUADRUPOLE, THETA, Option
from ..engine.solvers.gpu_tree import OPENING, WALK
from ..engine.tuning.timing import Timing, time_trials
from ._options import SOLVER_RUN, BenchmarkSpec, several
from ._tree_peers import available_peers
from .memory import MEMORY, check_memory_solver, memory_row, print_memory
from .harness import one_evaluation

HELP = "Barnes-Hut tree: scaling, breakdown, crossover vs cpu-direct, accuracy vs cost, peers"

THETA_SEARCH_STEPS = 8


SPEC = BenchmarkSpec("tree", HELP, options=(
    several(Option("n", int, None, "particle counts", minimum=1),
            (1024, 4096, 16384, 65536, 262144)),
    Option("solver", str, "cpu-tree", "a solver with a theta option"),
    PRECISION,
    replace(THETA, default=None, doc="opening angle (default: the solver's)"),
    replace(QUADRUPOLE, default=None, doc="quadrupole moments (default: the solver's)"),
    replace(LEAF_CAPACITY, default=None, doc="leaf capacity (default: the solver's)"),
    several(WALK, None, "walks of a solver that has several, e.g. gpu-tree's coherent "
                        "independent group (default: the solver's)"),
    replace(OPENING, default=None, doc="gpu-tree's opening test, 'group' (cpu-tree's) or 'body' "
                                       "(default: the solver's)"),
    *SOLVER_RUN,
    Option("trials", int, 5, "timed trials per measurement", minimum=1),
    Option("warmup", int, 1, "untimed warm-up runs", minimum=0),
    Option("long_trial_s", float, 3.0, "a warm-up slower than this (seconds) is the only trial",
           minimum=0.0),
    Option("resident", bool, False, "time a device-resident state (bind(...).compute_accelerations, "
                                    "what a Simulation pays) instead of accelerations(pos, mass) "
                                    "with its host transfers"),
    MEMORY,
    Option("direct_solver", str, "cpu-direct", "the direct-summation solver the crossover is "
                                               "measured against (it gets --device too)"),
    Option("direct_max_n", int, 32768, "largest N at which the direct solver is timed; above it "
                                       "its time is extrapolated as N^2 and marked so", minimum=0),
    Option("scaling_error", bool, False, "also give each scaling row's RMS and 90th-percentile "
                                         "error over the sampled targets (see --error-targets)"),
    Option("error_targets", int, 1024, "target particles sampled for RMS errors (their exact "
                                       "accelerations summed on --device when given)", minimum=1),
    Option("accuracy", bool, False, "accuracy-vs-cost table: monopole vs quadrupole (per walk) "
                                    "at the largest theta meeting each --error-goal"),
    several(Option("error_goal", float, None, "", minimum=0.0, exclusive_minimum=True),
            (1e-2, 1e-3, 1e-4), "RMS relative errors the accuracy table meets"),
    Option("accuracy_n", int, 65536, "N of the accuracy table", minimum=2),
    several(replace(LEAF_CAPACITY, name="leaf_sweep"), None, "sweep these leaf capacities at --sweep-n"),
    several(Option("group_sweep", int, None, "group capacity", minimum=1), None,
            "with --leaf-sweep, also sweep the walk's group capacity (solvers with a "
            "group_capacity attribute, e.g. cpu-tree)"),
    Option("sweep_n", int, 65536, "N of the leaf sweep", minimum=2),
    Option("peers", bool, False, "pytreegrav and REBOUND trees at each N, against Orrery at "
                                 "equal or better error"),
    Option("peer_threads", int, 2, "threads for pytreegrav", minimum=1),
    replace(THETA, name="peer_theta", doc="peers' opening angle"),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    spec = solver_specs().get(args.solver)
    if spec is None or "theta" not in {option.name for option in spec.options}:
        raise InvalidInputError(f"solver must name a solver with a theta option, got {args.solver!r}")
    if args.memory:
        check_memory_solver(spec.kind)
    rows = scaling(args)
    if args.memory:
        rows += memory(args)
    if args.leaf_sweep:
        rows += leaf_sweep(args)
    if args.accuracy:
        rows += accuracy_table(args)
    if args.peers:
        rows += peers(args)
    print("(the machine may be shared: ratios measured in one run are the figures to quote)")
    return rows


# --- helpers -----------------------------------------------------------------------------------

def _solver(args, name=None, **overrides):
    """``args.solver`` (or ``name``) with the options given here that it has."""
    name = name or args.solver
    names = {option.name for option in solver_specs()[name].options}
    options = {"precision": args.precision, "softening": args.softening, "threads": args.threads,
               "theta": args.theta, "quadrupole": args.quadrupole, "leaf_capacity": args.leaf_capacity,
               "simd": args.simd, "device": args.device, "opening": args.opening}
    options.update(overrides)
    return make_solver(name, **{k: v for k, v in options.items() if v is not None and k in names})


def _walks(args) -> tuple:
    return args.walk or (None,)


def _walk_columns(walk) -> dict:
    return {} if walk is None else {"walk": walk}


def _time(fn, args) -> Timing:
    """Warm-up, then trials; one slow warm-up is kept as the only sample."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    if first > args.long_trial_s:
        return Timing((first,))
    return time_trials(fn, warmup=max(0, args.warmup - 1), trials=args.trials)


def _breakdown(stats: dict) -> dict:
    """Every device or stage time the solver reports (keys ending in _s, but the wall time
    the trials already measure), whatever the solver."""
    return {key: value for key, value in stats.items() if key.endswith("_s") and key != "wall_s"}


def _stage_columns(stats: dict) -> list[str]:
    return sorted(_breakdown(stats))


def _exact(pos, mass, targets, args) -> np.ndarray:
    """The error reference: float64 sums for the sampled targets, on --device when given."""
    return sampled_exact(pos, mass, targets, args.softening, device=args.device)


def _targets(n: int, count: int, seed: int = 0) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).choice(n, size=min(n, count), replace=False))


def _fmt_table(title: str, rows: list[dict], columns: list[str]) -> None:
    print(f"\n{title}")
    print(format_table(rows, columns))


# --- scaling, exponent, crossover -------------------------------------------------------------

def scaling(args) -> list[dict]:
    return [row for walk in _walks(args) for row in _scaling(args, walk)]


def memory(args) -> list[dict]:
    """``--memory``: a memory row per walk and N, each of a solver of its own (one that has
    evaluated keeps its arrays, which a measurement would not see allocated)."""
    rows = [memory_row(_solver(args, walk=walk), ics.make(args.ic, n, seed=args.seed),
                       {"solver": args.solver, **_walk_columns(walk)})
            for walk in _walks(args) for n in sorted(args.n)]
    print_memory(rows, ["walk"] if args.walk else [])
    return rows


def _scaling(args, walk) -> list[dict]:
    rows = []
    direct_measured: list[tuple[int, float]] = []
    for n in sorted(args.n):
        particles = ics.make(args.ic, n, seed=args.seed)
        solver = _solver(args, walk=walk)
        evaluation = one_evaluation(solver, particles, resident=args.resident)
        timing = _time(evaluation, args)
        stats = solver.last_stats
        errors = _scaling_error(evaluation.accelerations(), particles, args) if args.scaling_error else {}
        row = {"table": "scaling", "solver": args.solver, **_walk_columns(walk), "n": n,
               **timing.summary(), **errors,
               "interactions_per_particle": stats.get("interactions_per_particle", float("nan")),
               **_breakdown(stats)}
        if stats.get("walk_s"):  # the walk's rate, comparable with gpu-direct's kernel rate
            row["walk_tera_per_s"] = row["interactions_per_particle"] * n / stats["walk_s"] / 1e12
        if n <= args.direct_max_n:
            direct = _solver(args, args.direct_solver)
            direct_timing = _time(one_evaluation(direct, particles, resident=args.resident), args)
            row["direct_s"] = direct_timing.median
            row["direct_source"] = "measured"
            direct_measured.append((n, direct_timing.median))
        elif direct_measured:
            n0, t0 = direct_measured[-1]
            row["direct_s"] = t0 * (n / n0) ** 2
            row["direct_source"] = f"N^2 from {n0}"
        if "direct_s" in row:
            row["speedup_vs_direct"] = row["direct_s"] / row["median_s"]
        rows.append(row)
    columns = ["n", "median_s", "iqr_s", *(["rms_error", "p90_error"] if args.scaling_error else []),
               "interactions_per_particle", *(["walk_tera_per_s"] if "walk_tera_per_s" in row else []),
               *_stage_columns(stats),
               "direct_s", "direct_source", "speedup_vs_direct"]
    walk_title = "" if walk is None else f", {walk} walk"
    _fmt_table(f"{args.solver} ({args.precision}, {args.ic}{walk_title}) per evaluation"
               f"{', resident' if args.resident else ''}; direct: {args.direct_solver}", rows, columns)

    summary = {"table": "summary", "solver": args.solver, **_walk_columns(walk)}
    if len(rows) >= 2:
        n = np.array([r["n"] for r in rows], float)
        t = np.array([r["median_s"] for r in rows])
        summary["time_exponent"] = float(np.polyfit(np.log(n), np.log(t), 1)[0])
    summary["crossover_n"], summary["crossover_note"] = _crossover(rows)
    summary["direct_kernel"] = _direct_kernel_description()
    if args.solver == "cpu-tree":
        summary["simd"] = _simd_description(args.simd)
    print("\n" + ", ".join(f"{k} = {v:.3g}" if isinstance(v, float) else f"{k} = {v}"
                            for k, v in summary.items() if k != "table"))
    return rows + [summary]


def _scaling_error(acc, particles, args) -> dict:
    """The errors of ``acc``, the result of the evaluations timed."""
    targets = _targets(particles.n, args.error_targets)
    exact = _exact(particles.pos, particles.mass, targets, args)
    rms, p90 = error_percentiles(acc[targets], exact)
    return {"rms_error": rms, "p90_error": p90}


def _crossover(rows) -> tuple[float, str]:
    measured = [(r["n"], r["median_s"] / r["direct_s"]) for r in rows if r.get("direct_source") == "measured"]
    if not measured:
        return float("nan"), "no direct timings"
    if measured[0][1] < 1.0:
        return float(measured[0][0]), f"tree already faster at the smallest N measured ({measured[0][0]})"
    for (n0, r0), (n1, r1) in zip(measured, measured[1:]):
        if r0 >= 1.0 > r1:
            # Interpolate log(ratio) linearly in log N.
            f = math.log(r0) / (math.log(r0) - math.log(r1))
            return float(math.exp(math.log(n0) + f * (math.log(n1) - math.log(n0)))), "interpolated, both measured"
    return float("nan"), f"direct still faster at the largest N measured ({measured[-1][0]})"


def _direct_kernel_description() -> str:
    return str(build_info())


def _simd_description(requested: str | None) -> str:
    level = simd_level(requested)
    return f"{level['level']} (1/sqrt: f32 {level['rsqrt_f32']}; f64 {level['rsqrt_f64']})"


# --- leaf sweep --------------------------------------------------------------------------------

def leaf_sweep(args) -> list[dict]:
    """Every (leaf, group) configuration timed once per round, rounds interleaved, so that load
    from elsewhere on a shared machine falls on all configurations alike."""

    particles = ics.make(args.ic, args.sweep_n, seed=args.seed)
    targets = _targets(args.sweep_n, args.error_targets)
    exact = _exact(particles.pos, particles.mass, targets, args)
    configs = []
    for capacity in args.leaf_sweep:
        for group in args.group_sweep or [None]:
            solver = _solver(args, leaf_capacity=capacity)
            if group is not None:
                if not hasattr(solver, "group_capacity"):
                    raise InvalidInputError(f"{args.solver} has no group capacity to sweep")
                solver.group_capacity = group
            acc = solver.accelerations(particles.pos, particles.mass)  # also the warm-up
            configs.append((solver, rms_relative_error(acc[targets], exact), []))
    for _ in range(args.trials):
        for solver, _, samples in configs:
            start = time.perf_counter()
            solver.accelerations(particles.pos, particles.mass)
            samples.append(time.perf_counter() - start)
    rows = []
    for solver, error, samples in configs:
        stats = solver.last_stats
        rows.append({"table": "leaf_sweep", "n": args.sweep_n, "leaf_capacity": solver.params["leaf_capacity"],
                     "group_capacity": getattr(solver, "group_capacity", ""), **Timing(tuple(samples)).summary(),
                     "interactions_per_particle": stats.get("interactions_per_particle", float("nan")),
                     "rms_error": error, **_breakdown(stats)})
    best = min(rows, key=lambda r: r["median_s"])
    _fmt_table(f"leaf capacity sweep, N = {args.sweep_n}, rounds interleaved (fastest: leaf "
               f"{best['leaf_capacity']}, group {best['group_capacity']})", rows,
               ["leaf_capacity", "group_capacity", "median_s", "iqr_s", "interactions_per_particle", "rms_error",
                *_stage_columns(stats)])
    return rows


# --- accuracy versus cost ----------------------------------------------------------------------

def _largest_theta_within(error_at, target: float, theta_max: float) -> float | None:
    """Largest theta whose error is <= target (error grows with theta), or None if even a tiny
    theta misses it (round-off floor)."""
    if error_at(theta_max) <= target:
        return theta_max
    lo, hi = 1e-3, theta_max
    if error_at(lo) > target:
        return None
    for _ in range(THETA_SEARCH_STEPS):
        mid = 0.5 * (lo + hi)
        if error_at(mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def _theta_limit(args) -> float:
    """The largest opening angle the solver's options table allows."""
    option = next(o for o in solver_specs()[args.solver].options if o.name == "theta")
    return option.maximum if option.maximum is not None else 2.0


def _error_function(args, particles, targets, exact, **options):
    """``error_at(theta)``: the RMS error at theta (measured once); ``error_at.p90(theta)`` the
    90th percentile of the same measurement."""
    cache = {}

    def measure(theta):
        if theta not in cache:
            acc = _solver(args, theta=theta, **options).accelerations(particles.pos, particles.mass)
            cache[theta] = error_percentiles(acc[targets], exact)
        return cache[theta]

    def error_at(theta):
        return measure(theta)[0]

    error_at.p90 = lambda theta: measure(theta)[1]
    return error_at


def accuracy_table(args) -> list[dict]:
    n = args.accuracy_n
    particles = ics.make(args.ic, n, seed=args.seed)
    targets = _targets(n, args.error_targets)
    exact = _exact(particles.pos, particles.mass, targets, args)
    theta_max = _theta_limit(args)
    rows = []
    for walk, target, quadrupole in itertools.product(_walks(args), args.error_goal, (False, True)):
        error_at = _error_function(args, particles, targets, exact, quadrupole=quadrupole, walk=walk)
        theta = _largest_theta_within(error_at, target, theta_max)
        row = {"table": "accuracy", **_walk_columns(walk), "n": n, "target_error": target,
               "quadrupole": quadrupole}
        if theta is None:
            row.update(theta=float("nan"), note="not reachable (round-off floor)")
        else:
            solver = _solver(args, theta=theta, quadrupole=quadrupole, walk=walk)
            timing = _time(one_evaluation(solver, particles, resident=args.resident), args)
            row.update(theta=theta, rms_error=error_at(theta), p90_error=error_at.p90(theta),
                       **timing.summary(), interactions_per_particle=solver.last_stats.get("interactions_per_particle"),
                       note="largest legal theta" if theta == theta_max else "")
        rows.append(row)
    _fmt_table(f"accuracy vs cost, N = {n} (largest theta meeting each RMS target)", rows,
               [*(["walk"] if args.walk else []), "target_error", "quadrupole", "theta",
                "rms_error", "p90_error", "median_s", "iqr_s", "interactions_per_particle", "note"])
    return rows


# --- peers -------------------------------------------------------------------------------------

def peers(args) -> list[dict]:
    found, missing = available_peers(args.peer_theta, args.softening, args.peer_threads)
    for message in missing:
        print(message)
    rows = []
    # Orrery runs at the largest legal theta whose error is no worse than the peer's.
    theta_max = _theta_limit(args)
    for n in sorted(args.n):
        particles = ics.make(args.ic, n, seed=args.seed)
        pos64, mass64 = particles.pos.astype(np.float64), particles.mass.astype(np.float64)
        targets = _targets(n, args.error_targets)
        exact = _exact(pos64, mass64, targets, args)
        ours_error_at = _error_function(args, particles, targets, exact)
        for peer in found:
            evaluate, read = peer.prepare(pos64, mass64)
            warm_start = time.perf_counter()
            evaluate()  # warm-up
            peer_warm_up = time.perf_counter() - warm_start
            peer_error = rms_relative_error(read()[targets], peer.exact(pos64, mass64, targets))
            theta = _largest_theta_within(ours_error_at, peer_error, theta_max)
            row = {"table": "peers", "n": n, "peer": peer.name, "peer_threads": peer.threads,
                   "peer_kernel": peer.kernel, "peer_theta": args.peer_theta, "peer_error": peer_error}
            if theta is None:
                rows.append(row)
                continue
            solver = _solver(args, theta=theta)
            solver.accelerations(particles.pos, particles.mass)  # warm-up
            # Peer and Orrery alternate trial by trial, so load from elsewhere falls on both; a
            # peer slower than --long-trial-s gets one timed trial.
            peer_samples, ours_samples = [], []
            for round_index in range(args.trials):
                if round_index == 0 or peer_warm_up <= args.long_trial_s:
                    start = time.perf_counter()
                    evaluate()
                    peer_samples.append(time.perf_counter() - start)
                start = time.perf_counter()
                solver.accelerations(particles.pos, particles.mass)
                ours_samples.append(time.perf_counter() - start)
            peer_timing, ours_timing = Timing(tuple(peer_samples)), Timing(tuple(ours_samples))
            row.update(peer_s=peer_timing.median, peer_iqr_s=peer_timing.iqr, ours_theta=theta,
                       ours_error=ours_error_at(theta), ours_s=ours_timing.median, ours_iqr_s=ours_timing.iqr,
                       speedup=peer_timing.median / ours_timing.median)
            rows.append(row)
    if rows:
        _fmt_table(f"peers at equal or better RMS error ({args.solver}, {args.precision})", rows,
                   ["n", "peer", "peer_threads", "peer_error", "peer_s", "peer_iqr_s", "ours_theta", "ours_error",
                    "ours_s", "ours_iqr_s", "speedup"])
    return rows
