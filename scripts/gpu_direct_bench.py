"""gpu-direct on one device: ceilings, a tile-size x targets sweep, throughput at large N
(kernel time and end-to-end per evaluation, median and IQR) and the crossover against cpu-direct.

Usage: python scripts/gpu_direct_bench.py --device cuda:0 [--json out.json] [--skip-sweep]
It uses the same solver API as ``orrery bench direct``; the sweep and the crossover table are
what the generic benchmark does not do. Rates count N^2 interactions (the self term included, as
the kernel computes it) and 20 flop per interaction.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from orrery.engine import ics, make_solver
from orrery.bench.harness import FLOP_PER_INTERACTION, Timing, format_table, time_trials
from orrery.engine.compute import ceilings, open_device


def _kernel_and_total(solver, particles, trials):
    """Per evaluation: kernel seconds, host-API seconds (upload + kernel + download) and
    device-resident seconds (a Simulation's force evaluation), each a Timing."""
    kernel = []

    def host_call():
        solver.accelerations(particles.pos, particles.mass)
        kernel.append(solver.last_stats["kernel_seconds"])

    total = time_trials(host_call, warmup=1, trials=trials)
    state = solver.bind(particles)
    resident = time_trials(state.compute_accelerations, warmup=1, trials=trials)
    return Timing(tuple(kernel[-trials:])), total, resident


def _row(n, kernel, total, resident, **extra):
    rate = n * n / kernel.median
    return {**extra, "n": n, "kernel_ms": kernel.median * 1e3, "kernel_iqr_ms": kernel.iqr * 1e3,
            "host_call_ms": total.median * 1e3, "host_call_iqr_ms": total.iqr * 1e3,
            "resident_ms": resident.median * 1e3, "resident_iqr_ms": resident.iqr * 1e3,
            "ginter_s": rate * 1e-9, "gflop_s": rate * FLOP_PER_INTERACTION * 1e-9}


def sweep(device, n, trials):
    particles = ics.plummer(n, seed=1)
    rows = []
    for targets in (1, 2, 4):
        for tile in (64, 128, 256, 512, 1024):
            solver = make_solver("gpu-direct", device=device, tile_size=tile, targets=targets)
            kernel, total, resident = _kernel_and_total(solver, particles, trials)
            rows.append(_row(n, kernel, total, resident, tile=tile, targets=targets))
            print(format_table(rows[-1:], list(rows[-1])), flush=True)
    return rows


def throughput(device, sizes, tile, targets, precision, trials):
    rows = []
    for n in sizes:
        particles = ics.plummer(n, seed=2)
        solver = make_solver("gpu-direct", device=device, tile_size=tile, targets=targets,
                             precision=precision)
        kernel, total, resident = _kernel_and_total(solver, particles, trials)
        rows.append(_row(n, kernel, total, resident, precision=precision,
                         tile=solver.last_stats["tile_size"], targets=solver.last_stats["targets"]))
        print(format_table(rows[-1:], list(rows[-1])), flush=True)
    return rows


def crossover(device, sizes, trials):
    rows = []
    for n in sizes:
        particles = ics.plummer(n, seed=3)
        gpu = make_solver("gpu-direct", device=device)  # the automatic launch configuration
        cpu = make_solver("cpu-direct", precision="f32")
        kernel, total, resident = _kernel_and_total(gpu, particles, trials)
        cpu_time = time_trials(lambda: cpu.accelerations(particles.pos, particles.mass),
                               warmup=1, trials=trials)
        row = _row(n, kernel, total, resident, tile=gpu.last_stats["tile_size"],
                   targets=gpu.last_stats["targets"])
        row.update(cpu_ms=cpu_time.median * 1e3, cpu_iqr_ms=cpu_time.iqr * 1e3,
                   speedup_host_call=cpu_time.median / total.median,
                   speedup_resident=cpu_time.median / resident.median)
        rows.append(row)
        print(format_table(rows[-1:], list(rows[-1])), flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--sweep-n", type=int, default=262144)
    parser.add_argument("--sizes", type=int, nargs="*", default=[262144, 524288, 1048576])
    parser.add_argument("--f64-sizes", type=int, nargs="*", default=[65536, 262144])
    parser.add_argument("--crossover", type=int, nargs="*",
                        default=[128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768])
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--skip-sweep", action="store_true",
                        help="measure only the automatic configuration (throughput, crossover)")
    args = parser.parse_args(argv)
    context = open_device(args.device)
    print(context.info.describe(), flush=True)
    start = time.perf_counter()
    result = {"device": context.info.describe(), "ceilings": ceilings.measure(context)}
    print(json.dumps(result["ceilings"], indent=1), flush=True)
    tile = targets = None  # the automatic (default) configuration unless the sweep runs
    if not args.skip_sweep:
        result["sweep"] = sweep(context.info.spec, args.sweep_n, args.trials)
        best = min(result["sweep"], key=lambda row: row["kernel_ms"])
        tile, targets = best["tile"], best["targets"]
        print(f"best: tile {tile}, targets {targets}", flush=True)
    result["throughput"] = throughput(context.info.spec, args.sizes, tile, targets, "f32",
                                      args.trials)
    if context.info.fp64:
        result["throughput"] += throughput(context.info.spec, args.f64_sizes, tile, targets,
                                           "f64", args.trials)
    result["crossover"] = crossover(context.info.spec, args.crossover, args.trials)
    result["seconds"] = time.perf_counter() - start
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
