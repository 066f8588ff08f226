"""``orrery bench fmm``: a fast multipole solver's time and error per expansion order and opening
angle (RMS and 90th percentile of |da|/|a| over sampled targets against exact float64 sums),
its stage breakdown (sort, build, walk, upward, M2L, P2P, downward, from ``last_stats``) and,
with ``--versus``, the fastest setting of each solver that reaches each error target (by RMS and
by 90th percentile), measured in the same run (``--versus cpu-tree`` sweeps the tree's theta with and without quadrupoles).
With ``--peers``, jz-fmm (bench/_fmm_peers.py, CUDA only) is swept in the same run over its
expansion orders, opening angles, leaf sizes and tree coarsening factors (``--peer-orders``,
``--peer-thetas``, ``--peer-leaf-sizes``, ``--peer-coarse-factors``), each setting at the
smallest of ``--peer-ilist-factors`` whose interaction lists hold it (a setting that overflows
them is a row saying so, not a timing); its errors are measured by the same sampled float64 sums
and its fastest setting at each target joins the equal-error table as ours does.

Self-contained: it needs only the solvers, the initial conditions and the timing harness.
"""

from __future__ import annotations

import time
from dataclasses import asdict, fields, replace
from itertools import product

import numpy as np

from ..app.text_table import format_table
from ..engine import ics, make_solver
from ..engine.accuracy import sampled_exact
from ..engine.errors import InvalidInputError
from ..engine.solvers import solver_specs
from ..engine.solvers._fmm import FMM_HEAVY_SHARE
from ..engine.options import LEAF_CAPACITY, PRECISION, Option
from ..engine.tuning.timing import Timing, time_trials
from ._fmm_peers import MAX_LEAF_SIZE, ListOverflow, PeerSetting, jzfmm_peer
from ._options import SOLVER_RUN, BenchmarkSpec, several
from .memory import MEMORY, check_memory_solver, memory_row, print_memory
from .harness import launched_one_by_one, one_evaluation, replay_equals_launched

HELP = "fast multipole method: time and error per order and theta, stage breakdown, equal-error comparison"

# What the equal-error table names of a setting: ours, the compared solver's and the peer's.
SETTING_KNOBS = ("order", "theta", "quadrupole", "leaf_size", "coarse_factor", "ilist_factor")

STAGES = ("box", "keys", "sort", "build", "walk", "lists", "upward", "m2l", "p2p", "downward", "l2p", "kernel")


SPEC = BenchmarkSpec("fmm", HELP, options=(
    several(Option("n", int, None, "particle counts", minimum=1), (65536,)),
    Option("solver", str, "cpu-fmm", "a solver with an order option: cpu-fmm or gpu-fmm"),
    several(Option("orders", int, None, "expansion orders", minimum=1), (3, 4, 5, 6, 7)),
    several(Option("thetas", float, None, "opening angles", minimum=0.0), (0.4, 0.5, 0.6, 0.7)),
    PRECISION,
    replace(LEAF_CAPACITY, default=None, doc="leaf capacity (default: the solver's)"),
    *SOLVER_RUN,
    Option("expansions", str, None, "the FMM's expansion precision (cpu-fmm: of M2L), f64 or f32 "
                                    "(default: the solver's)",
           choices=("f64", "f32")),
    FMM_HEAVY_SHARE,
    Option("resident", bool, False, "time a device-resident state (bind(...).compute_accelerations and "
                                    "a synchronisation) instead of host arrays in and out"),
    Option("rates", bool, False, "GPU solvers: the M2L flop rate against the device's FMA ceiling "
                                 "and the P2P pair rate against gpu-direct's, measured in the same run"),
    Option("direct_n", int, 131072, "N at which --rates times gpu-direct", minimum=2),
    Option("launches", bool, False, "GPU solvers: each setting's last evaluation by stage and kernel "
                                    "(launches, total and longest device seconds)"),
    MEMORY,
    Option("trials", int, 3, "timed trials per setting", minimum=1),
    Option("warmup", int, 1, "untimed warm-up runs", minimum=0),
    # The FMMs' relative errors have a heavy tail (a few bodies in a thousand near 1e-2), which sets
    # their RMS: over 1024 targets it moves by a third from sample to sample, over 4096 by a few
    # percent (docs/performance.md).
    Option("error_targets", int, 4096, "target particles sampled for the errors", minimum=1),
    Option("versus", str, None, "also sweep this theta solver (e.g. cpu-tree) and compare at "
                                "equal error"),
    several(Option("versus_thetas", float, None, "the compared solver's opening angles",
                   minimum=0.0), (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)),
    several(Option("targets", float, None, "error targets (RMS, then 90th percentile) of the "
                                           "equal-error table", minimum=0.0,
                   exclusive_minimum=True), (1e-2, 3e-3, 1e-3, 3e-4)),
    Option("peers", bool, False, "also sweep jz-fmm (CUDA only; skipped with the reason where "
                                 "it cannot run) and compare at equal error"),
    # jz-fmm's paper: p 5 and theta 0.8 by default, p up to 7 and smaller angles in its
    # accuracy-time comparison (figure 9); leaves of at most 32 and its FMM's planes coarsened by
    # 4 are its defaults, which it does not vary. Its leaf size trades M2L for leaf-leaf sums as
    # our leaf capacity does, so it is swept as ours is.
    several(Option("peer_orders", int, None, "jz-fmm's expansion orders", minimum=1), (4, 5, 6, 7)),
    several(Option("peer_thetas", float, None, "jz-fmm's opening angles", minimum=0.0),
            (0.5, 0.6, 0.7, 0.8)),
    several(Option("peer_leaf_sizes", int, None, "jz-fmm's most particles a leaf holds "
                                                 "(max_leaf_size)", minimum=1,
                   maximum=MAX_LEAF_SIZE), (16, 32, 64)),
    several(Option("peer_coarse_factors", float, None, "jz-fmm's growth of the largest node from "
                                                       "one tree plane to the next (coarse_fac)",
                   minimum=1.0, exclusive_minimum=True), (4.0,)),
    # Its default of 64 entries a leaf is sized for theta 0.8 and overflows at 0.6 on a Plummer
    # sphere; its paper raised it for smaller angles.
    several(Option("peer_ilist_factors", float, None, "jz-fmm's interaction-list entries "
                                                      "allocated per leaf (alloc_fac_ilist): each "
                                                      "setting runs at the smallest that holds it",
                   minimum=0.0, exclusive_minimum=True), (64.0, 256.0, 1024.0)),
))


