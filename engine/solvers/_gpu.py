"""The base of solvers that compute on a GPU compute device (:mod:`orrery.engine.compute`).

A subclass implements ``launch_accelerations`` on device arrays (and ``padding_for`` when its
kernels need padded arrays); this base
opens the device, provides the host-array API (``accelerations``: upload, launch, download) and
returns a device-resident :class:`DeviceState` from ``bind`` so a Simulation keeps its bodies on
the device.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from ..compute import DeviceArray, DeviceUnavailableError, KernelEvent, open_device
from ..errors import SolverUnavailableError
from ..particles import Particles
from ._base import Solver
from ._device_state import DeviceState, pack, padded_count


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
        """Wait for ``events`` and store wall and device seconds in ``last_stats``."""
        self._events = events
        self.store_stats(start)

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
        return {"kernel_s": sum(event.seconds() for event in self._events),
                "device": self.context.info.spec, **self.last_launch}

    def bind(self, particles: Particles) -> DeviceState:
        return DeviceState(self, particles)
