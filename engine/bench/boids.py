"""``orrery bench boids``: milliseconds per flocking step against N for each neighbour search
and device, a work-group sweep on devices, cell width 1x against 2x, and where a step's time
goes (grid with the sort's share, gather, rules), with the harness's medians and spreads.

The flock keeps the density of the ``murmuration`` preset (100,000 boids in a box of 150) at
every N unless ``--world`` fixes the box, so the neighbour count per boid stays the same and
time per step should grow as N for the grids and N^2 for the naive search. Each trial runs
``--steps`` steps (a device is synchronised at its end) and reports the time per step.
"""

from __future__ import annotations

import argparse

import numpy as np

from ..flock import CELL_WIDTHS, SEARCHES, FlockParameters, FlockSimulation, initial_flock
from ..flock._device import DEFAULT_GROUP
from .harness import format_table, time_trials

HELP = "boids: ms per step vs N per search and device, work-group sweep, cell width, sort share"

# Boids per unit volume of the murmuration preset (assets/scenarios/murmuration.toml).
DENSITY = 100_000 / 150.0**3
DT = 0.2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 30_000, 100_000, 300_000],
                        help="boid counts (default: 10000 30000 100000 300000)")
    parser.add_argument("--device", nargs="+", default=["cpu"],
                        help="where to run: 'cpu' and/or device strings such as cuda:0, sycl:cpu "
                             "(default: cpu)")
    parser.add_argument("--search", nargs="+", choices=SEARCHES, default=list(SEARCHES),
                        help="neighbour searches (default: all three)")
    parser.add_argument("--cell-width", type=int, nargs="+", choices=CELL_WIDTHS,
                        default=list(CELL_WIDTHS), help="cell widths in rule distances (default: 1 2)")
    parser.add_argument("--group", type=int, nargs="+", default=[DEFAULT_GROUP],
                        help=f"work-group sizes on devices: more than one is a sweep "
                             f"(default: {DEFAULT_GROUP})")
    parser.add_argument("--naive-max-n", type=int, default=30_000,
                        help="largest N the O(N^2) naive search is timed at (default: 30000)")
    parser.add_argument("--world", type=float, default=None,
                        help="fix the box side instead of keeping the density (default: keep it)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all)")
    parser.add_argument("--simd", choices=("scalar", "avx2", "avx512"), default=None,
                        help="CPU SIMD level (default: ORRERY_SIMD, else the widest)")
    parser.add_argument("--steps", type=int, default=5, help="steps per trial (default: 5)")
    parser.add_argument("--trials", type=int, default=7, help="timed trials (default: 7)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed warm-up trials (default: 2)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the initial flock")


def world_for(n: int, args) -> float:
    return args.world if args.world else float((n / DENSITY) ** (1 / 3))


def measure(n: int, device: str, search: str, cell_width: int, group: int, args) -> dict:
    """One row: the time per step (median and spread over trials) and the last step's phases."""
    rules = FlockParameters(world=world_for(n, args), separation_radius=2.0, alignment_weight=0.8,
                            cohesion_weight=0.03, search=search, cell_width=cell_width)
    sim = FlockSimulation(initial_flock(n, seed=args.seed, rules=rules), rules, dt=DT,
                          device=device, threads=args.threads, simd=args.simd, group=group)

    def trial():
        sim.step(args.steps)
        sim.synchronize()

    timing = time_trials(trial, warmup=args.warmup, trials=args.trials)
    phases = sim.timing
    per_step = timing.median / args.steps
    total = sum(phases[name] for name in ("grid", "gather", "rules"))
    return {"table": "boids", "device": device, "backend": sim.describe(),
            "search": search, "cell_width": cell_width,
            "group": group if device != "cpu" else "", "n": n, "world": rules.world,
            "grid_cells": rules.grid_size(n), "ms_per_step": 1e3 * per_step,
            "iqr_ms": 1e3 * timing.iqr / args.steps, "drift": timing.drift,
            "trials": len(timing.samples), "steps_per_s": 1.0 / per_step,
            **{f"{name}_ms": 1e3 * seconds for name, seconds in phases.items()},
            "sort_share": phases["sort"] / total if total > 0 else float("nan")}


def run(args) -> list[dict]:
    rows = []
    for device in args.device:
        groups = args.group if device != "cpu" else [None]
        for n in sorted(args.n):
            for search in args.search:
                if search == "naive" and n > args.naive_max_n:
                    continue
                widths = [1] if search == "naive" else args.cell_width  # no grid to size
                for cell_width in widths:
                    for group in groups:
                        rows.append(measure(n, device, search, cell_width, group or DEFAULT_GROUP,
                                            args))
                        print(format_table(rows[-1:], COLUMNS).splitlines()[-1]
                              if len(rows) > 1 else format_table(rows, COLUMNS), flush=True)
    print("(time per step is the median over trials; phases are the last step's; "
          "the machine may be shared: compare ratios within one run)")
    return rows


COLUMNS = ["device", "search", "cell_width", "group", "n", "ms_per_step", "iqr_ms", "drift",
           "steps_per_s", "grid_ms", "sort_ms", "gather_ms", "rules_ms", "sort_share"]
