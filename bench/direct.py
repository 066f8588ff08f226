"""``orrery bench direct``: direct-summation speed of any solver (``make_solver``), in
interactions/s (N(N-1) per evaluation) and Gflop/s (20 flop per interaction), as fractions of
this machine's ceilings measured in the same run (CPU probes at the widest SIMD level, taking
turns with the solvers; a GPU solver's from ``--device``), and beside peer codes timed in the
same run.

Fractions: ``fma_fraction`` is flop/s over the multiply-add ceiling; ``sqrt_div_fraction`` is
interactions/s over sqrt+divide pairs/s (one square root and one divide per interaction, i.e.
sqrt+divide operations/s / 2); ``rsqrt_fraction`` is interactions/s over approximate-1/sqrt
estimates/s. ``x_<peer>`` is interactions/s over the peer's at the same N.
"""

from __future__ import annotations

import itertools

from ..app.text_table import format_table
from ..engine.cpu_features import available_simd_levels
from ..engine import ics
from ..engine.cpu_features import hardware_threads
from ..engine.errors import InvalidInputError, UnknownSolverError
from ..engine.solvers import make_solver, solver_specs
from ..engine.options import PRECISION, Option
from ..engine.tuning.timing import time_interleaved
from . import ceilings, peers
from ._options import SOLVER_RUN, BenchmarkSpec, several
from .harness import FLOP_PER_INTERACTION

HELP = "time a direct-summation solver: interactions/s, Gflop/s, fractions of measured ceilings"

COLUMNS = ["solver", "precision", "n", "threads", "impl", "median_s", "iqr_s", "drift",
           "ginteractions_per_s", "gflops", "fma_fraction", "sqrt_div_fraction", "rsqrt_fraction",
           "x_pytreegrav-bruteforce", "x_rebound-basic"]


