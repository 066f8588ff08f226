"""The reversible integrator: drift-kick-drift leapfrog on an integer lattice, so that a run
integrated backward returns to its start bit for bit (Rein & Tamayo 2018, "JANUS").

Positions and velocities are int64 multiples of two units, ``x = q_x * position_unit`` and
``v = q_v * velocity_unit``; forces are evaluated in floating point at the positions the lattice
stands for. A step is

1. drift half a step: ``q_x += rint(float(q_v) * (dt/2 * velocity_unit / position_unit))``;
2. evaluate the accelerations ``a`` at ``float(q_x) * position_unit``;
3. kick: ``q_v += rint(a * (dt / velocity_unit))``;
4. drift half a step as in 1.

Each increment depends only on the other variable, and both the product with ``dt`` and ``rint``
are odd functions of ``dt`` (the units are powers of two, so the factors are exact), so the
same step with ``-dt`` subtracts exactly the integers the forward step added, in the reverse
order: K steps back undo K steps forward bit for bit, provided the solver's forces are
bit-reproducible (every Orrery solver's are, for any thread count).

The lattice spans ``|q| <= 2**62`` units in each coordinate, leaving room to add one increment
without overflowing int64; a step that would leave it raises :class:`InvalidInputError` and
leaves the state as it was (it never wraps). :meth:`Lattice.for_state` picks units that give
the initial state generous room (its ``headroom``) at a resolution far finer than float64's at
the same magnitudes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .compute import HostSnapshot
from .diagnostics import Diagnostics, measure
from .errors import InvalidInputError
from .host_frames import HostFrames
from .particles import Particles, check_positions_and_masses

# |q| never exceeds this: one increment (also below it) more still fits in int64.
LATTICE_LIMIT = 2**62
DEFAULT_HEADROOM = 64.0


def _unit_for(span: float) -> float:
    """The smallest power of two u with ``span <= u * LATTICE_LIMIT``."""
    if not (math.isfinite(span) and span > 0):
        raise InvalidInputError(f"a lattice range must be a positive finite number, got {span!r}")
    unit = 2.0 ** math.ceil(math.log2(span / LATTICE_LIMIT))
    return unit * 2 if span > unit * LATTICE_LIMIT else unit


@dataclass(frozen=True)
class Lattice:
    """The units of the integer lattice (powers of two) of positions and velocities."""

    position_unit: float
    velocity_unit: float

    @classmethod
    def covering(cls, position_range: float, velocity_range: float) -> Lattice:
        """The finest lattice that holds every coordinate up to ``position_range`` in magnitude
        and every velocity component up to ``velocity_range``."""
        return cls(_unit_for(float(position_range)), _unit_for(float(velocity_range)))

    @classmethod
    def for_state(cls, pos, vel, mass, softening: float, *,
                  headroom: float = DEFAULT_HEADROOM) -> Lattice:
        """A lattice for a run starting at this state: ``headroom`` times its largest coordinate,
        and ``headroom`` times the larger of its fastest velocity component and the speed a
        particle gains falling from rest through the whole mass's softened potential,
        sqrt(2 M / l), where l is the softening (or, without softening, a millionth of the
        system's size)."""
        pos, vel, mass = (np.asarray(a, dtype=np.float64) for a in (pos, vel, mass))
        size = float(np.abs(pos).max())
        length = softening if softening > 0 else 1e-6 * max(size, np.finfo(float).tiny)
        fall_speed = math.sqrt(2.0 * float(mass.sum()) / length)
        speed = max(float(np.abs(vel).max()), fall_speed)
        return cls.covering(headroom * max(size, length), headroom * speed)

    @property
    def position_range(self) -> float:
        return self.position_unit * LATTICE_LIMIT

    @property
    def velocity_range(self) -> float:
        return self.velocity_unit * LATTICE_LIMIT

    def quantize_positions(self, pos) -> np.ndarray:
        return _quantize(pos, self.position_unit, "position")

    def quantize_velocities(self, vel) -> np.ndarray:
        return _quantize(vel, self.velocity_unit, "velocity")

    def positions(self, q: np.ndarray) -> np.ndarray:
        """The float64 positions lattice points ``q`` stand for."""
        return q.astype(np.float64) * self.position_unit

    def velocities(self, q: np.ndarray) -> np.ndarray:
        return q.astype(np.float64) * self.velocity_unit

    def drift(self, qpos: np.ndarray, qvel: np.ndarray, dt: float) -> None:
        """``qpos += rint(v dt / position_unit)`` in place, or InvalidInputError and no change."""
        factor = float(dt) * (self.velocity_unit / self.position_unit)
        _advance(qpos, qvel.astype(np.float64) * factor, "position", self.position_range)

    def kick(self, qvel: np.ndarray, acc: np.ndarray, dt: float) -> None:
        """``qvel += rint(a dt / velocity_unit)`` in place, or InvalidInputError and no change."""
        factor = float(dt) / self.velocity_unit
        _advance(qvel, np.asarray(acc, dtype=np.float64) * factor, "velocity",
                 self.velocity_range)


def _quantize(values, unit: float, what: str) -> np.ndarray:
    scaled = np.rint(np.asarray(values, dtype=np.float64) / unit)
    _check_within(scaled, what, unit * LATTICE_LIMIT)
    return scaled.astype(np.int64)


def _check_within(values: np.ndarray, what: str, span: float) -> None:
    """Refuse lattice coordinates beyond ``LATTICE_LIMIT`` (or NaN), naming the particle."""
    inside = np.abs(values) <= LATTICE_LIMIT
    if not inside.all():
        particle = int(np.flatnonzero(~inside.reshape(len(values), -1).all(axis=1))[0])
        raise InvalidInputError(
            f"the {what} of particle {particle} left the reversible integrator's lattice "
            f"(|{what}| <= {span:.6g} a component, got "
            f"{(values[particle] * (span / LATTICE_LIMIT)).tolist()}): give the run a wider "
            "lattice (Lattice.covering, or a larger headroom in Lattice.for_state)")


def _advance(q: np.ndarray, increment: np.ndarray, what: str, span: float) -> None:
    """``q += rint(increment)`` with every result checked before any is written."""
    increment = np.rint(increment)
    # Strictly below the limit (so at most 2**62 - 512 as a float64): added to |q| <= 2**62 it
    # stays below 2**63, so the int64 sum cannot wrap. NaN fails the test too.
    fits = np.abs(increment) < LATTICE_LIMIT
    if not fits.all():
        particle = int(np.flatnonzero(~fits.reshape(len(q), -1).all(axis=1))[0])
        raise InvalidInputError(
            f"one step would change the {what} of particle {particle} by "
            f"{(increment[particle] * (span / LATTICE_LIMIT)).tolist()}, beyond the reversible "
            f"integrator's lattice (|{what}| <= {span:.6g} a component): give the run a wider "
            "lattice (Lattice.covering, or a larger headroom in Lattice.for_state) or a smaller dt")
    moved = q + increment.astype(np.int64)
    _check_within(moved, what, span)
    q[...] = moved


class LatticeState(HostFrames):
    """A :class:`~orrery.engine.Simulation`'s state under the reversible integrator: positions
    and velocities on a :class:`Lattice` in host memory, masses in float64, the accelerations
    from ``solver.accelerations`` (a GPU solver's through its host interface)."""

    def __init__(self, solver, particles: Particles, lattice: Lattice | None = None):
        pos, mass = check_positions_and_masses(particles.pos, particles.mass)
        self.solver = solver
        self.lattice = lattice or Lattice.for_state(pos, particles.vel, mass, solver.softening)
        self.qpos = self.lattice.quantize_positions(pos)
        self.qvel = self.lattice.quantize_velocities(particles.vel)
        self.mass = np.array(mass, dtype=np.float64)
        self.acc = np.zeros(self.qpos.shape, np.float64)

    @property
    def n(self) -> int:
        return self.qpos.shape[0]

    def compute_accelerations(self) -> None:
        self.acc = self.solver.accelerations(self.lattice.positions(self.qpos), self.mass)

    def synchronize(self) -> None:
        """Host work: done when it returns."""

    def accelerations(self) -> np.ndarray:
        """The last evaluation's accelerations, a copy."""
        return np.array(self.acc)

    def advance(self, key, step) -> None:
        """Run ``step()`` (one whole step of ``Simulation``) as one change: a step that leaves
        the lattice raises with the state as it was before the step."""
        qpos, qvel = self.qpos.copy(), self.qvel.copy()
        try:
            step()
        except InvalidInputError:
            self.qpos[...], self.qvel[...] = qpos, qvel
            raise

    def kick(self, dt: float) -> None:
        self.lattice.kick(self.qvel, self.acc, dt)

    def drift(self, dt: float) -> None:
        self.lattice.drift(self.qpos, self.qvel, dt)

    def positions(self) -> np.ndarray:
        return self.lattice.positions(self.qpos).astype(self.solver.dtype)

    def stage_positions(self) -> HostSnapshot:
        return HostSnapshot(self.lattice.positions(self.qpos).astype(np.float32))

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Host copies of (pos, vel, mass) in the solver's precision."""
        dtype = self.solver.dtype
        return (self.lattice.positions(self.qpos).astype(dtype),
                self.lattice.velocities(self.qvel).astype(dtype), self.mass.astype(dtype))

    def potentials(self) -> np.ndarray:
        _, pot = self.solver.accelerations(self.lattice.positions(self.qpos), self.mass,
                                           potential=True)
        return pot

    def diagnostics(self) -> Diagnostics:
        return measure(*self.snapshot(), self.potentials())

    def energies(self) -> tuple[float, float]:
        vel = self.lattice.velocities(self.qvel)
        kinetic = 0.5 * float(np.sum(self.mass * np.einsum("ij,ij->i", vel, vel)))
        return kinetic, 0.5 * float(np.sum(self.mass * self.potentials().astype(np.float64)))
