"""The error reference on a device (``sampled_reference.cl``) is the host's float64 sum."""

import numpy as np

from orrery.engine import ics
from orrery.engine.accuracy import sampled_exact


def test_sampled_exact_on_a_device_matches_the_host_sum(device):
    particles = ics.plummer(2000, seed=5)
    targets = np.random.default_rng(1).choice(2000, 37, replace=False)
    host = sampled_exact(particles.pos, particles.mass, targets, 0.01)
    on_device = sampled_exact(particles.pos, particles.mass, targets, 0.01, device=device)
    np.testing.assert_allclose(on_device, host, rtol=1e-10)
