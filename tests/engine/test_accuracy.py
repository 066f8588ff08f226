"""The benchmarks' error reference: float64 sums for a sample of targets agree with the
compensated ``reference`` solver over every particle."""

import numpy as np

from orrery.engine import ics, make_solver
from orrery.engine.accuracy import rms_relative_error, sampled_exact


def test_sampled_exact_matches_the_reference_solver_on_its_targets():
    particles = ics.plummer(300, seed=3)
    targets = np.array([0, 7, 150, 299])
    exact = make_solver("reference", softening=0.02).accelerations(particles.pos, particles.mass)
    sampled = sampled_exact(particles.pos, particles.mass, targets, 0.02, chunk_elements=1000)
    np.testing.assert_allclose(sampled, exact[targets], rtol=1e-12)


def test_sampled_exact_leaves_out_a_particles_pull_on_itself_without_softening():
    pos = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    mass = np.array([1.0, 2.0])
    sampled = sampled_exact(pos, mass, np.array([0, 1]), 0.0)
    np.testing.assert_allclose(sampled, [[2.0, 0, 0], [-1.0, 0, 0]])
    assert rms_relative_error(sampled, sampled) == 0.0
