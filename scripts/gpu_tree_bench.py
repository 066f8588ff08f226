"""gpu-tree on one device: accuracy against cost (opening angle per walk), throughput with the
per-stage breakdown at large N, coherent against independent walk, leaf-capacity sweep, and the
crossovers against gpu-direct and cpu-tree.

Usage: python scripts/gpu_tree_bench.py --device cuda:0 --json out.json [--phases ...]
A walk is named ``coherent``, ``independent`` or ``group``, with ``/body`` for the per-body
opening test (``coherent/body``; default: the group box test, cpu-tree's, ADR-0071).
The accuracy phase (N = 2^20) picks, per walk, the largest opening angle whose error stays within
--target-error; the later phases run those configurations, fastest first.
Errors are RMS relative errors against float64 direct sums for a random sample of targets
(``sampled_reference.cl``). Times are per force evaluation of a device-resident Simulation state
(``bind(...).compute_accelerations``): ``wall_ms`` is host wall-clock time per evaluation (the
tree's two small read-backs and the counters included), the ``*_ms`` stages are device time from
the kernels' events. Medians over trials, IQR beside them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from orrery.engine import ics, make_solver
from orrery.engine.accuracy import rms_relative_error
from orrery.engine.bench.harness import format_table, time_trials
from orrery.engine.compute import open_device

STAGES = ("box", "keys", "sort", "build", "moments", "walk", "reorder")
SAMPLE = 4096
CHUNKS = 128


def walk_options(name: str) -> dict:
    """``"coherent/body"`` -> ``{"walk": "coherent", "opening": "body"}``."""
    walk, _, opening = name.partition("/")
    return {"walk": walk, "opening": opening or "group"}


def sampled_reference(context, particles, softening, sample):
    """Float64 accelerations of the bodies ``sample`` (indices), from every body."""
    n = particles.n
    body = np.zeros((n, 4))
    body[:, :3], body[:, 3] = particles.pos, particles.mass
    program = context.build(["sampled_reference.cl"], defines={"REAL_BITS": 64, "CHUNKS": CHUNKS})
    device_body = context.upload(body)
    targets = context.upload(sample.astype(np.int32))
    partial = context.empty((len(sample) * CHUNKS, 4), np.float64)
    items = len(sample) * CHUNKS
    program.kernel("sampled_accelerations").launch(
        -(-items // 128) * 128, 128, device_body, np.int32(n), targets, np.int32(len(sample)),
        np.float64(softening ** 2), partial)
    return partial.download().reshape(len(sample), CHUNKS, 4).sum(axis=1)[:, :3]


def evaluate(solver, particles, trials):
    """Wall time and per-stage device time per evaluation of a bound state, and its stats."""
    state = solver.bind(particles)
    stages = {stage: [] for stage in STAGES}

    def step():
        state.compute_accelerations()
        for stage in STAGES:
            stages[stage].append(solver.last_stats[f"{stage}_s"])

    wall = time_trials(step, warmup=1, trials=trials)
    row = {"wall_ms": wall.median * 1e3, "wall_iqr_ms": wall.iqr * 1e3}
    for stage in STAGES:
        row[f"{stage}_ms"] = float(np.median(stages[stage][-trials:])) * 1e3
    row["sort_build_share"] = (row["sort_ms"] + row["build_ms"]) / row["wall_ms"]
    row["interactions_per_particle"] = solver.last_stats["interactions_per_particle"]
    row["nodes"] = solver.last_stats["nodes"]
    acc = state.acc.download()[:particles.n, :3]
    return row, acc


def accuracy(device, n, thetas, walks, trials, softening):
    particles = ics.plummer(n, seed=1)
    context = open_device(device)
    sample = np.random.default_rng(0).choice(n, SAMPLE, replace=False)
    start = time.perf_counter()
    reference = sampled_reference(context, particles, softening, sample)
    print(f"sampled reference for N={n}: {time.perf_counter() - start:.2f} s", flush=True)
    rows = []
    for walk, quadrupole in walks:
        for theta in thetas:
            solver = make_solver("gpu-tree", device=device, theta=theta, quadrupole=quadrupole,
                                 softening=softening, **walk_options(walk))
            row, acc = evaluate(solver, particles, trials)
            row = {"n": n, "walk": walk, "quadrupole": quadrupole, "theta": theta,
                   "rms_error": rms_relative_error(acc[sample], reference), **row}
            rows.append(row)
            print(format_table([row], list(row)), flush=True)
    return rows


def throughput(device, sizes, configs, trials, softening, leaf_capacity=16, check_error=True):
    rows = []
    context = open_device(device)
    for n in sizes:
        start = time.perf_counter()
        particles = ics.plummer(n, seed=2)
        print(f"N={n}: initial conditions {time.perf_counter() - start:.1f} s", flush=True)
        sample = np.random.default_rng(0).choice(n, SAMPLE, replace=False)
        reference = sampled_reference(context, particles, softening, sample) if check_error else None
        for walk, quadrupole, theta in configs:
            solver = make_solver("gpu-tree", device=device, theta=theta, quadrupole=quadrupole,
                                 softening=softening, leaf_capacity=leaf_capacity,
                                 **walk_options(walk))
            try:
                row, acc = evaluate(solver, particles, trials)
            except Exception as error:  # out of device memory is a result at the largest N
                print(f"N={n} {walk}: {type(error).__name__}: {error}", flush=True)
                rows.append({"n": n, "walk": walk, "error": str(error)[:200]})
                continue
            row = {"n": n, "walk": walk, "quadrupole": quadrupole, "theta": theta,
                   "leaf_capacity": leaf_capacity, **row}
            if reference is not None:
                row["rms_error"] = rms_relative_error(acc[sample], reference)
            rows.append(row)
            print(format_table([row], list(row)), flush=True)
            del solver
    return rows


def crossover(device, sizes, config, trials, softening, cpu_tree_max):
    rows = []
    walk, quadrupole, theta = config
    for n in sizes:
        particles = ics.plummer(n, seed=3)
        row = {"n": n}
        tree = make_solver("gpu-tree", device=device, theta=theta, quadrupole=quadrupole,
                           softening=softening, **walk_options(walk))
        row["gpu_tree_ms"] = evaluate(tree, particles, trials)[0]["wall_ms"]
        direct = make_solver("gpu-direct", device=device, softening=softening)
        state = direct.bind(particles)
        row["gpu_direct_ms"] = time_trials(state.compute_accelerations, warmup=1,
                                           trials=trials).median * 1e3
        if n <= cpu_tree_max:
            cpu = make_solver("cpu-tree", theta=theta, quadrupole=quadrupole, softening=softening)
            row["cpu_tree_ms"] = time_trials(lambda: cpu.accelerations(particles.pos, particles.mass),
                                             warmup=1, trials=max(3, trials // 2)).median * 1e3
        rows.append(row)
        print(format_table([row], list(row)), flush=True)
    return rows


def chosen_configs(rows, target):
    """Per (walk, quadrupole): the largest measured theta whose error is within ``target``."""
    best = {}
    for row in rows:
        key = (row["walk"], row["quadrupole"])
        if row["rms_error"] <= target and row["theta"] > best.get(key, (None, -1.0))[1]:
            best[key] = (row["wall_ms"], row["theta"])
    return sorted(((wall, walk, quad, theta) for (walk, quad), (wall, theta) in best.items()))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--phases", nargs="*", default=["accuracy", "throughput", "leaf", "crossover"])
    parser.add_argument("--accuracy-n", type=int, default=1 << 20)
    parser.add_argument("--target-error", type=float, default=1e-3)
    parser.add_argument("--thetas", type=float, nargs="*",
                        default=[0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8])
    parser.add_argument("--walks", nargs="*",
                        default=["coherent:0", "coherent/body:0", "coherent:1", "group:0"],
                        help="walk:quadrupole pairs for the accuracy phase")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1 << 20, 10_000_000])
    parser.add_argument("--large-sizes", type=int, nargs="*", default=[100_000_000],
                        help="sizes run only for the fastest configuration and the coherent walk")
    parser.add_argument("--configs", nargs="*", default=None,
                        help="walk:quadrupole:theta (default: from the accuracy phase, the largest "
                             "theta within --target-error for each walk, and the independent walk "
                             "at the coherent walk's theta)")
    parser.add_argument("--leaf-sizes", type=int, nargs="*", default=[8, 16, 32, 64])
    parser.add_argument("--crossover", type=int, nargs="*",
                        default=[4096, 16384, 65536, 262144, 1 << 20])
    parser.add_argument("--cpu-tree-max", type=int, default=1 << 20)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--softening", type=float, default=0.01)
    args = parser.parse_args(argv)
    context = open_device(args.device)
    print(context.info.describe(), flush=True)
    results = {"device": context.info.describe(), "args": vars(args)}
    configs = None
    if args.configs:
        configs = [(w, bool(int(q)), float(t)) for w, q, t in (c.split(":") for c in args.configs)]
    for phase in args.phases:
        start = time.perf_counter()
        if phase == "accuracy":
            walks = [(w, bool(int(q))) for w, q in (c.split(":") for c in args.walks)]
            results[phase] = accuracy(args.device, args.accuracy_n, args.thetas, walks,
                                      args.trials, args.softening)
            chosen = chosen_configs(results[phase], args.target_error)
            results["chosen"] = chosen
            print("chosen (wall_ms, walk, quadrupole, theta):", chosen, flush=True)
            if configs is None:
                configs = [(walk, quad, theta) for _, walk, quad, theta in chosen]
                coherent = [c for c in configs if c[:2] == ("coherent", False)]
                configs += [("independent", False, c[2]) for c in coherent]
        elif phase == "throughput":
            results[phase] = throughput(args.device, args.sizes, configs, args.trials, args.softening)
            large = [configs[0]] + [c for c in configs[1:] if c[:2] == ("coherent", False)]
            results[phase] += throughput(args.device, args.large_sizes, large, 3, args.softening)
        elif phase == "leaf":
            results[phase] = [row for leaf in args.leaf_sizes for row in throughput(
                args.device, [args.sizes[0]], configs[:1], args.trials, args.softening,
                leaf_capacity=leaf)]
        elif phase == "crossover":
            results[phase] = crossover(args.device, args.crossover, configs[0], args.trials,
                                       args.softening, args.cpu_tree_max)
        else:
            parser.error(f"unknown phase {phase!r}")
        print(f"phase {phase}: {time.perf_counter() - start:.1f} s", flush=True)
        if args.json:
            with open(args.json, "w") as handle:
                json.dump(results, handle, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
