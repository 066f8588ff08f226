"""Gradients of a whole run: dL/d(initial positions, velocities, masses) of a loss L of the final
state, in memory independent of the number of steps.

The run is the reversible integrator's (``engine/lattice.py``): K drift-kick-drift steps on an
integer lattice. The backward pass walks the run in reverse, reconstructing each step's state by
the lattice's exact backward step instead of storing it, and carries the adjoint (the cotangents
of positions, velocities and masses) back through each step:

1. undo the last half drift ``x' = x1 + dt/2 v'`` (the lattice state is now ``x1, v'``):
   ``v_bar += dt/2 x_bar``;
2. evaluate the accelerations at ``x1`` (the forward step's bits) and undo the kick
   ``v' = v + dt a(x1, m)``; the force's VJP (``engine/force_vjp.py``) with the cotangent
   ``dt v_bar`` adds to ``x_bar`` and ``m_bar`` (for cpu-direct in float64 the accelerations
   and the VJP come from one native pass);
3. undo the first half drift ``x1 = x + dt/2 v``: ``v_bar += dt/2 x_bar``.

A step of the backward pass costs one force evaluation and one VJP; after K steps the lattice
state is the start again, bit for bit (``Gradient.reversible`` says whether it was). The
lattice's rounding is treated as the identity: the gradient is that of the leapfrog in exact
arithmetic, evaluated along the run's trajectory, which agrees with finite differences of the
lattice run to the differences' own accuracy (the lattice is finer than float64 there).

Under a solver with a VJP on its device (``contracts.DeviceForceVjp``: gpu-direct, gpu-fmm) the
run and its backward pass take the same steps on the device (``solvers/_device_lattice.py``):
the lattice points, the adjoint and the cotangents stay there, and no particle data moves
between steps (gpu-fmm's evaluations read their 36-byte state, as they always do).

``run_gradient(..., integrator="kdk" or "dkd")`` differentiates the floating-point leapfrogs
instead, by checkpoints (``engine/checkpointed.py``): memory about 2 sqrt(K) states.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._adjoint import Gradient, check_run_arguments, start_cotangents
from .checkpointed import CheckpointedRun
from .contracts import DeviceForceVjp
from .errors import InvalidInputError
from .force_vjp import force_and_vjp
from .lattice import Lattice, LatticeState
from .particles import Particles
from .solvers._device_lattice import DeviceLatticeRun, Progress


class ReversibleRun:
    """K reversible steps of ``particles`` under ``solver`` (run when made), ready to carry a
    loss's gradient back to the start with :meth:`backward`. Holds only the initial and the
    final state.

    ``end``: the final lattice state ``(qpos, qvel)`` (int64) that this same run reached before
    (its :attr:`end`), so that the steps are not run again; a framework adapter keeps it between
    its forward and backward passes. An ``end`` that is not this run's shows as
    ``Gradient.reversible`` False.

    ``progress(done, total)`` is called after each step of the run (``backward`` takes its own
    for the steps back), so that a caller can say how far a long run has come.
    """

    def __init__(self, particles: Particles, solver, *, dt: float, steps: int,
                 lattice: Lattice | None = None,
                 end: tuple[np.ndarray, np.ndarray] | None = None,
                 progress: Progress | None = None):
        check_run_arguments(dt, steps)
        self.solver, self.dt, self.steps = solver, float(dt), int(steps)
        state = LatticeState(solver, particles, lattice)
        self.lattice, self.mass = state.lattice, state.mass
        self._start = state.qpos.copy(), state.qvel.copy()
        self._device = (DeviceLatticeRun(solver, state.lattice, state.qpos, state.qvel, self.mass)
                        if runs_on_device(solver) else None)
        # The final lattice state on the host: None while it is on the device alone.
        self._end: tuple[np.ndarray, np.ndarray] | None = None
        if end is not None:
            self._end = tuple(_lattice_points(q, state.qpos.shape, name)
                              for q, name in zip(end, ("qpos", "qvel")))
            if self._device is not None:
                self._device.set_state(*self._end)
        elif self._device is not None:
            self._device.forward(self.steps, self.dt, progress)
        else:
            for done in range(1, self.steps + 1):
                state.advance(None, lambda: _step(state, self.dt))
                if progress is not None:
                    progress(done, self.steps)
            self._end = state.qpos, state.qvel
        # Whether the device holds the final state (a backward pass walks it to the start).
        self._device_at_end = self._device is not None

    @property
    def on_device(self) -> bool:
        """Whether the run, and its backward pass, keep their state on the solver's device."""
        return self._device is not None

    def _final(self) -> tuple[np.ndarray, np.ndarray]:
        if self._end is None:
            self._end = self._device.state()
        return self._end

    @property
    def end(self) -> tuple[np.ndarray, np.ndarray]:
        """The final lattice state ``(qpos, qvel)``, int64 (n, 3) each (copies)."""
        qpos, qvel = self._final()
        return qpos.copy(), qvel.copy()

    @property
    def positions(self) -> np.ndarray:
        """The final positions, float64."""
        return self.lattice.positions(self._final()[0])

    @property
    def velocities(self) -> np.ndarray:
        return self.lattice.velocities(self._final()[1])

    def backward(self, pos_bar, vel_bar, mass_bar=None, *, loss: float | None = None,
                 progress: Progress | None = None) -> Gradient:
        """The gradient at the start of a loss whose gradient at the end is ``pos_bar``,
        ``vel_bar`` (and ``mass_bar`` where the loss reads the masses directly);
        ``progress(done, total)`` after each step back."""
        x_bar, v_bar, m_bar = start_cotangents(len(self.mass), pos_bar, vel_bar, mass_bar)
        if self._device is not None:
            return self._backward_on_device(x_bar, v_bar, m_bar, loss, progress)
        qpos, qvel = self._end[0].copy(), self._end[1].copy()
        lattice, dt, half = self.lattice, self.dt, 0.5 * self.dt
        for done in range(1, self.steps + 1):
            lattice.drift(qpos, qvel, -half)
            v_bar += half * x_bar
            acc, pos_step, mass_step = force_and_vjp(self.solver, lattice.positions(qpos),
                                                     self.mass, dt * v_bar)
            lattice.kick(qvel, acc, -dt)
            x_bar += pos_step
            m_bar += mass_step
            lattice.drift(qpos, qvel, -half)
            v_bar += half * x_bar
            if progress is not None:
                progress(done, self.steps)
        reversible = (np.array_equal(qpos, self._start[0])
                      and np.array_equal(qvel, self._start[1]))
        return Gradient(loss, x_bar, v_bar, m_bar, reversible)

    def _backward_on_device(self, x_bar, v_bar, m_bar, loss, progress) -> Gradient:
        """:meth:`backward`'s steps on the device (``solvers/_device_lattice.py``): the same
        operations, nothing moved to the host between steps."""
        if not self._device_at_end:
            self._device.set_state(*self._final())
        self._device_at_end = False
        x_bar, v_bar, m_bar = self._device.backward(self.steps, self.dt, x_bar, v_bar, m_bar,
                                                    progress)
        qpos, qvel = self._device.state()
        reversible = (np.array_equal(qpos, self._start[0])
                      and np.array_equal(qvel, self._start[1]))
        return Gradient(loss, x_bar, v_bar, m_bar, reversible)


