"""A flock that catches inexact partial sums across the periodic seam (used by the CPU and the
device tests).

The box side 47.3 is no multiple of the position quantum (2^-14). Were it used as it is, an
offset across the seam would be an odd multiple of float32's spacing there (2^-18), and a
float32 partial sum of 15 such offsets of about -4.5 (past 64 in magnitude, where the spacing
is 2^-17) would round. Boid 0 sits at the seam with 39 neighbours on its side and 39 across,
in index order, so that its last chunk of 16 candidates holds exactly those 15 offsets; a
separation weight of 2.5 keeps it under the speed limit, where one rounding moves its velocity
by one velocity quantum. The rules' constants round the side onto the grid; with that, every
search must give the reference's bits.
"""

import numpy as np

from orrery.engine.flock import FlockParameters, reference

SEAM_RULES = FlockParameters(world=47.3, separation_radius=5.0, separation_weight=2.5,
                             cohesion_weight=0.0, alignment_weight=0.0)
SEAM_N = 79


def seam_flock(dt: float) -> tuple[np.ndarray, np.ndarray, dict]:
    """Positions, velocities (at rest) and the constants of the seam case."""
    constants = SEAM_RULES.constants(SEAM_N, dt)
    rng = np.random.default_rng(12)
    here = np.array([4.5, 20.0, 20.0]) + rng.uniform(-0.2, 0.2, (39, 3))
    there = np.array([constants["world"] - 4.5, 20.0, 20.0]) + rng.uniform(-0.2, 0.2, (39, 3))
    pos = reference.wrap(np.vstack([[0.01, 20.0, 20.0], here, there]), constants)
    return pos, np.zeros((SEAM_N, 3), np.float32), constants
