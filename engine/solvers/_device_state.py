"""Simulation state that lives on a compute device between steps.

Bodies are packed as ``real4`` rows (x, y, z, mass), velocities as (vx, vy, vz, 0) and
accelerations as (ax, ay, az, potential), padded to the solver's ``padding_for(n)`` with
zero-mass bodies at the origin. Kick and drift are kernels (``integrate.cl``); the host sees
positions only when it asks for them. Any :class:`GpuSolver` drives it: the solver supplies
only ``launch_accelerations``.

Where the context has graphs (CUDA) and the solver's evaluation never waits for the host
(``GpuSolver.step_graphs``), a Simulation's step is captured once and replayed (``advance``):
one launch from the host per step instead of one per kernel (about 60 for gpu-tree), so a step
needs the GIL once and the host's time per step does not grow with the number of stages.
"""

from __future__ import annotations

import time
from types import MappingProxyType
from typing import Mapping, NamedTuple

import numpy as np

from .. import frame_encoding as encoding
from ..compute import InFlight, Snapshot
from ..diagnostics import Diagnostics
from ..initial_conditions.on_device import draw_on_device
from ..particles import Particles

# Work-group size of the kick and drift kernels (a multiple of every sub-group size in use).
INTEGRATE_GROUP = 64
# The energy reduction: work-group size and most work-groups (partial sums downloaded), and the
# sums each group writes (energy.cl: kinetic, potential, momentum, angular momentum).
ENERGY_GROUP = 256
ENERGY_GROUPS = 256
DIAGNOSTIC_SUMS = 8
# Most bodies a state holds. Element offsets are 64-bit (3 i of a frame's (n, 3) rows in
# integrate.cl's positions_xyz, frames.cl, interchange.cl), but the state's kernels index bodies
# with 32-bit signed integers (GLOBAL_ID, the count passed as int) over rows padded to the
# solver's and the launches' multiples (below 2**16), and energy.cl's grid-stride loop steps ENERGY_GROUP *
# ENERGY_GROUPS (65,536) past its last body: a margin of 2**17 rows keeps every index below 2**31.
INDEX_MARGIN = 2**17
MAX_STATE_BODIES = 2**31 - INDEX_MARGIN
# The state's arrays as the compute layer counts them (``Context.memory``).
BODIES, VELOCITIES, ACCELERATIONS = "bodies.state", "velocities.state", "accelerations.state"


class DrawnBodies(NamedTuple):
    """Initial conditions to draw on the device (``initial_conditions.on_device``): the
    generator's name, the body count, the seed and the generator's other parameters."""

    name: str
    count: int
    seed: int
    parameters: Mapping[str, object] = MappingProxyType({})


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


def state_bytes(padded: int, dtype) -> dict[str, int]:
    """Bytes per array name of a state's particle arrays: ``padded`` rows of four ``dtype``
    values each of bodies, velocities and accelerations."""
    rows = padded * 4 * np.dtype(dtype).itemsize
    return {BODIES: rows, VELOCITIES: rows, ACCELERATIONS: rows}