def runs_on_device(solver) -> bool:
    """Whether a reversible run under ``solver`` keeps its state and adjoint on the solver's
    device: a GPU solver with a device VJP, on a device with float64 (the lattice's
    increments are float64 products); otherwise they live in host memory."""
    return isinstance(solver, DeviceForceVjp) and solver.context.info.fp64


def run_gradient(particles: Particles, solver, *, dt: float, steps: int,
                 loss_grad: Callable, integrator: str = "reversible",
                 lattice: Lattice | None = None, interval: int | None = None) -> Gradient:
    """Run ``steps`` steps, then the gradient of a loss of the final state with respect to the
    initial positions, velocities and masses.

    ``loss_grad(pos, vel, mass)`` gets the final state (float64) and returns ``(loss, pos_bar,
    vel_bar)`` or ``(loss, pos_bar, vel_bar, mass_bar)``: the loss and its gradient there.
    ``integrator``: ``"reversible"`` (a :class:`ReversibleRun` on ``lattice``; memory
    independent of ``steps``) or ``"kdk"``/``"dkd"`` (a :class:`CheckpointedRun` keeping a
    state every ``interval`` steps).
    """
    if integrator == "reversible":
        if interval is not None:
            raise InvalidInputError("interval is a checkpointed run's (integrator 'kdk' or "
                                    "'dkd'); a reversible run keeps no checkpoints")
        run = ReversibleRun(particles, solver, dt=dt, steps=steps, lattice=lattice)
    else:
        if lattice is not None:
            raise InvalidInputError("lattice is the reversible integrator's; integrator "
                                    f"{integrator!r} runs in floating point")
        run = CheckpointedRun(particles, solver, dt=dt, steps=steps, integrator=integrator,
                              interval=interval)
    loss, *bars = loss_grad(run.positions, run.velocities, run.mass.copy())
    if len(bars) not in (2, 3):
        raise InvalidInputError("loss_grad must return (loss, pos_bar, vel_bar) or "
                                "(loss, pos_bar, vel_bar, mass_bar)")
    return run.backward(*bars, loss=float(loss))


def _lattice_points(values, shape: tuple, name: str) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype != np.int64 or values.shape != shape:
        raise InvalidInputError(f"end's {name} must be int64 of shape {shape}, got "
                                f"{values.dtype} {values.shape}")
    return values.copy()


def _step(state: LatticeState, dt: float) -> None:
    state.drift(0.5 * dt)
    state.compute_accelerations()
    state.kick(dt)
    state.drift(0.5 * dt)
