"""``orrery bench boids``: milliseconds per flocking step against N for each neighbour search
and device, a work-group sweep on devices, cell width 1x against 2x, and where a step's time
goes (grid with the sort's share, gather, rules), with the harness's medians and spreads.

The flock keeps the density of the ``murmuration`` preset (100,000 boids in a box of 150) at
every N unless ``world`` fixes the box, so the neighbour count per boid stays the same and
time per step should grow as N for the grids and N^2 for the naive search. Each trial runs
``steps`` steps (a device is synchronised at its end) and reports the time per step.

Phases are device event times of each trial's last step (medians over the trials; on the
coherent search on a device "sort" is the scan of the per-cell counts and "gather" the
placement, ADR 0158); ``gap_ms``
is the wall time per step less their sum (launch and host cost the device waits for). On a
device a second table, "where the time goes", gives per phase (keys + cell table, sort,
gather, rules) its share, the bytes it moves by DeviceFlock.traffic's model, the bandwidth
that is, and the fraction of the device's read ceiling (engine/tuning/ceilings.py, measured
at the start).
"""

from __future__ import annotations

import numpy as np

from ..app.text_table import format_table
from ..engine.flock import CELL_WIDTHS, SEARCHES, FlockParameters, FlockSimulation, initial_flock
from ..engine.flock._device import DEFAULT_GROUP
from ..engine.options import SIMD, THREADS, Option
from ..engine.tuning.ceilings import read_bandwidth
from ..engine.tuning.timing import time_trials
from ._options import SEED, BenchmarkSpec, several

HELP = "boids: ms per step vs N per search and device, work-group sweep, cell width, sort share"

# Boids per unit volume of the murmuration preset (assets/scenarios/murmuration.toml).
DENSITY = 100_000 / 150.0**3
DT = 0.2


SPEC = BenchmarkSpec("boids", HELP, options=(
    several(Option("n", int, None, "boid counts", minimum=1), (10_000, 30_000, 100_000, 300_000)),
    several(Option("device", str, None, "where to run: 'cpu' and/or device strings such as "
                                        "cuda:0, sycl:cpu"), ("cpu",)),
    several(Option("search", str, None, "neighbour searches", choices=SEARCHES), SEARCHES),
    several(Option("cell_width", int, None, "cell widths in rule distances", choices=CELL_WIDTHS),
            CELL_WIDTHS),
    several(Option("group", int, None, "work-group sizes on devices (more than one: a sweep)",
                   minimum=1), (DEFAULT_GROUP,)),
    Option("naive_max_n", int, 30_000, "largest N the O(N^2) naive search is timed at", minimum=1),
    Option("world", float, None, "fix the box side instead of keeping the density",
           minimum=0.0, exclusive_minimum=True),
    THREADS, SIMD,
    Option("steps", int, 5, "steps per trial", minimum=1),
    Option("trials", int, 7, "timed trials", minimum=1),
    Option("warmup", int, 2, "untimed warm-up trials", minimum=0),
    SEED,
))


def world_for(n: int, args) -> float:
    return args.world if args.world else float((n / DENSITY) ** (1 / 3))


def measure(n: int, device: str, search: str, cell_width: int, group: int, args) -> dict:
    """One row: the time per step (median and spread over trials) and the phases (medians of
    each trial's last step) with the bytes they move."""
    rules = FlockParameters(world=world_for(n, args), separation_radius=2.0, alignment_weight=0.8,
                            cohesion_weight=0.03, search=search, cell_width=cell_width)
    sim = FlockSimulation(initial_flock(n, seed=args.seed, rules=rules), rules, dt=DT,
                          device=device, threads=args.threads, simd=args.simd, group=group)
    phase_samples = []

    def trial():
        sim.step(args.steps)
        sim.synchronize()
        phase_samples.append(sim.timing)

    timing = time_trials(trial, warmup=args.warmup, trials=args.trials)
    measured = phase_samples[args.warmup:]
    phases = {name: float(np.median([sample[name] for sample in measured]))
              for name in measured[0]}
    per_step = timing.median / args.steps
    total = sum(phases[name] for name in ("grid", "gather", "rules"))
    return {"table": "boids", "device": device, "backend": sim.describe(),
            "search": search, "cell_width": cell_width,
            "group": group if device != "cpu" else "", "n": n, "world": rules.world,
            "grid_cells": rules.grid_size(n), "ms_per_step": 1e3 * per_step,
            "iqr_ms": 1e3 * timing.iqr / args.steps, "drift": timing.drift,
            "trials": len(timing.samples), "steps_per_s": 1.0 / per_step,
            **{f"{name}_ms": 1e3 * seconds for name, seconds in phases.items()},
            "gap_ms": 1e3 * (per_step - total),
            "sort_share": phases["sort"] / total if total > 0 else float("nan"),
            **{f"{name}_bytes": count for name, count in sim.traffic.items()}}


# The breakdown's phases: (name, the row's time key or keys, the row's bytes key or keys).
PHASES = (("keys+table", ("grid_ms", "-sort_ms"), ("grid_bytes", "-sort_bytes")),
          ("sort", ("sort_ms",), ("sort_bytes",)),
          ("gather", ("gather_ms",), ("gather_bytes",)),
          ("rules", ("rules_ms",), ("rules_bytes",)))


def _signed_sum(row: dict, keys) -> float:
    return sum(-row[key[1:]] if key.startswith("-") else row[key] for key in keys)


def breakdown(row: dict, read_ceiling: float) -> list[dict]:
    """Where one device row's step time goes: per phase its share of the device time, the
    bytes it moves, the bandwidth that is, and its fraction of the read ceiling (bytes/s)."""
    total_ms = sum(row[key] for key in ("grid_ms", "gather_ms", "rules_ms"))
    rows = []
    for name, time_keys, byte_keys in PHASES:
        ms, moved = _signed_sum(row, time_keys), _signed_sum(row, byte_keys)
        if ms <= 0 and moved == 0:
            continue  # a phase this search does not run
        rate = moved / (ms * 1e-3) if ms > 0 else float("nan")
        rows.append({"table": "boids-phases", **{key: row[key] for key in (
            "device", "search", "cell_width", "group", "n")},
            "phase": name, "ms": ms, "share": ms / total_ms if total_ms > 0 else float("nan"),
            "mb": moved / 1e6, "gb_per_s": rate / 1e9, "of_read_ceiling": rate / read_ceiling})
    return rows


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    rows, phase_rows = [], []
    for device in args.device:
        groups = args.group if device != "cpu" else [None]
        ceiling = read_bandwidth(device) if device != "cpu" else None
        if ceiling:
            print(f"{device}: read ceiling {ceiling / 1e9:.4g} GB/s", flush=True)
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
                        if ceiling:
                            phase_rows += breakdown(rows[-1], ceiling)
    print("(time per step is the median over trials; phases are medians of each trial's last "
          "step; the machine may be shared: compare ratios within one run)")
    if phase_rows:
        print("where the time goes (bytes by DeviceFlock.traffic's model; neighbour reads the "
              "caches serve are not counted):")
        print(format_table(phase_rows, PHASE_COLUMNS))
    return rows + phase_rows


COLUMNS = ["device", "search", "cell_width", "group", "n", "ms_per_step", "iqr_ms", "drift",
           "steps_per_s", "grid_ms", "sort_ms", "gather_ms", "rules_ms", "gap_ms", "sort_share"]
PHASE_COLUMNS = ["device", "search", "cell_width", "group", "n", "phase", "ms", "share", "mb",
                 "gb_per_s", "of_read_ceiling"]