def _make(name: str, args, **options):
    known = {option.name for option in solver_specs()[name].options}
    wanted = {"precision": args.precision, "softening": args.softening, "threads": args.threads,
              "device": args.device, "leaf_capacity": args.leaf_capacity if name == args.solver else None,
              "expansions": args.expansions, "heavy_share": args.heavy_share if name == args.solver else None,
              **options}
    return make_solver(name, **{k: v for k, v in wanted.items() if v is not None and k in known})


def _errors(acc, exact, targets) -> dict:
    errors = np.linalg.norm(np.asarray(acc, np.float64)[targets] - exact, axis=1) / np.linalg.norm(exact, axis=1)
    return {"rms": float(np.sqrt(np.mean(errors ** 2))), "p90": float(np.percentile(errors, 90))}


def _measure(solver, particles, exact, targets, args, limits=None) -> dict:
    evaluation = one_evaluation(solver, particles, resident=args.resident)
    timing: Timing = time_trials(evaluation, warmup=args.warmup, trials=args.trials)
    timed = evaluation.accelerations()  # the errors are those of the path timed
    replayed = replay_equals_launched(solver, timed, particles)
    with launched_one_by_one(solver):  # the stages' times (and launch_times()) of one evaluation
        solver.accelerations(particles.pos, particles.mass)
        stats = dict(solver.last_stats)
    acc = np.asarray(timed, np.float64)[targets]
    errors = np.linalg.norm(acc - exact, axis=1) / np.linalg.norm(exact, axis=1)
    if hasattr(solver, "interaction_counts"):
        stats.update(solver.interaction_counts())
    row = {**timing.summary(), "rms": float(np.sqrt(np.mean(errors ** 2))),
           "p90": float(np.percentile(errors, 90)),
           **{f"{stage}_s": stats[f"{stage}_s"] for stage in STAGES if f"{stage}_s" in stats}}
    if replayed is not None:
        row["replay_equals_launched"] = replayed
    if "m2l_interactions" in stats:
        row["m2l_per_particle"] = stats["m2l_interactions"] / len(particles.pos)
    if "particle_particle" in stats:
        row["p2p_per_particle"] = stats["particle_particle"] / len(particles.pos)
    if limits:
        row.update(_rates(stats, limits))
    return row


def _rates(stats: dict, limits: dict) -> dict:
    """M2L flop/s (the generated code's count) as a fraction of the FMA ceiling of the
    expansions' precision, P2P pairs/s as a fraction of gpu-direct's."""
    rates = {}
    if stats.get("m2l_s") and "m2l_flops" in stats:
        rates["m2l_gflops"] = stats["m2l_flops"] / stats["m2l_s"] / 1e9
        ceiling = limits.get(f"fma_f{stats['expansion_bits']}")
        if ceiling:
            rates["m2l_fma_fraction"] = stats["m2l_flops"] / stats["m2l_s"] / ceiling
    if stats.get("p2p_s") and "particle_particle" in stats:
        rates["p2p_gpairs"] = stats["particle_particle"] / stats["p2p_s"] / 1e9
        if limits.get("direct_pairs"):
            rates["p2p_direct_fraction"] = stats["particle_particle"] / stats["p2p_s"] / limits["direct_pairs"]
    return rates


