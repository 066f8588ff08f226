"""The base of solvers that compute on a GPU compute device (:mod:`orrery.engine.compute`).

A subclass implements ``launch_accelerations`` on device arrays (and ``padding_for`` when its
kernels need padded arrays); this base
opens the device, provides the host-array API (``accelerations``: upload, launch, download) and
returns a device-resident :class:`DeviceState` from ``bind`` so a Simulation keeps its bodies on
the device. That state is checked for NaN and infinity, as the CPU solvers check their input on
every evaluation, whenever it comes to the host and at least every
:data:`FINITE_CHECK_INTERVAL_S` seconds of evaluations (a copy of the positions then: checking
every step would cost a transfer per step).
"""

from __future__ import annotations

import time
from abc import abstractmethod

import numpy as np

from ..compute import DeviceArray, DeviceUnavailableError, KernelEvent, open_device
from ..errors import InvalidInputError, SolverUnavailableError
from ..particles import Particles, check_finite, check_fits
from ._base import Solver
from ._device_state import DeviceState, pack, padded_count

# Longest stretch of evaluations between two checks of a device-resident state for NaN and
# infinity; one check copies the positions to the host, a fraction of a per-cent of a second.
FINITE_CHECK_INTERVAL_S = 1.0


class GpuSolver(Solver):
    """``device`` is a device string (``"cuda:0"``, ``"sycl:cpu"``, ...; None = first found)."""

    def __init__(self, *, precision, softening, device, **params):
        super().__init__(precision=precision, softening=softening, **params)
        try:
            self.context = open_device(device)
        except DeviceUnavailableError as error:
            raise SolverUnavailableError(f"solver {self.name!r}: {error}") from None
        if precision == "f64" and not self.context.info.fp64:
            raise SolverUnavailableError(f"{self.context.info.spec} ({self.context.info.name}) "
                                         "has no float64 support; use precision='f32'")
        self.params["device"] = self.context.info.spec
        self._staging: tuple[DeviceArray, DeviceArray] | None = None
        self._events: list[KernelEvent] = []
        self.last_launch: dict = {}

    def padding_for(self, n: int) -> int:
        """Body arrays for ``n`` bodies handed to ``launch_accelerations`` have a multiple of
        this many rows (zero-mass padding)."""
        return 1

    @abstractmethod
    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        """Queue kernels writing (ax, ay, az, potential or 0) of the first ``count`` rows of
        ``body`` (padded ``real4`` rows: x, y, z, mass) into ``out`` (same shape). What it
        chose (tile sizes, ...) goes into ``self.last_launch``, which joins ``last_stats``."""

    def record_stats(self, start: float, events: list[KernelEvent]) -> None:
        """Wall and device seconds of ``events`` (queued from ``start``) become ``last_stats``
        when it is read; reading waits for the events, and ``seconds`` is wall time from
        ``start`` to that read (so read it right after the evaluation)."""
        launch = dict(self.last_launch)

        def compute() -> dict:
            kernel_seconds = sum(event.seconds() for event in events)
            return {"seconds": time.perf_counter() - start, "kernel_seconds": kernel_seconds,
                    "device": self.context.info.spec, **launch}

        self._defer_stats(compute)

    def _compute(self, pos, mass, potential):
        n = pos.shape[0]
        padded = padded_count(n, self.padding_for(n))
        if self._staging is None or self._staging[0].shape[0] != padded:
            self._staging = (self.context.empty((padded, 4), self.dtype),
                             self.context.empty((padded, 4), self.dtype))
        body, out = self._staging
        body.upload(pack(pos, mass, padded, self.dtype))
        self._events = self.launch_accelerations(body, out, n, potential=potential)
        result = out.download()
        acc = np.ascontiguousarray(result[:n, :3])
        return acc, (np.ascontiguousarray(result[:n, 3]) if potential else None)

    def _extra_stats(self) -> dict:
        return {"kernel_seconds": sum(event.seconds() for event in self._events),
                "device": self.context.info.spec, **self.last_launch}

    def bind(self, particles: Particles) -> DeviceState:
        check_fits(particles, self.dtype)
        return _CheckedDeviceState(self, particles)


class _CheckedDeviceState(DeviceState):
    """A :class:`DeviceState` that refuses to go on from, or hand out, a non-finite state
    (:class:`InvalidInputError`, as the CPU solvers raise)."""

    def __init__(self, solver, particles):
        super().__init__(solver, particles)
        self._next_check = time.perf_counter() + FINITE_CHECK_INTERVAL_S

    def compute_accelerations(self) -> None:
        super().compute_accelerations()
        if time.perf_counter() >= self._next_check:
            self.positions()

    def positions(self) -> np.ndarray:
        pos = super().positions()
        check_finite(pos, "position")
        self._next_check = time.perf_counter() + FINITE_CHECK_INTERVAL_S
        return pos

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        pos, vel, mass = super().snapshot()
        check_finite(pos, "position")
        check_finite(vel, "velocity")
        return pos, vel, mass

    def potentials(self) -> np.ndarray:
        pot = super().potentials()
        check_finite(pot, "potential")
        return pot

    def energies(self) -> tuple[float, float]:
        kinetic, potential = super().energies()
        if not (np.isfinite(kinetic) and np.isfinite(potential)):
            self.snapshot()  # names the first non-finite particle
            self.potentials()
            raise InvalidInputError(f"the state's energy is not finite (kinetic {kinetic}, "
                                    f"potential {potential}): a position, velocity or "
                                    "potential is NaN or infinite")
        return kinetic, potential
