"""The calibration scenarios at sizes the accuracy table does not hold, with their float64
reference accelerations, and the worst error a solver made on them: what the accuracy rule's
tests (tests/engine/test_accuracy_rule.py, tests/engine/gpu/test_gpu_accuracy_rule.py) measure.

Seed 0 is the table's own realisation (the rule promises errors within [a/4, a] on the
calibration scenarios); the sizes lie between the table's, where the rule interpolates in log N.
"""

import functools

import numpy as np

from orrery.engine import make_solver, scenarios
from orrery.engine.accuracy import error_percentiles, sampled_exact
from orrery.engine.tuning import accuracy_table

SEED = 0
# On a realisation the table was not measured on, the FMMs' RMS follows the few Hernquist
# bodies far out (errors near 1e-2 each): at N = 3000, seed 3, every particle, it reached 1.7x
# the target with the table's margin of 1.3 (their 90th percentile stays within it). The
# calibration realisations themselves stay within [a/4, a] (the tests using worst_error).
OTHER_REALISATION_RMS = 2.0
TARGETS = 4096  # as the table's rows


@functools.lru_cache(maxsize=None)
def calibration_scenario(name: str, n: int):
    """(scenario, targets, float64 accelerations of the targets), built once per session."""
    built = scenarios.load(name, n=n, seed=SEED)
    p = built.particles
    targets = np.sort(np.random.default_rng(1).choice(n, size=min(n, TARGETS), replace=False))
    return built, targets, sampled_exact(p.pos, p.mass, targets, built.softening)


def worst_error(solver: str, n: int, accuracy: float, **options) -> tuple[float, str, dict]:
    """The largest RMS or 90th-percentile relative error of ``make_solver(solver,
    accuracy=accuracy)`` over the calibration scenarios at ``n``, where it was, and the choice."""
    worst = (0.0, "", {})
    for name in accuracy_table.SCENARIOS:
        built, targets, exact = calibration_scenario(name, n)
        instance = make_solver(solver, accuracy=accuracy, softening=built.softening, **options)
        acc = np.asarray(instance.accelerations(built.particles.pos, built.particles.mass))
        error = max(error_percentiles(acc[targets], exact))
        if error > worst[0]:
            worst = (error, name, instance.chosen)
    return worst