SPEC = BenchmarkSpec("direct", HELP, options=(
    several(Option("n", int, None, "particle count", minimum=2), (8192,),
            "particle counts (an interaction needs two particles)"),
    several(PRECISION, ("f32", "f64")),
    Option("solver", str, "cpu-direct", "solver name"),
    *SOLVER_RUN,
    Option("trials", int, 7, "timed trials", minimum=1),
    Option("warmup", int, 2, "discarded trials", minimum=0),
    several(Option("sweep", str, None, ""), None,
            "solver options to sweep, NAME=V1,V2,... (repeat for a grid), e.g. "
            "tile_size=64,128,256 targets=1,2,4"),
    Option("resident", bool, False, "also time a device-resident state (bind(...)"
                                    ".compute_accelerations, what a Simulation pays) beside "
                                    "accelerations(pos, mass) with its host transfers"),
    several(Option("versus", str, None, ""), (),
            "other solvers timed in the same run at each N and precision, e.g. cpu-direct for "
            "a GPU solver's crossover (x_<solver>: our interactions/s over theirs)",
            allow_empty=True),
    Option("peers", bool, False, "time installed peer codes (pytreegrav, rebound) in the same run"),
    Option("ceilings", bool, True, "measure the ceilings (without them, no fractions)"),
    Option("ceiling_seconds", float, 0.1, "length of one ceiling-probe trial",
           minimum=0.0, exclusive_minimum=True),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    specs = solver_specs()
    for name in (args.solver, *args.versus):
        if name not in specs:
            raise UnknownSolverError(f"unknown solver {name!r}; choose one of {sorted(specs)}")
    configs = _sweep_configs(args.solver, args.sweep)
    modes = ("host", "resident") if args.resident else ("host",)
    device_limits = ceilings.measure_device(args.device) if args.ceilings and args.device else {}
    # CPU probes judge CPU solvers; a GPU solver's ceilings come from its --device.
    on_cpu = not args.device and specs[args.solver].kind != "gpu"
    probes = _cpu_probes(args) if args.ceilings and on_cpu else []

    rows, peer_rows = [], []
    for n in args.n:
        particles = ics.make(args.ic, n, seed=args.seed)
        contenders, labels, notes = {}, {}, {}
        for precision, config, mode in itertools.product(args.precision, configs, modes):
            solver = make_solver(args.solver, **_solver_options(args, args.solver, precision), **config)
            key = ("ours", args.solver, precision, tuple(config.items()), mode)
            contenders[key] = _Evaluation(solver, particles, args.device, resident=mode == "resident")
            labels[key] = {**config, **({"mode": mode} if args.resident else {})}
        for other, precision, mode in itertools.product(args.versus, args.precision, modes):
            solver = make_solver(other, **_solver_options(args, other, precision))
            key = ("versus", other, precision, (), mode)
            contenders[key] = _Evaluation(solver, particles, args.device, resident=mode == "resident")
            labels[key] = {"mode": mode} if args.resident else {}
        if args.peers:
            for peer in peers.make_peers(particles.pos, particles.mass, args.softening,
                                         args.threads or hardware_threads()):
                key = ("peer", peer.name, peer.precision, (), "host")
                contenders[key] = peer.evaluate
                notes[key] = {"threads": peer.threads, "impl": peer.note}
        # The ceiling probes take turns with the solvers, so both see the same outside load.
        timings = time_interleaved({**contenders, **{p.key: p.run for p in probes}},
                                   warmup=args.warmup, trials=args.trials)
        limits = device_limits or {p.key: p.operations / timings.pop(p.key).median for p in probes}
        if limits:
            print(f"N = {n}: ceilings in this run (G/s): "
                  + ", ".join(f"{key} {rate / 1e9:.4g}" for key, rate in limits.items()))

        ours, others, at_this_n_peers = [], [], []
        for key, timing in timings.items():
            role, name, precision, _, mode = key
            row = _rate_row(name, precision, n, timing, n * (n - 1), limits)
            if role == "peer":
                row.update(notes[key])
                at_this_n_peers.append(row)
                continue
            row.update(labels[key], **contenders[key].stats(args.warmup))
            (ours if role == "ours" else others).append(row)
        for row in ours:
            for peer in at_this_n_peers:
                row[f"x_{peer['solver']}"] = row["ginteractions_per_s"] / peer["ginteractions_per_s"]
            for other in others:
                if (other["precision"], other.get("mode")) == (row["precision"], row.get("mode")):
                    row[f"x_{other['solver']}"] = row["ginteractions_per_s"] / other["ginteractions_per_s"]
        rows.extend(ours + others)
        peer_rows.extend(at_this_n_peers)
    rows.extend(peer_rows)
    swept = [name for name in configs[0]]
    extra = [*swept, *(["mode"] if args.resident else []),
             *(f"x_{other}" for other in args.versus),
             *(["kernel_s"] if any("kernel_s" in r for r in rows) else [])]
    print(format_table(rows, [c for c in COLUMNS if any(c in r for r in rows)] + extra))
    if configs != [{}]:
        best = min((r for r in rows if r["solver"] == args.solver),
                   key=lambda r: r.get("kernel_s", r["median_s"]))
        print("fastest: " + ", ".join(f"{name} {best[name]}" for name in swept)
              + f" at N = {best['n']}, {best['precision']}")
    return rows


def _sweep_configs(solver: str, sweeps: tuple[str, ...] | None) -> list[dict]:
    """``("tile_size=64,128", "targets=1,2")`` -> every combination as solver options, each
    value checked by the solver's options table."""
    if not sweeps:
        return [{}]
    known = {option.name: option for option in solver_specs()[solver].options}
    axes = []
    for sweep in sweeps:
        name, equals, values = sweep.partition("=")
        if not equals or not values:
            raise InvalidInputError(f"a sweep is NAME=V1,V2,..., got {sweep!r}")
        if name not in known:
            raise InvalidInputError(f"solver {solver!r} has no option {name!r} to sweep; "
                                    f"its options are {sorted(known)}")
        axes.append([(name, known[name].coerce(value)) for value in values.split(",")])
    return [dict(combination) for combination in itertools.product(*axes)]


class _Evaluation:
    """One solver evaluating one particle set, through the host API or resident on the
    solver's device (``bind(...).compute_accelerations``, what a Simulation pays); remembers
    what each call's stats said."""

    def __init__(self, solver, particles, device, *, resident: bool = False):
        self.solver = solver
        self.device = device or ""
        self.pos = particles.pos.astype(solver.dtype)
        self.mass = particles.mass.astype(solver.dtype)
        self.resident = solver.bind(particles).compute_accelerations if resident else None
        self.kernel_seconds: list[float | None] = []

    def __call__(self):
        if self.resident:
            self.resident()
        else:
            self.solver.accelerations(self.pos, self.mass)
        self.kernel_seconds.append(self.solver.last_stats.get("kernel_s"))

    def stats(self, warmup: int) -> dict:
        last = self.solver.last_stats
        impl = last.get("simd", last.get("device", self.device))
        stats = {"threads": last.get("threads"), "impl": impl}
        timed = sorted(s for s in self.kernel_seconds[warmup:] if s is not None)
        if timed:
            stats["kernel_s"] = timed[len(timed) // 2]
        return stats


def _solver_options(args, name: str, precision: str) -> dict:
    """The bench's solver options that solver ``name`` has (``--device`` is not cpu-direct's)."""
    options = {"precision": precision, "softening": args.softening}
    for option in ("threads", "device", "simd"):
        if getattr(args, option) is not None:
            options[option] = getattr(args, option)
    if name == args.solver:
        return options
    known = {o.name for o in solver_specs()[name].options}
    return {key: value for key, value in options.items() if key in known}


def _cpu_probes(args) -> list[ceilings.Probe]:
    """The machine's ceilings: probes at the widest SIMD level, whatever level --simd runs."""
    threads = args.threads or hardware_threads()
    return ceilings.make_probes(threads=threads, level=available_simd_levels()[-1],
                                trial_seconds=args.ceiling_seconds, read=False)


def _rate_row(solver: str, precision: str, n: int, timing, interactions: int,
              limits: dict[str, float]) -> dict:
    per_second = interactions / timing.median
    row = {"solver": solver, "precision": precision, "n": n, **timing.summary(),
           "ginteractions_per_s": per_second / 1e9,
           "gflops": per_second * FLOP_PER_INTERACTION / 1e9}
    for column, key, numerator in (("fma_fraction", f"fma_{precision}", row["gflops"] * 1e9),
                                   ("sqrt_div_fraction", f"sqrt_div_{precision}", per_second),
                                   ("rsqrt_fraction", f"rsqrt_estimate_{precision}", per_second)):
        if limits.get(key):
            row[column] = numerator / limits[key]
    return row
