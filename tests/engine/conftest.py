"""Fixtures the engine tests share (tests/engine/gpu included)."""

import numpy as np
import pytest

from orrery.engine import ics, scenarios
from orrery.engine.accuracy import sampled_exact
from orrery.engine.tuning import accuracy_table

# The accuracy tests' scenarios: a size and a seed the shipped table was not measured at.
ACCURACY_N = 3000
ACCURACY_SEED = 3


@pytest.fixture(scope="session")
def shipped_scenarios():
    """Every scenario of the accuracy table at ACCURACY_N with the exact accelerations of every
    particle (the realisation's own RMS, no sampling)."""
    built = {}
    for name in accuracy_table.SCENARIOS:
        scenario = scenarios.load(name, n=ACCURACY_N, seed=ACCURACY_SEED)
        p = scenario.particles
        targets = np.arange(ACCURACY_N)
        built[name] = (scenario, targets,
                       sampled_exact(p.pos, p.mass, targets, scenario.softening))
    return built


@pytest.fixture(scope="session")
def fmm_hard_cases() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Hard particle sets for the FMM tests (cpu-fmm and gpu-fmm share them)."""
    rng = np.random.default_rng(11)
    # A Hernquist cluster of scale 1e-3 inside a unit box of background particles.
    cluster = ics.hernquist(1500, seed=3, scale=1e-3).pos
    cluster = cluster[np.linalg.norm(cluster, axis=1) < 0.5]
    clustered = np.concatenate([cluster, rng.uniform(-0.5, 0.5, (500, 3))])
    # A disk of radius 1 and thickness 1e-5.
    radius = np.sqrt(rng.uniform(0, 1, 2000))
    angle = rng.uniform(0, 2 * np.pi, 2000)
    disk = np.column_stack([radius * np.cos(angle), radius * np.sin(angle), rng.normal(0, 1e-5, 2000)])
    coincident = np.concatenate([np.tile([0.1, 0.2, 0.3], (200, 1)), ics.plummer(800, seed=4).pos])
    clump = ics.plummer(1000, seed=6).pos
    two_clumps = np.concatenate([clump, clump * 0.5 + [1e4, 0.0, 0.0]])
    sets = {"clustered_hernquist": clustered, "thin_disk": disk, "coincident": coincident,
            "two_clumps": two_clumps, "one": np.array([[0.5, 0.5, 0.5]]),
            "two": np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]]),
            "three": np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 3.0, 0.5]])}
    return {name: (pos, np.full(len(pos), 1.0 / len(pos))) for name, pos in sets.items()}