def _print_resources(solver, order: int) -> None:
    """The expansion and pair kernels' registers and spills, where the backend reports them."""
    resources = {name: r for name, r in getattr(solver, "kernel_resources", dict)().items() if r}
    if resources:
        print(f"order {order} kernels, per work-item: " + "; ".join(
            f"{name} " + ", ".join(f"{key} {value}" for key, value in r.items()) for name, r in resources.items()))


def _limits(args) -> dict:
    """The device's FMA ceilings and gpu-direct's pair rate (device seconds) at ``direct_n``."""
    from .ceilings import measure_device

    limits = measure_device(args.device)
    direct = _make("gpu-direct", args)
    particles = ics.make(args.ic, args.direct_n, seed=args.seed)
    for _ in range(max(1, args.warmup)):
        direct.accelerations(particles.pos, particles.mass)
    seconds = []
    for _ in range(args.trials):
        direct.accelerations(particles.pos, particles.mass)
        seconds.append(direct.last_stats["kernel_s"])
    limits["direct_pairs"] = args.direct_n * (args.direct_n - 1) / float(np.median(seconds))
    print(f"ceilings in this run (G/s): " + ", ".join(f"{key} {rate / 1e9:.4g}" for key, rate in limits.items()))
    return limits


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    spec = solver_specs().get(args.solver)
    if spec is None or "order" not in {option.name for option in spec.options}:
        raise InvalidInputError(f"solver must name a solver with an order option, got "
                                f"{args.solver!r}")
    if args.rates and spec.kind != "gpu":
        raise InvalidInputError("--rates measures a GPU solver against its device's ceilings")
    if args.launches and spec.kind != "gpu":
        raise InvalidInputError("--launches times a GPU solver's kernels")
    if args.memory:
        check_memory_solver(spec.kind)
    limits = _limits(args) if args.rates else None
    peer = jzfmm_peer(args.softening) if args.peers else None
    if isinstance(peer, str):
        print(peer)
        peer = None
    rows = []
    for n in args.n:
        particles = ics.make(args.ic, n, seed=args.seed)
        targets = np.sort(np.random.default_rng(0).choice(n, size=min(n, args.error_targets), replace=False))
        start = time.perf_counter()
        exact = sampled_exact(particles.pos, particles.mass, targets, args.softening, device=args.device)
        print(f"N = {n}: exact sums of {len(targets)} targets in {time.perf_counter() - start:.1f} s")
        grid, launches, memory = [], [], []
        for order in args.orders:
            for theta in args.thetas:
                solver = _make(args.solver, args, order=order, theta=theta)
                setting = {"solver": args.solver, "n": n, "order": order, "theta": theta}
                grid.append({"table": "grid", **setting, **_measure(solver, particles, exact, targets, args, limits)})
                if limits and theta == args.thetas[0]:
                    _print_resources(solver, order)
                if args.launches:
                    launches += [{"table": "launches", **setting, **row} for row in solver.launch_times()]
                if args.memory:  # a solver of its own: one that has evaluated keeps its arrays
                    memory.append(memory_row(_make(args.solver, args, order=order, theta=theta),
                                             particles, setting))
        stage_columns = [f"{s}_s" for s in STAGES if f"{s}_s" in grid[0]]
        rate_columns = [c for c in ("m2l_gflops", "m2l_fma_fraction", "p2p_gpairs", "p2p_direct_fraction")
                        if c in grid[0]]
        print(f"\n{args.solver} ({args.precision}, {args.ic}, N = {n}{', resident' if args.resident else ''}) "
              "per evaluation (stages: device seconds)")
        print(format_table(grid, ["order", "theta", "median_s", "iqr_s", "rms", "p90", *stage_columns,
                                  "m2l_per_particle", "p2p_per_particle", *rate_columns,
                                  *(["replay_equals_launched"] if "replay_equals_launched" in grid[0] else [])]))
        if launches:
            print(f"\n{args.solver} (N = {n}) the last evaluation of each setting by kernel (device seconds)")
            print(format_table(launches, ["order", "theta", "stage", "kernel", "launches", "total_s", "longest_s"]))
        print_memory(memory, ["order", "theta"])
        rows += grid + launches + memory
        groups = [(args.solver, grid)]
        if args.versus:
            groups.append((args.versus, _versus_sweep(args, n, particles, exact, targets)))
        if peer is not None:
            groups.append((peer.name, _peer_sweep(peer, args, n, particles, exact, targets)))
        for _, sweep in groups[1:]:
            rows += sweep
        if len(groups) > 1:
            rows += _equal_error(args, n, groups)
    print("(the machine may be shared: ratios measured in one run are the figures to quote)")
    return rows


