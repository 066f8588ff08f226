"""A reversible run and its backward pass on a GPU solver's device (``engine/gradients.py``'s
``ReversibleRun`` with a solver that has a device VJP, ``contracts.DeviceForceVjp``).

The lattice state (``long`` lattice points), the force kernels' rows, the adjoint (float64) and
the VJP's cotangents stay in device memory for the whole run: a step queues kernels only
(``kernels/lattice.cl``, the solver's ``launch_accelerations`` and ``launch_vjp``), and the
host reads the lattice's exit flags once a pass, the final state when it is asked for, and the
gradient at the end. The lattice steps are the host's (``engine/lattice.py``) operation for
operation, and the rows the forces are evaluated at are the host path's (float64 positions
rounded to the solver's precision), so a run here reaches the host run's lattice points bit for
bit. The device needs float64 (the lattice's increments) whatever the solver's precision.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..compute import InFlight, launch_size
from ..errors import InvalidInputError
from ..lattice import LATTICE_LIMIT, Lattice
from ._device_state import INTEGRATE_GROUP, pack, padded_count

# No particle has left the lattice (the exit flags' value until one does).
NONE_LEFT = np.iinfo(np.int32).max
# ``progress(done, total)``: called after each step of a run or of its backward pass, with the
# steps done so far and the pass's steps in all. Here a step is done once it is queued; the
# queue holds at most ``InFlight``'s few steps, so the count runs that little ahead.
Progress = Callable[[int, int], None]


class DeviceLatticeRun:
    """The lattice points ``qpos``, ``qvel`` (int64 (n, 3)) and ``mass`` of a reversible run on
    ``solver``'s device, stepped there."""

    def __init__(self, solver, lattice: Lattice, qpos: np.ndarray, qvel: np.ndarray,
                 mass: np.ndarray):
        context, dtype = solver.context, solver.dtype
        self.solver, self.lattice, self.n = solver, lattice, len(mass)
        self.padded = padded_count(self.n, solver.padding_for(self.n))
        self.qpos = context.upload(qpos, "bodies.lattice")
        self.qvel = context.upload(qvel, "velocities.lattice")
        # The rows the forces are evaluated at: masses now, positions written before each
        # evaluation (lattice_bodies); the padding stays zero-mass bodies at the origin.
        self.body = context.upload(pack(np.zeros((self.n, 3)), mass, self.padded, dtype),
                                   "bodies.rows")
        self.acc = context.zeros((self.padded, 4), dtype, "accelerations.rows")
        self._left = context.empty((2,), np.int32, "temporaries.lattice_left")
        self._program = context.build(["lattice.cl"], package=__package__,
                                      defines={"REAL_BITS": dtype.itemsize * 8})
        self._global = launch_size(self.n, INTEGRATE_GROUP)
        self._in_flight = InFlight()

    def _launch(self, name: str, *args):
        return self._program.kernel(name).launch(self._global, INTEGRATE_GROUP, *args)

    def set_state(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        self.qpos.upload(qpos)
        self.qvel.upload(qvel)

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """Host copies of the lattice points ``(qpos, qvel)``."""
        return self.qpos.download(), self.qvel.download()

    def _drift(self, dt: float):
        """Drift by ``dt``; the kernel's event."""
        factor = float(dt) * (self.lattice.velocity_unit / self.lattice.position_unit)
        return self._launch("lattice_drift", self.qpos, self.qvel, np.int32(self.n), np.float64(factor),
                     self._left)

    def _accelerations_and_kick(self, dt: float) -> None:
        """Evaluate the forces at the lattice positions and kick by ``dt``."""
        self._launch("lattice_bodies", self.qpos, np.int32(self.n),
                     np.float64(self.lattice.position_unit), self.body)
        self.solver.launch_accelerations(self.body, self.acc, self.n, potential=False)
        self._launch("lattice_kick", self.qvel, self.acc, np.int32(self.n),
                            np.float64(float(dt) / self.lattice.velocity_unit), self._left)

    def forward(self, steps: int, dt: float, progress: Progress | None = None) -> None:
        """``steps`` drift-kick-drift steps of ``dt`` (InvalidInputError if one left the
        lattice)."""
        self._left.upload(np.full(2, NONE_LEFT, np.int32))
        for done in range(1, steps + 1):
            self._in_flight.admit()
            self._drift(0.5 * dt)
            self._accelerations_and_kick(dt)
            self._in_flight.add(self._drift(0.5 * dt))
            if progress is not None:
                progress(done, steps)
        self._raise_if_left()

    def backward(self, steps: int, dt: float, x_bar: np.ndarray, v_bar: np.ndarray,
                 m_bar: np.ndarray, progress: Progress | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Walk ``steps`` steps of ``dt`` back from the state held, carrying the adjoint
        ``(x_bar, v_bar, m_bar)`` (float64, host) back with them; the adjoint at the start."""
        context, n, half = self.solver.context, np.int32(self.n), np.float64(0.5 * dt)
        adjoint = (context.upload(x_bar, "adjoint.positions"),
                   context.upload(v_bar, "adjoint.velocities"),
                   context.upload(m_bar, "adjoint.masses"))
        x_dev, v_dev, m_dev = adjoint
        # The VJP's rows go where the accelerations were: the kick has read them, and the
        # next step's evaluation writes them again (the queue runs in order). A solver whose
        # VJP runs in place takes its cotangent rows there too.
        vjp = self.acc
        cotangent = vjp if self.solver.vjp_in_place else context.zeros(
            (self.padded, 4), self.solver.dtype, "adjoint.cotangents")
        self._left.upload(np.full(2, NONE_LEFT, np.int32))
        for done in range(1, steps + 1):
            self._in_flight.admit()
            self._drift(-0.5 * dt)
            self._launch("adjoint_drift", v_dev, x_dev, n, half)
            self._accelerations_and_kick(-dt)
            self._launch("adjoint_cotangent", v_dev, n, np.float64(dt), cotangent)
            self.solver.launch_vjp(self.body, cotangent, vjp, self.n, potential=False)
            self._launch("adjoint_add", x_dev, m_dev, vjp, n)
            self._drift(-0.5 * dt)
            self._in_flight.add(self._launch("adjoint_drift", v_dev, x_dev, n, half))
            if progress is not None:
                progress(done, steps)
        self._raise_if_left()
        return x_dev.download(), v_dev.download(), m_dev.download()

    def _raise_if_left(self) -> None:
        """InvalidInputError naming the first particle (by index) whose position or velocity
        would have left the lattice in the pass just queued."""
        left = self._left.download()
        for what, particle, span in (("position", left[0], self.lattice.position_range),
                                     ("velocity", left[1], self.lattice.velocity_range)):
            if particle != NONE_LEFT:
                raise InvalidInputError(
                    f"a step would take the {what} of particle {particle} off the reversible "
                    f"integrator's lattice (|{what}| <= {span:.6g} a component, increments "
                    f"below {LATTICE_LIMIT} units): give the run a wider lattice "
                    "(Lattice.covering, or a larger headroom in Lattice.for_state) or a "
                    "smaller dt")
