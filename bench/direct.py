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

from ..engine.cpu_features import available_simd_levels
from ..engine import ics
from ..engine.solvers import make_solver
from ..engine.solvers._options import DEVICE, PRECISION, SIMD, SOFTENING, THREADS, Option
from . import ceilings, peers
from ._options import IC, SEED, BenchmarkSpec, several
from .harness import FLOP_PER_INTERACTION, format_table, time_interleaved

HELP = "time a direct-summation solver: interactions/s, Gflop/s, fractions of measured ceilings"

COLUMNS = ["solver", "precision", "n", "threads", "impl", "median_s", "iqr_s", "drift",
           "ginteractions_per_s", "gflops", "fma_fraction", "sqrt_div_fraction", "rsqrt_fraction",
           "x_pytreegrav-bruteforce", "x_rebound-basic"]


SPEC = BenchmarkSpec("direct", HELP, options=(
    several(Option("n", int, None, "particle count", minimum=2), (8192,),
            "particle counts (an interaction needs two particles)"),
    several(PRECISION, ("f32", "f64")),
    Option("solver", str, "cpu-direct", "solver name"),
    THREADS,
    DEVICE,
    SIMD,
    SOFTENING,
    IC,
    SEED,
    Option("trials", int, 7, "timed trials", minimum=1),
    Option("warmup", int, 2, "discarded trials", minimum=0),
    Option("peers", bool, False, "time installed peer codes (pytreegrav, rebound) in the same run"),
    Option("ceilings", bool, True, "measure the ceilings (without them, no fractions)"),
    Option("ceiling_seconds", float, 0.1, "length of one ceiling-probe trial",
           minimum=0.0, exclusive_minimum=True),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    sizes, precisions = args.n, args.precision
    device_limits = ceilings.measure_device(args.device) if args.ceilings and args.device else {}
    # CPU probes judge CPU solvers; a GPU solver's ceilings come from its --device.
    on_cpu = not args.device and not args.solver.startswith("gpu")
    probes = _cpu_probes(args) if args.ceilings and on_cpu else []

    rows, peer_rows = [], []
    for n in sizes:
        particles = ics.make(args.ic, n, seed=args.seed)
        contenders, notes = {}, {}
        for precision in precisions:
            solver = make_solver(args.solver, **_solver_options(args, precision))
            contenders[(args.solver, precision)] = _Evaluation(solver, particles, args.device)
        if args.peers:
            for peer in peers.make_peers(particles.pos, particles.mass, args.softening,
                                         args.threads or ceilings.hardware_threads()):
                contenders[(peer.name, peer.precision)] = peer.evaluate
                notes[peer.name] = (peer.threads, peer.note)
        # The ceiling probes take turns with the solvers, so both see the same outside load.
        timings = time_interleaved({**contenders, **{p.key: p.run for p in probes}},
                                   warmup=args.warmup, trials=args.trials)
        limits = device_limits or {p.key: p.operations / timings.pop(p.key).median for p in probes}
        if limits:
            print(f"N = {n}: ceilings in this run (G/s): "
                  + ", ".join(f"{key} {rate / 1e9:.4g}" for key, rate in limits.items()))

        at_this_n = []
        for (name, precision), timing in timings.items():
            row = _rate_row(name, precision, n, timing, n * (n - 1), limits)
            contender = contenders[(name, precision)]
            if isinstance(contender, _Evaluation):
                row.update(contender.stats(args.warmup))
                at_this_n.append(row)
            else:
                row["threads"], row["impl"] = notes[name]
                peer_rows.append(row)
        for peer in peer_rows[len(peer_rows) - len(notes):]:
            for ours in at_this_n:
                ours[f"x_{peer['solver']}"] = ours["ginteractions_per_s"] / peer["ginteractions_per_s"]
        rows.extend(at_this_n)
    rows.extend(peer_rows)
    print(format_table(rows, [c for c in COLUMNS if any(c in r for r in rows)]
                       + (["kernel_s"] if any("kernel_s" in r for r in rows) else [])))
    return rows


class _Evaluation:
    """One solver evaluating one particle set; remembers what each call's stats said."""

    def __init__(self, solver, particles, device):
        self.solver = solver
        self.device = device or ""
        self.pos = particles.pos.astype(solver.dtype)
        self.mass = particles.mass.astype(solver.dtype)
        self.kernel_seconds: list[float | None] = []

    def __call__(self):
        self.solver.accelerations(self.pos, self.mass)
        self.kernel_seconds.append(self.solver.last_stats.get("kernel_seconds"))

    def stats(self, warmup: int) -> dict:
        last = self.solver.last_stats
        impl = last.get("simd", last.get("device", self.device))
        stats = {"threads": last.get("threads"), "impl": impl}
        timed = sorted(s for s in self.kernel_seconds[warmup:] if s is not None)
        if timed:
            stats["kernel_s"] = timed[len(timed) // 2]
        return stats


def _solver_options(args, precision: str) -> dict:
    options = {"precision": precision, "softening": args.softening}
    for name in ("threads", "device", "simd"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return options


def _cpu_probes(args) -> list[ceilings.Probe]:
    """The machine's ceilings: probes at the widest SIMD level, whatever level --simd runs."""
    threads = args.threads or ceilings.hardware_threads()
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
