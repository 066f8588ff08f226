"""Seeded initial flocks: positions uniform in the periodic box or in Gaussian clumps, headings
uniform on the sphere, speeds between half and all of the maximum; both rounded onto the
fixed-point grids the step keeps them on (see :meth:`FlockParameters.constants`)."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..particles import Particles
from ._parameters import FlockParameters
from .reference import quantise, wrap


def initial_flock(n: int, *, seed: int = 0, rules: FlockParameters | None = None,
                  clumps: int = 0, clump_radius: float = 0.1) -> Particles:
    """``n`` boids for ``rules`` (default :class:`FlockParameters`). ``clumps`` > 0 starts them
    in that many Gaussian clumps of standard deviation ``clump_radius`` world sides; masses are
    one (the recorder and the renderer expect them)."""
    rules = rules or FlockParameters()
    n = int(n)
    if n < 1:
        raise InvalidInputError(f"a flock needs at least one boid, got n = {n}")
    if clumps < 0 or not clump_radius > 0:
        raise InvalidInputError("clumps must be >= 0 and clump_radius positive")
    rng = np.random.default_rng(seed)
    world = rules.world
    if clumps:
        centres = rng.uniform(0, world, (clumps, 3))
        pos = centres[rng.integers(0, clumps, n)] + rng.normal(0, clump_radius * world, (n, 3))
        pos = np.mod(pos, world)
    else:
        pos = rng.uniform(0, world, (n, 3))
    heading = rng.normal(size=(n, 3))
    heading /= np.maximum(np.linalg.norm(heading, axis=1, keepdims=True), 1e-12)
    speed = rules.max_speed * rng.uniform(0.5, 1.0, (n, 1))
    constants = rules.constants(n, dt=1e-3)
    vel = quantise(heading * speed, constants["velocity_quantum"]).astype(np.float32)
    return Particles(wrap(pos, constants), vel, np.ones(n, np.float32),
                     population_names=("boids",))
