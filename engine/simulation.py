"""Simulation: a particle state advanced by a solver with a fixed-step leapfrog.

Kick-drift-kick (default) keeps the accelerations of the last drift, so each step costs one
force evaluation; drift-kick-drift evaluates forces at the half step. The state lives wherever the
solver keeps it (host arrays for CPU solvers, device memory for GPU solvers); positions come back
to the host only when asked for.
"""

from __future__ import annotations

import math
import numbers

from .diagnostics import Diagnostics, measure
from .errors import InvalidInputError
from .particles import Particles
from .solvers import Solver

INTEGRATORS = ("kdk", "dkd")


class Simulation:
    def __init__(self, particles: Particles, solver: Solver, *, dt: float, integrator: str = "kdk"):
        if not (isinstance(dt, numbers.Real) and math.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"time step dt must be a positive finite number, got {dt!r}")
        if integrator not in INTEGRATORS:
            raise InvalidInputError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        self.solver = solver
        self.dt = float(dt)
        self.integrator = integrator
        self.time = 0.0
        self.steps = 0
        self._state = solver.bind(particles)
        self._population = particles.population.copy()
        self._population_names = particles.population_names
        self._accelerations_current = False
        self.initial = self.diagnostics()

    @property
    def n(self) -> int:
        return self._state.n

    def step(self, count: int = 1) -> None:
        """Advance ``count`` steps of size ``dt``."""
        state, dt = self._state, self.dt
        for _ in range(int(count)):
            if self.integrator == "kdk":
                if not self._accelerations_current:
                    state.compute_accelerations()
                state.kick(0.5 * dt)
                state.drift(dt)
                state.compute_accelerations()
                state.kick(0.5 * dt)
                self._accelerations_current = True
            else:
                state.drift(0.5 * dt)
                state.compute_accelerations()
                state.kick(dt)
                state.drift(0.5 * dt)
            self.steps += 1
            self.time += dt

    def positions(self):
        """Current positions as a host array (the only transfer a frame needs)."""
        return self._state.positions()

    @property
    def particles(self) -> Particles:
        """The current state as host :class:`Particles` (synchronised copy)."""
        pos, vel, mass = self._state.snapshot()
        return Particles(pos, vel, mass, self._population.copy(), self._population_names)

    def diagnostics(self) -> Diagnostics:
        """Energies and momenta now (costs one potential evaluation)."""
        pos, vel, mass = self._state.snapshot()
        return measure(pos, vel, mass, self._state.potentials())

    def energy(self) -> float:
        """Total energy now."""
        return self.diagnostics().total

    def energy_error(self, diagnostics: Diagnostics | None = None) -> float:
        """Relative energy error since the start, (E - E0) / |E0|; where E0 = 0 (one particle
        at rest, say) there is no relative error and this is the absolute one, E - E0."""
        now = diagnostics or self.diagnostics()
        change = now.total - self.initial.total
        return change / abs(self.initial.total) if self.initial.total != 0 else change
