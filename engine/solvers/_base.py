"""The solver interface and the host-memory simulation state every CPU solver shares."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod

import numpy as np

from ..compute import HostSnapshot
from ..diagnostics import Diagnostics, measure
from ..errors import InvalidInputError
from ..host_frames import HostFrames
from ..particles import (Particles, as_dtype, check_fits, check_no_coincident,
                         check_positions_and_masses)


def checked_potential_flag(potential) -> bool:
    """``accelerations``' ``potential`` flag: True or False (numpy's too), never a truthy
    string or number taken for True."""
    if not isinstance(potential, (bool, np.bool_)):
        raise InvalidInputError(f"potential must be True or False, got {potential!r:.80}")
    return bool(potential)


class Solver(ABC):
    """Computes softened gravitational accelerations (G = 1).

    Subclasses implement ``_compute(pos, mass, potential) -> (acc, pot | None)`` on validated
    contiguous arrays of ``self.dtype``; ``accelerations`` does the checking and conversion.
    ``last_stats`` holds what the last evaluation measured (seconds, interaction counts, ...).
    A device-resident evaluation defers it (``_defer_stats``): the device is asked, and waited
    for, only when ``last_stats`` is read, so a live run that never reads it never waits.
    """

    name = "solver"
    # An approximate solver's accuracy setting (accuracy_table.ThetaSetting): what it chose,
    # added to describe().
    setting = None
    # Its ``check_accuracy`` (tuning.accuracy_check.AccuracyCheck), run after each evaluation
    # without potentials; its latest measurement is added to describe().
    accuracy_check = None
    # Whether evaluations replay a device graph captured from an earlier one (gpu-fmm turns it
    # on); False launches them kernel by kernel, each stage timed.
    replay = False

    def __init__(self, *, precision: str, softening: float, **params):
        self.precision = precision
        self.dtype = as_dtype(precision)
        self.softening = softening
        self.params = dict(params, precision=precision, softening=softening)
        self.last_stats = {}

    @property
    def last_stats(self) -> dict:
        if self._stats_pending is not None:
            pending, self._stats_pending = self._stats_pending, None
            self._last_stats = pending()
        return self._last_stats

    @last_stats.setter
    def last_stats(self, stats: dict) -> None:
        self._last_stats, self._stats_pending = stats, None

    def _defer_stats(self, compute) -> None:
        """``last_stats`` becomes ``compute()`` when next read (read it before the next
        evaluation: the device buffers it reads are rewritten by that one)."""
        self._stats_pending = compute

    def accelerations(self, pos, mass, *, potential: bool = False):
        """Accelerations ``(n, 3)`` (and potentials ``(n,)`` when ``potential``) in this
        solver's precision."""
        potential = checked_potential_flag(potential)
        pos, mass = check_positions_and_masses(pos, mass, dtype=self.dtype)
        if self.softening == 0:
            check_no_coincident(pos)
        pos = np.ascontiguousarray(pos, dtype=self.dtype)
        mass = np.ascontiguousarray(mass, dtype=self.dtype)
        start = time.perf_counter()
        acc, pot = self._compute(pos, mass, potential)
        self.store_stats(start)
        if self.accuracy_check is not None and not potential:
            self.accuracy_check.host(pos, mass, acc, self.softening)
        return (acc, pot) if potential else acc

    def store_stats(self, start: float) -> None:
        """``last_stats`` of an evaluation that began at ``start``."""
        self.last_stats = self.timed_stats(start, self._extra_stats)

    @staticmethod
    def timed_stats(start: float, extra_stats) -> dict:
        """Wall seconds since ``start`` (``wall_s``) and ``extra_stats()``; the wall time is
        read after the extra stats, which may wait for a device's events."""
        extra = extra_stats()
        return {"wall_s": time.perf_counter() - start, **extra}

    @abstractmethod
    def _compute(self, pos, mass, potential):
        """Return ``(acc, pot or None)`` for validated arrays of ``self.dtype``."""

    def _extra_stats(self) -> dict:
        return {}

    def bind(self, particles: Particles) -> HostState:
        """The state a :class:`Simulation` advances with this solver (host memory here; GPU
        solvers return a device-resident state)."""
        check_fits(particles, self.dtype)
        return HostState(self, particles)

    def theta_in_use(self, n: int) -> float | None:
        """The opening angle an evaluation of ``n`` particles uses (the one given, or the one
        ``accuracy`` chose), or None for a solver without one."""
        return None if self.setting is None else self.setting.theta(n)

    def describe(self) -> str:
        options = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()) if v is not None)
        clauses = [self.setting.describe() if self.setting is not None else None,
                   self.accuracy_check.describe() if self.accuracy_check is not None else None]
        return f"{self.name} ({options})" + "".join(f"; {c}" for c in clauses if c)


class HostState(HostFrames):
    """Positions, velocities and masses in host memory, in the solver's precision (a
    :class:`~orrery.engine.contracts.SimulationState`)."""

    def __init__(self, solver: Solver, particles: Particles):
        self.solver = solver
        self.pos = np.array(particles.pos, dtype=solver.dtype, order="C")
        self.vel = np.array(particles.vel, dtype=solver.dtype, order="C")
        self.mass = np.array(particles.mass, dtype=solver.dtype, order="C")
        self.acc = np.zeros_like(self.pos)

    @property
    def n(self) -> int:
        return self.pos.shape[0]

    def compute_accelerations(self) -> None:
        self.acc = self.solver.accelerations(self.pos, self.mass)

    def synchronize(self) -> None:
        """Wait until the work queued so far has finished: host work is done when it returns."""

    def accelerations(self) -> np.ndarray:
        """The last evaluation's accelerations, a copy."""
        return np.array(self.acc)

    def kick(self, dt: float) -> None:
        self.vel += self.acc * self.solver.dtype.type(dt)

    def drift(self, dt: float) -> None:
        self.pos += self.vel * self.solver.dtype.type(dt)

    def positions(self) -> np.ndarray:
        """Current positions on the host (a copy the caller may keep)."""
        return self.pos.copy()

    def stage_positions(self) -> HostSnapshot:
        """The current positions as a float32 (n, 3) snapshot (a frame)."""
        return HostSnapshot(self.pos.astype(np.float32))

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Host copies of (pos, vel, mass)."""
        return self.pos.copy(), self.vel.copy(), self.mass.copy()

    def potentials(self) -> np.ndarray:
        _, pot = self.solver.accelerations(self.pos, self.mass, potential=True)
        return pot

    def diagnostics(self) -> Diagnostics:
        """Energies and momenta, summed in float64 (one potential evaluation)."""
        return measure(self.pos, self.vel, self.mass, self.potentials())

    def energies(self) -> tuple[float, float]:
        """(kinetic, potential) energy, summed in float64 (one potential evaluation)."""
        mass = self.mass.astype(np.float64)
        vel = self.vel.astype(np.float64)
        kinetic = 0.5 * float(np.sum(mass * np.einsum("ij,ij->i", vel, vel)))
        return kinetic, 0.5 * float(np.sum(mass * self.potentials().astype(np.float64)))
