"""The base of solvers that compute on a GPU compute device (:mod:`orrery.engine.compute`).

A subclass implements ``launch_accelerations`` on device arrays (and ``padding_for`` when its
kernels need padded arrays); this base opens the device, provides ``accelerations`` for host
arrays (NumPy in and out: the arrays are uploaded as they are, through pinned buffers on CUDA,
and packed and checked on the device) and for device arrays of other frameworks on the same
device (DLPack, the CUDA or SYCL array interfaces: read in place, results handed back as the
backend's device arrays, nothing through the host; :mod:`._device_input`), and returns a
device-resident :class:`DeviceState` from ``bind`` (host particles) or ``bind_device`` (device
arrays) so a Simulation keeps its bodies on the device. That state is checked for NaN and
infinity, as the CPU solvers check their input on every evaluation, whenever it comes to the
host and at least every :data:`FINITE_CHECK_INTERVAL_S` seconds of evaluations (then by a
kernel, which brings eight integers to the host and no particle data).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import Mapping

import numpy as np

from ..compute import (DeviceArray, DeviceUnavailableError, KernelEvent, MemoryUsage, gib,
                       host_array, open_device)
from ..diagnostics import Diagnostics
from ..errors import InvalidInputError, SolverUnavailableError
from ..initial_conditions.on_device import blocks, check_seed
from ..particles import (SUPPORTED_DTYPES, Particles, check_count, check_finite, check_fits,
                         check_no_coincident, check_shapes)
from ._base import Solver, checked_potential_flag
from ._device_input import RowPacker
from ._device_state import MAX_STATE_BODIES, DeviceState, DrawnBodies, padded_count, state_bytes

# Longest stretch of evaluations between two checks of a device-resident state for NaN and
# infinity; one check is a kernel and a read of eight integers, far below a per-cent of a second.
FINITE_CHECK_INTERVAL_S = 1.0


class GpuSolver(Solver):
    """``device`` is a device string (``"cuda:0"``, ``"sycl:cpu"``, ...; None = first found)."""

    # Whether an evaluation queues its kernels without waiting for the host, so a step that
    # makes one can be captured into a graph and replayed (DeviceState.advance).
    step_graphs = False

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
        self._uploads: dict[str, DeviceArray] = {}
        self._results: tuple[DeviceArray, DeviceArray] | None = None
        self.packer = RowPacker(self.context, self.dtype)
        self._events: list[KernelEvent] = []
        self.last_launch: dict = {}

    def padding_for(self, n: int) -> int:
        """Body arrays for ``n`` bodies handed to ``launch_accelerations`` have a multiple of
        this many rows (zero-mass padding)."""
        return 1

    def evaluation_bytes(self, n: int) -> dict[str, int]:
        """Bytes per array name that evaluations of ``n`` bodies allocate whatever the bodies'
        places (none here: a subclass with arrays sized by ``n`` adds them)."""
        return {}

    def device_bytes(self, n: int) -> dict[str, int]:
        """Bytes per array name of a device-resident run of ``n`` bodies that ``n`` alone
        decides: the state's particle arrays and ``evaluation_bytes``. Arrays sized by a tree's
        shape (gpu-fmm's node plan and interaction lists) come on top: each is checked against
        the device when it is allocated (``Context.empty``)."""
        total = state_bytes(padded_count(n, self.padding_for(n)), self.dtype)
        for name, nbytes in self.evaluation_bytes(n).items():
            total[name] = total.get(name, 0) + nbytes
        return total

    def body_limit(self) -> tuple[int, str]:
        """The most bodies a device-resident run of this solver holds before some kernel's
        32-bit index or offset overflows, and which kernels those are."""
        return MAX_STATE_BODIES, "the state's kernels index bodies with 32-bit integers"

    def check_device_fits(self, n: int) -> None:
        """Refuse, before anything is allocated, a run of ``n`` bodies whose ``device_bytes``
        and the arrays already held do not fit the device's memory, or of more bodies than
        ``body_limit`` allows (InvalidInputError)."""
        limit, reason = self.body_limit()
        if n > limit:
            raise InvalidInputError(f"{self.name}: a device-resident run holds at most {limit} bodies "
                                    f"({reason}), got {n}")
        info, held = self.context.info, self.context.memory.total.live
        needed = sum(self.device_bytes(n).values())
        if held + needed > info.global_memory_bytes:
            in_use = f", {gib(held)} of it already in use" if held else ""
            raise InvalidInputError(
                f"{self.name}: {n} bodies need at least {gib(needed)} of device memory "
                f"({needed / n:.0f} bytes a body for the state and the tree); {info.spec} "
                f"({info.name}) has {gib(info.global_memory_bytes)}{in_use}")

    def measure_memory(self, particles: Particles, *, evaluations: int = 2) -> MemoryUsage:
        """The device memory a device-resident run of ``particles`` takes: what binding them
        and ``evaluations`` force evaluations allocate, counted by the compute layer
        (``MemoryUsage``: peak bytes, and per array name what was live at the peak). Only
        arrays allocated here count, so measure a solver that has not yet evaluated this many
        bodies (it keeps its arrays between evaluations). The state is dropped afterwards."""
        with self.context.memory.measure() as usage:
            state = self.bind(particles)
            for _ in range(evaluations):
                state.compute_accelerations()
            state.synchronize()
        return usage

    @abstractmethod
    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        """Queue kernels writing (ax, ay, az, potential or 0) of the first ``count`` rows of
        ``body`` (padded ``real4`` rows: x, y, z, mass) into ``out`` (same shape). What it
        chose (tile sizes, ...) goes into ``self.last_launch``, which joins ``last_stats``."""

    def locality_order(self, count: int) -> DeviceArray | None:
        """The last evaluation's bodies in an order that keeps neighbours in space together
        (uint32 (count,) on the device: entry k is the caller's index of the k-th body), where
        the solver has one for ``count`` bodies, else None. The next evaluation rewrites it:
        copy it in queue order to keep it (a frame's ``Snapshot.locality_order``)."""
        return None

    def record_step_stats(self, start: float, event: KernelEvent) -> None:
        """A step replayed from a graph (``DeviceState.advance``): its device seconds with the
        kicks and drifts (``step_s``) and wall seconds become ``last_stats``; a graph's kernels
        are not timed one by one, so stage times come only from steps launched kernel by kernel."""
        self._defer_stats(lambda: self.timed_stats(start, lambda: {
            "step_s": event.seconds(), "graph": True, "device": self.context.info.spec}))

    def record_stats(self, start: float, events: list[KernelEvent]) -> None:
        """Wall and device seconds of ``events`` (queued from ``start``) become ``last_stats``
        when it is read; reading waits for the events, and ``wall_s`` is wall time from
        ``start`` to that read (so read it right after the evaluation)."""
        launch = dict(self.last_launch)
        self._defer_stats(lambda: self.timed_stats(start, lambda: self._device_stats(events, launch)))

    # -- accelerations of host or device arrays ----------------------------------------------
    def accelerations(self, pos, mass, *, potential: bool = False):
        """Accelerations ``(n, 3)`` (and potentials ``(n,)`` when ``potential``) in this
        solver's precision: NumPy arrays for host arrays; for device arrays on this solver's
        device (CuPy, PyTorch, dpnp, ...: DLPack or the CUDA/SYCL array interfaces, float32 or
        float64, any strides) arrays on that device (CuPy on CUDA, :class:`UsmArray` on SYCL),
        with no transfer of particle data through the host."""
        potential = checked_potential_flag(potential)
        start = time.perf_counter()
        wrapped = self._wrapped(pos, mass)
        if wrapped is None:
            acc, pot = self._compute(*self._host_inputs(pos, mass), potential)
        else:
            acc, pot = self._evaluate(*wrapped, potential, on_host=False)
            acc, pot = (self.context.export(acc), self.context.export(pot) if potential else None)
        # Deferred as for a device-resident state: asking the ~50 events of a tree evaluation
        # for their times waits for each, which a call that nobody reads the stats of need not.
        self.record_stats(start, self._events)
        return (acc, pot) if potential else acc

    def _wrapped(self, pos, mass) -> tuple[DeviceArray, DeviceArray] | None:
        """Device arrays of this solver's device viewed in place (shapes checked; values are
        checked on the device), or None for host arrays."""
        wrapped = [self.context.wrap(pos, "positions"), self.context.wrap(mass, "masses")]
        if wrapped[0] is None and wrapped[1] is None:
            return None
        if wrapped[0] is None or wrapped[1] is None:
            raise InvalidInputError(
                f"positions and masses must be on one device: got positions on "
                f"{'the host' if wrapped[0] is None else self.context.info.spec} and masses on "
                f"{'the host' if wrapped[1] is None else self.context.info.spec}")
        check_shapes(wrapped[0].shape, wrapped[1].shape)
        return wrapped[0], wrapped[1]

    def _host_inputs(self, pos, mass) -> tuple[np.ndarray, np.ndarray]:
        """Host arrays as they are (converted only from other floating types); only shapes
        and coincident bodies are checked here, values on the device."""
        arrays = [host_array(pos), host_array(mass)]
        check_shapes(arrays[0].shape, arrays[1].shape)
        for index, array in enumerate(arrays):
            if not np.issubdtype(array.dtype, np.floating):
                raise InvalidInputError("positions and masses must be floating-point arrays")
            if array.dtype not in SUPPORTED_DTYPES:
                arrays[index] = array.astype(self.dtype)
        if self.softening == 0:
            check_no_coincident(arrays[0])
        return arrays[0], arrays[1]

    def _compute(self, pos, mass, potential):
        """NumPy results for host arrays of a supported float type: uploaded as they are into
        buffers reused between calls (pinned staging on CUDA), evaluated, downloaded."""
        acc, pot = self._evaluate(self._upload("positions", pos), self._upload("masses", mass),
                                  potential, on_host=True)
        return acc.download(), (pot.download() if potential else None)

    def _upload(self, role: str, host: np.ndarray) -> DeviceArray:
        """``host`` in this solver's reused device buffer for ``role``."""
        host = np.ascontiguousarray(host)
        array = self._uploads.get(role)
        if array is None or array.shape != host.shape or array.dtype != host.dtype:
            array = self._uploads[role] = self.context.empty(host.shape, host.dtype, f"bodies.host_{role}")
        array.upload(host)
        return array

    def _evaluate(self, pos: DeviceArray, mass: DeviceArray, potential: bool, *, on_host: bool):
        """``(acc, pot or None)`` device arrays for device arrays ``pos`` and ``mass`` of any
        layout. ``on_host``: they came from host arrays, which were checked for coincident
        bodies there, and the results go to the host through buffers reused between calls."""
        n = pos.shape[0]
        padded = padded_count(n, self.padding_for(n))
        if self._staging is None or self._staging[0].shape[0] != padded:
            self._staging = (self.context.empty((padded, 4), self.dtype, "bodies.packed"),
                             self.context.empty((padded, 4), self.dtype, "accelerations.packed"))
        body, out = self._staging
        self.packer.pack(body, pos, mass, n)
        if self.softening == 0 and not on_host:
            # The coincidence test is a sort on the host, as for host arrays: with zero
            # softening device arrays cost one copy of the packed positions.
            check_no_coincident(body.download()[:n, :3])
        self._events = self.launch_accelerations(body, out, n, potential=potential)
        if self.accuracy_check is not None and not potential:
            self.accuracy_check.device(self.context, body, out, n, self.softening)
        if on_host and self._results is not None and self._results[0].shape[0] == n:
            acc, pot = self._results
        else:
            acc = self.context.empty((n, 3), self.dtype, "accelerations.results")
            pot = self.context.empty((n,), self.dtype, "accelerations.potentials")
            if on_host:
                self._results = (acc, pot)
        self.packer.unpack(out, n, acc, pot if potential else None)
        return acc, (pot if potential else None)

    def _device_stats(self, events: list[KernelEvent], launch: dict) -> dict:
        """Device seconds of ``events`` (waiting for them) and the launch configuration."""
        return {"kernel_s": sum(event.seconds() for event in events),
                "device": self.context.info.spec, **launch}

    def bind(self, particles: Particles) -> DeviceState:
        check_fits(particles, self.dtype)
        self.check_device_fits(particles.n)
        return _CheckedDeviceState(self, particles)

    def bind_drawn(self, name: str, count: int, *, seed: int = 0,
                   parameters: Mapping[str, object] | None = None) -> DeviceState:
        """A device-resident state whose initial conditions ``name`` (``plummer``,
        ``galaxy_collision``: ``on_device.DEVICE_GENERATORS``) are drawn on the device
        (``initial_conditions.on_device``): nothing of the particles is built on the host. The
        same distribution as the host generator's for ``count``, ``parameters`` (its other
        keyword arguments but the seed and precision), not the same bodies for the seed."""
        count = check_count(count)
        parameters = dict(parameters or {})
        blocks(name, count, parameters)
        check_seed(seed)
        self.check_device_fits(count)
        return _CheckedDeviceState(self, None, drawn=DrawnBodies(name, count, seed, parameters))

    def bind_device(self, pos, vel, mass) -> DeviceState:
        """A device-resident state copied, on the device, from device arrays of another
        framework on this solver's device (as ``accelerations`` takes them)."""
        arrays = [self.context.wrap(values, what)
                  for values, what in ((pos, "positions"), (vel, "velocities"), (mass, "masses"))]
        if any(array is None for array in arrays):
            raise InvalidInputError(f"positions, velocities and masses must all be device arrays "
                                    f"on {self.context.info.spec}; for host arrays build "
                                    "Particles")
        check_shapes(arrays[0].shape, arrays[2].shape, arrays[1].shape)
        self.check_device_fits(arrays[0].shape[0])
        return _CheckedDeviceState(self, None, arrays=tuple(arrays))


class _CheckedDeviceState(DeviceState):
    """A :class:`DeviceState` that refuses to go on from, or hand out, a non-finite state
    (:class:`InvalidInputError`, as the CPU solvers raise)."""

    def __init__(self, solver, particles, arrays=None, drawn=None):
        super().__init__(solver, particles, arrays, drawn)
        self._next_check = time.perf_counter() + FINITE_CHECK_INTERVAL_S

    def _evaluated(self) -> None:
        if time.perf_counter() >= self._next_check:
            self.solver.packer.check(self.body, self.n)  # on the device: no particle data moves
            self._next_check = time.perf_counter() + FINITE_CHECK_INTERVAL_S
        super()._evaluated()

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
        self._check_finite(kinetic, potential)
        return kinetic, potential

    def diagnostics(self) -> Diagnostics:
        diagnostics = super().diagnostics()
        self._check_finite(diagnostics.kinetic, diagnostics.potential, *diagnostics.momentum,
                           *diagnostics.angular_momentum)
        return diagnostics

    def _check_finite(self, kinetic: float, potential: float, *momenta: float) -> None:
        """Sums from the device that are not finite: the first non-finite particle named (from
        a download, only then), else what was summed."""
        if np.isfinite([kinetic, potential, *momenta]).all():
            return
        self.snapshot()  # names the first non-finite particle
        self.potentials()
        raise InvalidInputError(f"the state's energy or momentum is not finite (kinetic {kinetic}, "
                                f"potential {potential}): a position, velocity or potential is "
                                "NaN or infinite")
