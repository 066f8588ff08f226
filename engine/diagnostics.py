"""Conserved quantities of a particle set: energies, linear and angular momentum."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Diagnostics:
    kinetic: float
    potential: float
    momentum: tuple[float, float, float]
    angular_momentum: tuple[float, float, float]

    @property
    def total(self) -> float:
        return self.kinetic + self.potential

    @property
    def virial_ratio(self) -> float:
        """2K / |W|: 1 in equilibrium."""
        return 2.0 * self.kinetic / abs(self.potential)


def measure(pos, vel, mass, potentials) -> Diagnostics:
    """Diagnostics from host arrays; ``potentials`` is each particle's potential (G = 1).
    Sums are taken in float64 whatever the input precision."""
    pos = np.asarray(pos, dtype=np.float64)
    vel = np.asarray(vel, dtype=np.float64)
    mass = np.asarray(mass, dtype=np.float64)
    kinetic = 0.5 * float(np.sum(mass * np.einsum("ij,ij->i", vel, vel)))
    potential = 0.5 * float(np.sum(mass * np.asarray(potentials, dtype=np.float64)))
    momentum = (mass[:, None] * vel).sum(axis=0)
    angular = (mass[:, None] * np.cross(pos, vel)).sum(axis=0)
    return Diagnostics(kinetic, potential, tuple(momentum.tolist()), tuple(angular.tolist()))
