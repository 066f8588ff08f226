"""Simulation state that lives on a compute device between steps.

Bodies are packed as ``real4`` rows (x, y, z, mass), velocities as (vx, vy, vz, 0) and
accelerations as (ax, ay, az, potential), padded to the solver's ``padding_for(n)`` with
zero-mass bodies at the origin. Kick and drift are kernels (``integrate.cl``); the host sees
positions only when it asks for them. Any :class:`GpuSolver` drives it: the solver supplies
only ``launch_accelerations``.
"""

from __future__ import annotations

import time

import numpy as np

from ..particles import Particles

# Work-group size of the kick and drift kernels (a multiple of every sub-group size in use).
INTEGRATE_GROUP = 64


def pack(columns: np.ndarray, fourth: np.ndarray | None, padded: int, dtype) -> np.ndarray:
    """``(padded, 4)`` rows of ``columns`` (n, 3) with ``fourth`` (n,) or 0 as the last column."""
    rows = np.zeros((padded, 4), dtype=dtype)
    n = columns.shape[0]
    rows[:n, :3] = columns
    if fourth is not None:
        rows[:n, 3] = fourth
    return rows


def padded_count(n: int, padding: int) -> int:
    return max(1, -(-n // padding)) * padding


class DeviceState:
    """Positions, velocities and masses in device memory (the :class:`HostState` methods)."""

    def __init__(self, solver, particles: Particles):
        self.solver = solver
        context, dtype = solver.context, solver.dtype
        self._n = particles.n
        self.padded = padded_count(self._n, solver.padding_for(self._n))
        self.body = context.upload(pack(particles.pos, particles.mass, self.padded, dtype))
        self.vel = context.upload(pack(particles.vel, None, self.padded, dtype))
        self.acc = context.zeros((self.padded, 4), dtype)
        program = context.build(["integrate.cl"], defines={"REAL_BITS": dtype.itemsize * 8})
        self._kick = program.kernel("kick")
        self._drift = program.kernel("drift")
        self._global = padded_count(self._n, INTEGRATE_GROUP)

    @property
    def n(self) -> int:
        return self._n

    def compute_accelerations(self) -> None:
        start = time.perf_counter()
        events = self.solver.launch_accelerations(self.body, self.acc, self._n, potential=False)
        self.solver.record_stats(start, events)

    def kick(self, dt: float) -> None:
        self._kick.launch(self._global, INTEGRATE_GROUP, self.vel, self.acc, np.int32(self._n),
                          self.solver.dtype.type(dt))

    def drift(self, dt: float) -> None:
        self._drift.launch(self._global, INTEGRATE_GROUP, self.body, self.vel, np.int32(self._n),
                           self.solver.dtype.type(dt))

    def positions(self) -> np.ndarray:
        """Current positions, copied to the host (the one transfer a frame needs)."""
        return np.ascontiguousarray(self.body.download()[:self._n, :3])

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Host copies of (pos, vel, mass)."""
        body, vel = self.body.download(), self.vel.download()
        return (np.ascontiguousarray(body[:self._n, :3]), np.ascontiguousarray(vel[:self._n, :3]),
                np.ascontiguousarray(body[:self._n, 3]))

    def potentials(self) -> np.ndarray:
        scratch = self.solver.context.empty((self.padded, 4), self.solver.dtype)
        start = time.perf_counter()
        events = self.solver.launch_accelerations(self.body, scratch, self._n, potential=True)
        self.solver.record_stats(start, events)
        return np.ascontiguousarray(scratch.download()[:self._n, 3])
