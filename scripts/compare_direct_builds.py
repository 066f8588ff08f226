"""Compare builds of the cpu-direct kernel, and pytreegrav, per core and robust to other jobs.

Each argument is a built ``_native*.so`` (e.g. one copied aside before a kernel change). Every
build and pytreegrav's numba brute force run with one thread, trial by trial in turn, and each
call is timed in CPU seconds of this process (``time.process_time``), which time slicing by other
jobs does not inflate the way it inflates wall time. Prints the median per-core rate of each and
its ratio to pytreegrav and to the first build.

    python scripts/compare_direct_builds.py OLD.so NEW.so [--n 8192] [--trials 9]
"""

from __future__ import annotations

import argparse
import importlib.util
import time

import numpy as np

from orrery.engine import ics
from orrery.bench import peers


def load_build(path: str, index: int):
    # A distinct package name per build: the same module name twice would return the first.
    spec = importlib.util.spec_from_file_location(f"build{index}._native", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("builds", nargs="+", help="paths of built _native extension modules")
    parser.add_argument("--n", type=int, default=8192, help="particles (default: 8192)")
    parser.add_argument("--trials", type=int, default=9, help="timed trials (default: 9)")
    args = parser.parse_args()

    particles = ics.make("plummer", args.n, seed=1)
    calls = {}
    for precision, dtype in (("f32", np.float32), ("f64", np.float64)):
        pos = np.ascontiguousarray(particles.pos, dtype)
        mass = np.ascontiguousarray(particles.mass, dtype)
        for index, path in enumerate(args.builds):
            direct = getattr(load_build(path, index), f"direct_accelerations_{precision}")
            calls[(f"build {index}", precision)] = (
                lambda direct=direct, pos=pos, mass=mass: direct(pos, mass, 0.01, 1))
    for peer in peers.make_peers(particles.pos, particles.mass, 0.01, 1):
        if peer.name == "pytreegrav-bruteforce":
            calls[("pytreegrav", "f64")] = peer.evaluate

    seconds = {key: [] for key in calls}
    for trial in range(args.trials + 2):  # the first two rounds warm up and are discarded
        for key, call in calls.items():
            start = time.process_time()
            call()
            if trial >= 2:
                seconds[key].append(time.process_time() - start)

    median = {key: float(np.median(values)) for key, values in seconds.items()}
    interactions = args.n * (args.n - 1)
    for index, path in enumerate(args.builds):
        print(f"build {index}: {path}")
    for (name, precision), value in median.items():
        low, high = np.percentile(seconds[(name, precision)], [25, 75])
        line = (f"{name:10s} {precision}: {value * 1e3:8.2f} ms CPU, rel. IQR "
                f"{(high - low) / value:5.1%}, {interactions / value / 1e9:6.3f} G int/s per core")
        if ("pytreegrav", "f64") in median:
            line += f", x{median[('pytreegrav', 'f64')] / value:6.2f} pytreegrav"
        if name != "build 0":
            line += f", x{median[('build 0', precision)] / value:5.3f} build 0"
        print(line)


if __name__ == "__main__":
    main()