class DeviceState:
    """Positions, velocities and masses in device memory (the :class:`HostState` methods)."""

    def __init__(self, solver, particles: Particles | None, arrays=None, drawn: DrawnBodies | None = None):
        """From host ``particles``; or (``particles`` None) from ``arrays``: (pos, vel, mass)
        :class:`DeviceArray` views of another framework's arrays, packed on the device; or from
        ``drawn``: initial conditions drawn on the device into the state's rows."""
        self.solver = solver
        context, dtype = solver.context, solver.dtype
        self._n = (particles.n if particles is not None else drawn.count if drawn is not None
                   else arrays[0].shape[0])
        self.padded = padded_count(self._n, solver.padding_for(self._n))
        if particles is not None:
            self.body = context.upload(pack(particles.pos, particles.mass, self.padded, dtype), BODIES)
            self.vel = context.upload(pack(particles.vel, None, self.padded, dtype), VELOCITIES)
        elif drawn is not None:
            # The padding rows stay zero-mass bodies at rest at the origin.
            self.body = context.zeros((self.padded, 4), dtype, BODIES)
            self.vel = context.zeros((self.padded, 4), dtype, VELOCITIES)
            draw_on_device(drawn.name, context, self.body, self.vel, self._n, seed=drawn.seed,
                           parameters=drawn.parameters)
        else:
            pos, vel, mass = arrays
            self.body = context.empty((self.padded, 4), dtype, BODIES)
            self.vel = context.empty((self.padded, 4), dtype, VELOCITIES)
            solver.packer.pack(self.body, pos, mass, self._n)
            solver.packer.pack(self.vel, vel, None, self._n, what="velocity")
        self.acc = context.zeros((self.padded, 4), dtype, ACCELERATIONS)
        program = context.build(["integrate.cl"], package=__package__,
                                defines={"REAL_BITS": dtype.itemsize * 8})
        self._kick = program.kernel("kick")
        self._drift = program.kernel("drift")
        self._positions_xyz = program.kernel("positions_xyz")
        self._locality_order_copy = program.kernel("locality_order_copy")
        self._global = padded_count(self._n, INTEGRATE_GROUP)
        accum = np.dtype(np.float64 if context.info.fp64 else np.float32)
        self._energy_partials = context.build(["energy.cl"], package=__package__, defines={
            "REAL_BITS": dtype.itemsize * 8, "ACCUM_BITS": accum.itemsize * 8,
            "ENERGY_GROUP": ENERGY_GROUP, "DIAGNOSTIC_SUMS": DIAGNOSTIC_SUMS}).kernel("energy_partials")
        self._energy_groups = min(ENERGY_GROUPS, -(-self._n // ENERGY_GROUP))
        self._partials = context.empty(DIAGNOSTIC_SUMS * self._energy_groups, accum,
                                       "temporaries.energy_partials")
        self._scratch = None
        self._frames: encoding.DeviceFrames | None = None  # built when a frame is first recorded
        self._in_flight = InFlight()  # one entry per queued force evaluation (a step)
        # Steps replayed from a graph: off where the context or the solver cannot (and once a
        # capture failed: ``graph_unavailable`` says why).
        self.graphs = solver.step_graphs
        self.graph_unavailable: str | None = None
        self._graph = None        # (key, Graph) of the step being replayed
        self._uncaptured = None   # key of the last step run launch by launch
        self._capturing = False

    @property
    def n(self) -> int:
        return self._n

    def compute_accelerations(self) -> None:
        self._launch_accelerations(self.acc, potential=False)
        if not self._capturing:
            self._evaluated()

    def _launch_accelerations(self, out, *, potential: bool) -> None:
        """Queue one evaluation into ``out`` once fewer than ``STEPS_IN_FLIGHT`` are queued
        (under capture only its kernels: ``advance`` waits and times the whole step)."""
        if not self._capturing:
            self._in_flight.admit()
        start = time.perf_counter()
        events = self.solver.launch_accelerations(self.body, out, self._n, potential=potential)
        if self._capturing:
            return
        self.solver.record_stats(start, events)
        if events:
            self._in_flight.add(events[-1])

    def advance(self, key, step) -> None:
        """Run ``step()``, one step's kicks, drifts and evaluations of this state. The second
        step in a row with the same ``key`` (what the step depends on besides the state: the
        integrator and dt) is captured into a graph (the first builds programs and allocates
        buffers outside the capture), and steps with that key are then replayed from it."""
        check = self.solver.accuracy_check
        # A checked step runs kernel by kernel: the check reads the bodies where its forces
        # were computed, which a replayed drift-kick-drift step has moved on from.
        checked = check is not None and check.due()
        graph = self._graph_for(key, step) if self.graphs and not checked else None
        if graph is None:
            step()
            return
        self._in_flight.admit()
        start = time.perf_counter()
        event = graph.launch()
        self._in_flight.add(event)
        self.solver.record_step_stats(start, event)
        self._evaluated()

    def _graph_for(self, key, step):
        """The graph of steps with ``key``: None for the first such step (it runs as it is),
        captured from the second (None if that fails)."""
        if self._graph is not None and self._graph[0] == key:
            return self._graph[1]
        if self._uncaptured != key:
            self._uncaptured = key
            return None
        graph = self._capture(step)
        if graph is not None:
            self._graph = (key, graph)
        return graph

    def _capture(self, step):
        self._capturing = True
        try:
            graph = self.solver.context.capture(step)
        except Exception as error:  # noqa: BLE001 - the step runs as it is; its own errors recur
            graph, self.graph_unavailable = None, f"{type(error).__name__}: {error}"
        finally:
            self._capturing = False
        if graph is None:
            self.graphs = False
            self.graph_unavailable = self.graph_unavailable or "the device has no graphs"
        return graph

    def _evaluated(self) -> None:
        """After an evaluation was queued outside a capture: the solver's accuracy check, where
        one is due. A retune drops the step's graph, which holds the setting it replaced (the
        next step runs as it is, the one after is captured again)."""
        check = self.solver.accuracy_check
        if check is not None and check.device(self.solver.context, self.body, self.acc,
                                              self._n, self.solver.softening):
            self._graph, self._uncaptured = None, None

    def synchronize(self) -> None:
        """Wait until the steps queued so far have finished (a device step does not wait)."""
        self.solver.context.synchronize()

    def kick(self, dt: float) -> None:
        self._kick.launch(self._global, INTEGRATE_GROUP, self.vel, self.acc, np.int32(self._n),
                          self.solver.dtype.type(dt))

    def drift(self, dt: float) -> None:
        self._drift.launch(self._global, INTEGRATE_GROUP, self.body, self.vel, np.int32(self._n),
                           self.solver.dtype.type(dt))

    def accelerations(self) -> np.ndarray:
        """The last evaluation's accelerations, copied to the host once it has finished."""
        return np.ascontiguousarray(self.acc.download()[:self._n, :3])

    def positions(self) -> np.ndarray:
        """Current positions, copied to the host (the one transfer a frame needs)."""
        return np.ascontiguousarray(self.body.download()[:self._n, :3])

    def device_arrays(self) -> tuple:
        """(pos, vel, mass) of the live state as the backend's device arrays (CuPy on CUDA,
        UsmArray on SYCL): views of the state's own memory, no copy; they see later steps, and
        what is written to them changes the state."""
        context, n = self.solver.context, self._n
        return (context.export(self.body, (n, 3), (4, 1)), context.export(self.vel, (n, 3), (4, 1)),
                context.export(self.body, (n,), (4,), offset=3))

    def stage_positions(self, *, download: bool = False) -> Snapshot:
        """The current positions as float32 (n, 3), taken in queue order without waiting (a
        frame): the device copy is there for GL interop, the sample arrives on its own, the
        host copy when asked for (``download``: at once). A frame (not ``download``) of a solver
        with a locality order carries a device copy of it (``Snapshot.locality_order``)."""
        context = self.solver.context
        snapshot = context.snapshot((self._n, 3), np.float32, self._write_positions,
                                    download=download)
        order = None if download else self.solver.locality_order(self._n)
        if order is not None:
            snapshot.locality_order = context.device_snapshot(
                (self._n,), np.uint32, lambda out: self._locality_order_copy.launch(
                    self._global, INTEGRATE_GROUP, order, np.int32(self._n), out))
        return snapshot

    def _write_positions(self, out) -> None:
        self._positions_xyz.launch(self._global, INTEGRATE_GROUP, self.body, np.int32(self._n),
                                   out)

    def stage_frame(self, kind: str) -> Snapshot:
        """The current positions in a recorded frame's encoding (``frame_encoding``: float32,
        float16 or fixed16), narrowed on the device (``frames.cl``) and taken in queue order
        without waiting: the download carries only the stored bytes (6 per body for float16)."""
        if encoding.check_encoding(kind) == encoding.FLOAT32:
            return self.stage_positions(download=True)  # the recorder writes all of it
        return self._frame_kernels().narrowed(kind, self.body)

    def stage_state(self) -> tuple[Snapshot, Snapshot]:
        """(positions, velocities) as (n, 3) arrays in the run's precision, taken in queue
        order without waiting (a keyframe: the state exactly)."""
        frames, dtype = self._frame_kernels(), self.solver.dtype
        return frames.rows(self.body, dtype), frames.rows(self.vel, dtype)

    def prepare_frames(self) -> None:
        """Build the frame kernels now (a recording about to start), not inside its first frame."""
        self._frame_kernels()

    def _frame_kernels(self) -> encoding.DeviceFrames:
        if self._frames is None:
            self._frames = encoding.DeviceFrames(self.solver.context,
                                                 self.solver.dtype.itemsize * 8, self._n,
                                                 self._global, INTEGRATE_GROUP)
        return self._frames

    def snapshot(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Host copies of (pos, vel, mass)."""
        body, vel = self.body.download(), self.vel.download()
        return (np.ascontiguousarray(body[:self._n, :3]), np.ascontiguousarray(vel[:self._n, :3]),
                np.ascontiguousarray(body[:self._n, 3]))

    def _potential_rows(self):
        """Accelerations with potentials of the current state, in a scratch device array."""
        if self._scratch is None:
            self._scratch = self.solver.context.empty((self.padded, 4), self.solver.dtype,
                                                      "accelerations.potentials")
        self._launch_accelerations(self._scratch, potential=True)
        return self._scratch

    def potentials(self) -> np.ndarray:
        return np.ascontiguousarray(self._potential_rows().download()[:self._n, 3])

    def _diagnostic_sums(self) -> np.ndarray:
        """energy.cl's sums (kinetic, potential, momentum, angular momentum), added on the
        device and then over its work-groups in float64 (one potential evaluation)."""
        rows = self._potential_rows()
        self._energy_partials.launch(self._energy_groups * ENERGY_GROUP, ENERGY_GROUP, self.body,
                                     self.vel, rows, np.int32(self._n), self._partials)
        return self._partials.download().reshape(-1, DIAGNOSTIC_SUMS).sum(axis=0, dtype=np.float64)

    def energies(self) -> tuple[float, float]:
        """(kinetic, potential) energy, summed on the device (one potential evaluation)."""
        sums = self._diagnostic_sums()
        return float(sums[0]), float(sums[1])

    def diagnostics(self) -> Diagnostics:
        """Energies and momenta, summed on the device: nothing of the state is downloaded."""
        sums = self._diagnostic_sums().tolist()
        return Diagnostics(sums[0], sums[1], tuple(sums[2:5]), tuple(sums[5:8]))
