"""Simulation: a particle state advanced by a solver with a fixed-step leapfrog.

Kick-drift-kick (default) keeps the accelerations of the last drift, so each step costs one
force evaluation; drift-kick-drift evaluates forces at the half step. The state lives wherever the
solver keeps it (host arrays for CPU solvers, device memory for GPU solvers); positions come back
to the host only when asked for.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .compute import HostSnapshot
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

    def stage_positions(self):
        """Current positions as a float32 (n, 3) :class:`~orrery.engine.compute.Snapshot` taken
        without waiting for the device (what a frame is made of)."""
        stage = getattr(self._state, "stage_positions", None)
        if stage is None:  # a state without snapshots: a synchronous host copy
            return HostSnapshot(np.asarray(self._state.positions(), dtype=np.float32).copy())
        return stage()

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
        """Total energy now, summed where the state lives (one potential evaluation; a device
        state downloads only partial sums)."""
        energies = getattr(self._state, "energies", None)
        if energies is None:  # a state that cannot sum its own energy
            return self.diagnostics().total
        kinetic, potential = energies()
        return kinetic + potential

    def energy_error(self, diagnostics: Diagnostics | None = None) -> float:
        """Relative energy error since the start, (E - E0) / |E0|; where E0 = 0 (one particle
        at rest, say) there is no relative error and this is the absolute one, E - E0."""
        now = diagnostics.total if diagnostics is not None else self.energy()
        change = now - self.initial.total
        return change / abs(self.initial.total) if self.initial.total != 0 else change
