"""Evaluates cpu-tree on degenerate particle sets and saves the results (run in a child process
by test_cpu_tree.py, so that a hang fails the test at a timeout instead of stalling the suite).

Usage: python tree_degenerate_cases.py OUT.npz
"""

import sys

import numpy as np

from orrery.engine import ics, make_solver

SOFTENING = 0.01


def cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(5)
    one_point = np.tile([1.0, -2.0, 3.0], (300, 1))
    line = np.zeros((2000, 3))
    line[:, 0] = rng.uniform(-1.0, 1.0, 2000)
    clump = ics.plummer(1000, seed=6).pos
    two_clumps = np.concatenate([clump, clump * 0.5 + [1e6, 0.0, 0.0]])
    two = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]])
    # Pairs closer than a 2^-21 key cell: same key, so they share one over-capacity leaf.
    near_pairs = np.repeat(ics.plummer(200, seed=8).pos, 2, axis=0)
    near_pairs[1::2] += 1e-9
    sets = {"one_point": one_point, "line": line, "two_clumps": two_clumps, "single": np.array([[0.5, 0.5, 0.5]]),
            "two": two, "near_pairs": near_pairs}
    return {name: (pos, np.full(len(pos), 1.0 / len(pos))) for name, pos in sets.items()}


def main(out: str) -> None:
    results = {}
    for name, (pos, mass) in cases().items():
        results[f"{name}_pos"] = pos
        results[f"{name}_mass"] = mass
    # Labels: precision, and "q" for quadrupole moments.
    for label, precision, quadrupole in (("f32", "f32", False), ("f64", "f64", False), ("f32q", "f32", True),
                                         ("f64q", "f64", True)):
        solver = make_solver("cpu-tree", precision=precision, softening=SOFTENING, theta=0.5, leaf_capacity=8,
                             quadrupole=quadrupole)
        for name, (pos, mass) in cases().items():
            acc, pot = solver.accelerations(pos, mass, potential=True)
            results[f"{name}_{label}_acc"] = acc
            results[f"{name}_{label}_pot"] = pot
    np.savez(out, **results)


if __name__ == "__main__":
    main(sys.argv[1])