def _versus_sweep(args, n, particles, exact, targets) -> list[dict]:
    options = [{"theta": theta} for theta in args.versus_thetas]
    if "quadrupole" in {option.name for option in solver_specs()[args.versus].options}:
        options = [{**o, "quadrupole": q} for q in (False, True) for o in options]
    sweep = [{"table": "versus", "solver": args.versus, "n": n, **o,
              **_measure(_make(args.versus, args, **o), particles, exact, targets, args)} for o in options]
    print(f"\n{args.versus} sweep (N = {n})")
    print(format_table(sweep, ["theta", "quadrupole", "median_s", "rms", "p90"]))
    return sweep


def _peer_sweep(peer, args, n, particles, exact, targets) -> list[dict]:
    """The peer at every order, theta, leaf size and coarsening factor, each at the smallest
    interaction-list factor that holds it: wall time of a device-resident evaluation (the
    particles uploaded once), errors by our sampled float64 sums.

    1. For each setting, try the list factors from the smallest up, skipping those that
       overflowed at the same theta, leaf size and coarsening factor: the lists are those of the
       tree and the opening test alone, the same at every order.
    2. A factor whose lists overflow is a row saying so (``overflow``, NaN time and errors); the
       next factor is tried. An overflow of another allocation, or any other failure, is a row
       with a note and ends the setting.
    3. The first factor that runs is timed, and no larger one: a larger list is only more memory
       to allocate and fill, the same work in the kernels.
    """
    sweep, overflowed = [], {}
    for order, theta, leaf_size, coarse in product(args.peer_orders, args.peer_thetas,
                                                   args.peer_leaf_sizes, args.peer_coarse_factors):
        tree = (theta, leaf_size, coarse)
        for factor in sorted(f for f in args.peer_ilist_factors if f > overflowed.get(tree, 0.0)):
            setting = PeerSetting(order, theta, leaf_size, coarse, factor)
            row = {"table": "peer", "solver": peer.name, "n": n, **asdict(setting)}
            sweep.append(row)
            try:
                evaluate, read = peer.prepare(particles.pos, particles.mass, setting)
                timing = time_trials(evaluate, warmup=max(args.warmup, 1), trials=args.trials)
                row.update(**timing.summary(), **_errors(read(), exact, targets))
                break
            except ListOverflow as error:
                row.update(median_s=float("nan"), rms=float("nan"), p90=float("nan"),
                           overflow=True, note=f"overflow: {error}")
                if not error.ilist:
                    break
                overflowed[tree] = factor
            except Exception as error:  # noqa: BLE001 - a peer's failure is a row, not a crash
                row.update(median_s=float("nan"), rms=float("nan"), p90=float("nan"),
                           note=f"{type(error).__name__}: {str(error)[:80]}")
                break
    print(f"\n{peer.name} sweep (N = {n}, device-resident, its own tree build included)")
    print(format_table(sweep, [*(f.name for f in fields(PeerSetting)), "median_s", "rms", "p90", "note"]))
    return sweep


def _reaches(row: dict, metric: str, target: float) -> bool:
    """Whether ``row``'s error is within ``target`` by ``metric``: "rms", "p90", or "both" (RMS
    and 90th percentile, the issue's equal-error criterion)."""
    names = ("rms", "p90") if metric == "both" else (metric,)
    return all(row.get(name, np.nan) <= target for name in names)


def _equal_error(args, n, groups) -> list[dict]:
    """Per metric (RMS, 90th percentile, both) and target, each group's fastest setting reaching
    it, and each other group's time over the first's (``{label}_ratio``: above 1, the first
    group is faster)."""
    first = groups[0][0]
    rows = []
    for metric in ("rms", "p90", "both"):
        for target in args.targets:
            row = {"table": "equal_error", "n": n, "metric": metric, "target": target}
            for label, candidates in groups:
                meeting = [r for r in candidates if _reaches(r, metric, target)]
                best = min(meeting, key=lambda r: r["median_s"]) if meeting else None
                row[f"{label}_s"] = best["median_s"] if best else float("nan")
                row[f"{label}_setting"] = (", ".join(f"{k}={best[k]}" for k in SETTING_KNOBS if k in best)
                                           if best else "none reached it")
            for label, _ in groups[1:]:
                row[f"{label}_ratio"] = row[f"{label}_s"] / row[f"{first}_s"]
            rows.append(row)
    columns = ["metric", "target"]
    for label, _ in groups:
        columns += [f"{label}_s", f"{label}_setting"]
    columns += [f"{label}_ratio" for label, _ in groups[1:]]
    print(f"\nfastest setting reaching each error target, by RMS, by 90th percentile and by both "
          f"(N = {n})")
    print(format_table(rows, columns))
    return rows
