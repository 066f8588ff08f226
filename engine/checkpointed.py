"""Gradients of runs of the floating-point leapfrogs (``integrator="kdk"`` or ``"dkd"``), which
cannot be integrated backward exactly: checkpoints instead of reconstruction.

The forward run keeps its state every ``interval`` steps (default ceil(sqrt(K))). The backward
pass takes the segments between checkpoints in reverse: it runs each again from its checkpoint,
keeping the state at the start of each of its steps, and carries the adjoint back through
them. Memory: K / interval checkpoints and one segment's states, about 2 sqrt(K) states by
default; time: the forward run, a second one, and the VJPs.

The steps are :class:`~orrery.engine.Simulation`'s, in float64 (so with a float64 solver the
final state is the Simulation's, bit for bit). Adjoints, with h = dt and round-off treated as
the identity:

- dkd (x1 = x + h/2 v, v' = v + h a(x1), x' = x1 + h/2 v'): v_bar += h/2 x_bar; the force's
  VJP at x1 with the cotangent h v_bar adds to x_bar and m_bar; v_bar += h/2 x_bar;
- kdk (v_h = v + h/2 a(x), x' = x + h v_h, v' = v_h + h/2 a(x')): the VJP at x' with h/2 v_bar;
  v_bar += h x_bar; the VJP at x with h/2 v_bar (two VJPs a step).
"""

from __future__ import annotations

import math

import numpy as np

from ._adjoint import Gradient, check_run_arguments, start_cotangents
from .errors import InvalidInputError
from .force_vjp import force_vjp
from .particles import Particles

INTEGRATORS = ("kdk", "dkd")


class CheckpointedRun:
    """K floating-point leapfrog steps of ``particles`` under ``solver`` (run when made), with
    checkpoints every ``interval`` steps, ready to carry a loss's gradient back with
    :meth:`backward`."""

    def __init__(self, particles: Particles, solver, *, dt: float, steps: int,
                 integrator: str = "kdk", interval: int | None = None):
        check_run_arguments(dt, steps)
        if integrator not in INTEGRATORS:
            raise InvalidInputError(f"a checkpointed run's integrator is one of {INTEGRATORS}, "
                                    f"got {integrator!r}")
        if interval is not None and (isinstance(interval, bool) or int(interval) != interval
                                     or interval < 1):
            raise InvalidInputError(f"interval must be a positive integer, got {interval!r}")
        self.solver, self.dt, self.steps, self.integrator = solver, float(dt), int(steps), integrator
        self.interval = int(interval) if interval else max(1, math.ceil(math.sqrt(self.steps)))
        self.mass = np.array(particles.mass, dtype=np.float64)
        pos = np.array(particles.pos, dtype=np.float64)
        vel = np.array(particles.vel, dtype=np.float64)
        self._checkpoints = []
        acc = None
        for step in range(self.steps):
            if step % self.interval == 0:
                self._checkpoints.append((pos.copy(), vel.copy()))
            pos, vel, acc = self._step(pos, vel, acc)
        self._end = pos, vel

    @property
    def positions(self) -> np.ndarray:
        """The final positions, float64 (a copy)."""
        return self._end[0].copy()

    @property
    def velocities(self) -> np.ndarray:
        return self._end[1].copy()

    @property
    def checkpoints(self) -> int:
        return len(self._checkpoints)

    def _step(self, pos, vel, acc):
        """One step from (pos, vel); kdk carries the accelerations at pos (None: not yet)."""
        h = self.dt
        if self.integrator == "dkd":
            pos = pos + vel * (0.5 * h)
            vel = vel + self.solver.accelerations(pos, self.mass) * h
            return pos + vel * (0.5 * h), vel, None
        if acc is None:
            acc = self.solver.accelerations(pos, self.mass)
        vel = vel + acc * (0.5 * h)
        pos = pos + vel * h
        acc = self.solver.accelerations(pos, self.mass)
        return pos, vel + acc * (0.5 * h), acc

    def backward(self, pos_bar, vel_bar, mass_bar=None, *, loss: float | None = None):
        """The gradient at the start of a loss whose gradient at the end is ``pos_bar``,
        ``vel_bar`` (and ``mass_bar``); a :class:`~orrery.engine.gradients.Gradient` whose
        ``reversible`` is None (nothing was reconstructed)."""
        x_bar, v_bar, m_bar = start_cotangents(len(self.mass), pos_bar, vel_bar, mass_bar)
        end = self._end[0]
        for segment in reversed(range(len(self._checkpoints))):
            pos, vel = self._checkpoints[segment]
            states, acc = [(pos, vel)], None
            last = min(self.steps, (segment + 1) * self.interval)
            for _ in range(segment * self.interval + 1, last):
                pos, vel, acc = self._step(pos, vel, acc)
                states.append((pos, vel))
            for pos, vel in reversed(states):
                self._adjoint_step(pos, vel, end, x_bar, v_bar, m_bar)
                end = pos
        return Gradient(loss, x_bar, v_bar, m_bar, None)

    def _adjoint_step(self, pos, vel, end, x_bar, v_bar, m_bar) -> None:
        """Carry the adjoint (in place) back through the step from (pos, vel) to ``end``."""
        h = self.dt

        def add_vjp(at, cotangent):
            pos_step, mass_step = force_vjp(self.solver, at, self.mass, cotangent)
            x_bar[...] += pos_step
            m_bar[...] += mass_step

        if self.integrator == "dkd":
            v_bar += (0.5 * h) * x_bar
            add_vjp(pos + vel * (0.5 * h), h * v_bar)
            v_bar += (0.5 * h) * x_bar
            return
        add_vjp(end, (0.5 * h) * v_bar)
        v_bar += h * x_bar
        add_vjp(pos, (0.5 * h) * v_bar)
