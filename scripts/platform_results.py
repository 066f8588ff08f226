"""Results every platform must reproduce, written on one machine and compared with another's
(scripts/arm64.sh: x86-64 against AArch64 under emulation).

Bit for bit where the code promises it: the flock's step (fixed-point sums, ADR 0095) for every
search, and the FMM's interaction lists (built from the tree alone). Within a stated tolerance
elsewhere: forces, whose last bits depend on whether a level fuses multiply-adds and on how it
computes 1/sqrt (the tolerances are in TOLERANCE, as the largest relative difference of an
acceleration vector).

    python scripts/platform_results.py write OUT.npz
    python scripts/platform_results.py compare EXPECTED.npz GOT.npz
"""

from __future__ import annotations

import argparse
import platform
import sys

import numpy as np

from orrery.engine import ics, make_solver
from orrery.engine.cpu_features import simd_level
from orrery.engine.flock import SEARCHES, FlockParameters, initial_flock
from orrery.engine.flock._cpu import CpuFlock

FLOCK_RULES = FlockParameters(world=60.0)
FLOCK_BOIDS = 3000
FLOCK_STEPS = 5
FLOCK_DT = 0.2
BODIES = 4096
SOFTENING = 0.01
# Largest |a - a_expected| / |a_expected| between two platforms. f64: double rounding against a
# fused multiply-add over 4096 terms; f32 the same at float's precision.
TOLERANCE = {"direct_f64": 1e-12, "direct_f32": 1e-5, "fmm_f64": 1e-12}


def exact_results() -> dict[str, np.ndarray]:
    results = {}
    start = initial_flock(FLOCK_BOIDS, seed=3, rules=FLOCK_RULES)
    for search in SEARCHES:
        rules = FLOCK_RULES.with_changes(search=search)
        flock = CpuFlock(start.pos, start.vel)
        constants = rules.constants(FLOCK_BOIDS, FLOCK_DT)
        for _ in range(FLOCK_STEPS):
            flock.step(constants, rules.search, rules.cell_width)
        pos, vel = flock.state()
        results[f"flock_{search}_pos"], results[f"flock_{search}_vel"] = pos, vel
    particles = ics.plummer(BODIES, seed=3)
    fmm = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, theta=0.5, order=4)
    fmm.accelerations(particles.pos, particles.mass)
    for key, value in fmm.last_lists().items():
        if isinstance(value, np.ndarray):
            results[f"fmm_lists_{key}"] = value
    return results


def close_results() -> dict[str, np.ndarray]:
    particles = ics.plummer(BODIES, seed=3)
    results = {}
    for precision in ("f64", "f32"):
        solver = make_solver("cpu-direct", precision=precision, softening=SOFTENING)
        results[f"direct_{precision}"] = solver.accelerations(particles.pos, particles.mass)
    fmm = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, theta=0.5, order=4)
    results["fmm_f64"] = fmm.accelerations(particles.pos, particles.mass)
    return results


def write(path: str) -> None:
    arrays = {f"exact/{k}": v for k, v in exact_results().items()}
    arrays.update({f"close/{k}": v for k, v in close_results().items()})
    arrays["machine"] = np.array(f"{platform.machine()}, SIMD {simd_level()['level']}")
    np.savez(path, **arrays)
    print(f"wrote {len(arrays) - 1} results from {arrays['machine']} to {path}")


def compare(expected_path: str, got_path: str) -> int:
    expected, got = np.load(expected_path), np.load(got_path)
    print(f"expected: {expected['machine']}; got: {got['machine']}")
    failures = 0
    for key in sorted(k for k in expected.files if k != "machine"):
        kind, name = key.split("/", 1)
        if key not in got.files:
            print(f"  {name}: missing")
            failures += 1
            continue
        a, b = got[key], expected[key]
        if kind == "exact":
            same = a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
            print(f"  {name}: {'bit for bit' if same else 'DIFFERS'}")
        else:
            difference = float(np.max(np.linalg.norm(a - b, axis=1) / np.linalg.norm(b, axis=1)))
            same = difference <= TOLERANCE[name]
            print(f"  {name}: largest relative difference {difference:.2e} "
                  f"(tolerance {TOLERANCE[name]:.0e}){'' if same else ': OUTSIDE'}")
        failures += not same
    print(f"{failures} of {len(expected.files) - 1} results differ")
    return 1 if failures else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("write").add_argument("out")
    comparison = commands.add_parser("compare")
    comparison.add_argument("expected")
    comparison.add_argument("got")
    args = parser.parse_args(argv)
    if args.command == "write":
        write(args.out)
        return 0
    return compare(args.expected, args.got)


if __name__ == "__main__":
    sys.exit(main())
