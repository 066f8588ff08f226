"""What is drawn: particle positions (this frame's and the previous one's) and population labels
in GPU buffers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine.compute import InteropUnavailableError, gl_buffer_view, sample_stride
from ...engine.errors import InvalidInputError
from ...engine.frame_encoding import widened_on_device
from ...engine.frames import Frame
from . import _gl_calls

# How a frame's positions reach the vertex buffer (shown in the viewer's panel).
INTEROP = "device (CUDA-GL interop)"
HOST = "host upload"

# Position formats the vertex stage reads directly (moderngl attribute formats): float16
# recordings go to the GPU as half floats, without a CPU conversion; anything else is float32.
_POSITION_FORMATS = {np.dtype(np.float32): "3f4", np.dtype(np.float16): "3f2"}


@dataclass(frozen=True)
class HostParticles:
    """The shown frame's positions where they came through the host (for the host splat): this
    frame's and the previous one's (n, 3) arrays in the frame's precision (the same array
    where the particles did not move: the first frame, a restart, a step backwards)."""

    current: np.ndarray
    previous: np.ndarray


@dataclass(frozen=True)
class DeviceParticles:
    """The shown frame's positions where a compute device holds them (for the compute splat):
    this frame's and the previous one's (n, 3) float32 arrays on ``context``, and the snapshots
    they belong to (empty where the scene uploaded them itself). ``order``: the frame's
    locality order where its solver gave one (uint32 (n,) on ``context``, a permutation:
    neighbours in space next to each other, so the splat's work-groups cover few pixels), else
    None."""

    context: object
    current: object
    previous: object
    snapshots: tuple = ()
    order: object = None


class ParticleScene:
    """GPU copies of the latest frame. Two position buffers alternate: the new frame goes into
    the older one, so the previous positions stay for speed colouring without a copy.

    Positions stay in the frame's precision when it is float16 or float32 (``position_format``
    says which; the buffers are reallocated when it changes); other dtypes become float32.

    A frame that carries a device snapshot (a live GPU run) is copied device to device into the
    vertex buffer where the compute layer can view that buffer (CUDA-GL interop), else through
    the host; ``upload_path`` says which, ``interop_unavailable`` why not. ``interop=False``
    keeps every frame on the host path. Either copy into the vertex buffers is made when a GL
    pass first reads ``current`` or ``previous``, not when the frame is shown: the compute splat
    draws from the device copy itself, and each interop copy maps the buffer, which cost the
    simulation beside it about 5% of its steps at 60 frames a second (1M particles, H200).

    ``device`` holds the frame's positions on a compute device where they are there anyway (a
    live frame's snapshot) or where ``compute`` names a context to upload host frames to (so
    their particles can be splatted there); else None. ``host`` holds them where the frame
    came through the host (for the host splat); else None.
    """

    def __init__(self, ctx, *, interop: bool = True, compute=None):
        self.ctx = ctx
        self.upload_path = HOST
        self.interop_unavailable: str | None = None if interop else "turned off"
        self._views: list = []  # device views of the two position buffers, when interop works
        # Interop copies not made yet, {buffer index: (sequence, snapshot)}, and the sequence
        # of the frame each position buffer holds (None: unknown).
        self._unfilled: dict[int, tuple] = {}
        self._holds: list = [None, None]
        self.device: DeviceParticles | None = None
        self.host: HostParticles | None = None
        self._compute = compute
        self.population_version = 0  # changes whenever the population labels change
        self.count = 0
        self.position_format = _POSITION_FORMATS[np.dtype(np.float32)]
        self.layout_version = 0  # changes whenever buffers are reallocated
        self._buffers = []
        self.population_buffer = None
        self.parity = 0
        self.speed_scale = 0.0
        self.interval = 0.0  # time between the previous and the current frame (0: none)
        self._host_current: np.ndarray | None = None  # the last frame's host copy, if any
        # The last sample (every sample_stride-th particle) of a frame and its time: what the
        # speed colour map is scaled by.
        self._sample: np.ndarray | None = None
        self._sample_time = None
        self._time = None
        self._sequence = None
        self._population_labels: np.ndarray | None = None
        self._population_source = None  # the array last compared, to skip comparing it again
        # Per-particle masses and values for the density pass, uploaded only when asked for.
        self.mass_buffer = None
        self.value_buffer = None
        self.support_buffer = None
        self._extras: dict[str, object] = {}

    @property
    def sequence(self):
        """The ``sequence`` of the frame shown (None before the first)."""
        return self._sequence

    @property
    def population(self) -> np.ndarray | None:
        """The labels of the shown particles (host copy)."""
        return self._population_labels

    @property
    def current(self):
        """The GL buffer of this frame's positions."""
        self.fill_vertex_buffers()
        return self._buffers[self.parity]

    @property
    def previous(self):
        """The GL buffer of the previous frame's positions."""
        self.fill_vertex_buffers()
        return self._buffers[1 - self.parity]

    def fill_vertex_buffers(self) -> None:
        """Copy the shown frames into the GL vertex buffers where they are not yet: what every
        GL pass calls before it draws (its vertex arrays are cached, so reading ``current``
        once is not enough)."""
        unfilled, self._unfilled = self._unfilled, {}
        for index, (sequence, source) in unfilled.items():
            if self._holds[index] == sequence:
                continue
            if isinstance(source, np.ndarray):
                _gl_calls.write(self._buffers[index], source)
            else:
                self._views[index].write(source)  # a device snapshot, through interop
            self._holds[index] = sequence

    def show(self, frame: Frame, population: np.ndarray) -> bool:
        """Upload ``frame`` unless it is already shown; returns whether anything changed."""
        if frame.sequence == self._sequence and self._time is not None:
            return False
        snapshot = frame.snapshot
        if snapshot is not None and snapshot.device is not None and \
                self.interop_unavailable is None:
            if self._show_on_device(frame, population):
                return True
        self.upload_path = HOST
        positions = np.asarray(frame.positions)
        if positions.dtype not in _POSITION_FORMATS:
            positions = positions.astype(np.float32)
        positions = np.ascontiguousarray(positions)
        if not self._buffers or len(positions) != self.count or \
                _POSITION_FORMATS[positions.dtype] != self.position_format:
            self._allocate(len(positions), positions.dtype)
        self._show_population(population, len(positions))
        interval = None if self._time is None else frame.time - self._time
        sample = positions[::sample_stride(len(positions))]
        if interval is not None and interval > 0 and self._host_current is not None:
            self.parity = 1 - self.parity
            # the previous buffer holds, or still waits for, the last frame
            self._unfilled = {**self._unfilled, self.parity: (frame.sequence, positions)}
            self.speed_scale = self._speed_scale(sample, frame.time)
            self.interval = interval
            self.host = HostParticles(positions, self._host_current)
        else:
            # first frame, a restart or a step backwards: no meaningful speed, show it as zero
            self._unfilled = {index: (frame.sequence, positions) for index in (0, 1)}
            self.interval = 0.0
            self.host = HostParticles(positions, positions)
        self._keep_on_device(positions, moved=interval is not None and interval > 0,
                             ordered=locality_order(frame, self._compute))
        self._host_current = positions
        self._sample, self._sample_time = sample, frame.time
        self._time = frame.time
        self._sequence = frame.sequence
        return True

    def _keep_on_device(self, positions: np.ndarray, *, moved: bool, ordered) -> None:
        if self._compute is None:
            self.device = None
            return
        if positions.dtype == np.float16:  # a float16 recording: widened on the device
            current = widened_on_device(self._compute, positions)
        else:
            current = self._compute.upload(np.ascontiguousarray(positions, dtype=np.float32))
        previous = self.device.current if moved and self.device is not None else current
        self.device = _device_particles(self._compute, current, previous, (), ordered)

    def _show_on_device(self, frame: Frame, population: np.ndarray) -> bool:
        snapshot = frame.snapshot
        count = snapshot.device.shape[0]
        if not self._buffers or count != self.count or \
                self.position_format != _POSITION_FORMATS[np.dtype(np.float32)]:
            self._allocate(count, np.dtype(np.float32))
        if not self._views:
            try:
                self._views = [gl_buffer_view(snapshot, buffer.glo, buffer.size)
                               for buffer in self._buffers]
            except InteropUnavailableError as error:
                self._release_views()
                self.interop_unavailable = str(error)
                return False
        self._show_population(population, count)
        interval = None if self._time is None else frame.time - self._time
        moving = interval is not None and interval > 0
        before = self.device
        last = before.snapshots[0] if moving and before and before.snapshots else snapshot
        if moving:
            self.parity = 1 - self.parity
            # the previous buffer already holds the last frame unless its copy was skipped too
            self._unfilled = {self.parity: (frame.sequence, snapshot),
                              1 - self.parity: (self._sequence, last)}
            self.interval = interval
        else:
            self._unfilled = {index: (frame.sequence, snapshot) for index in (0, 1)}
            self._sample = None
            self.interval = 0.0
        self.device = _device_particles(
            snapshot.context, snapshot.device, last.device,
            (snapshot, last) if last is not snapshot else (snapshot,),
            locality_order(frame, snapshot.context))
        self.host = None
        self._host_current = None
        # The speed scale comes from the frame's sample (downloaded beside the step; the
        # whole frame never goes to the host here) once it has arrived, else the last stays.
        sample = snapshot.sample()
        if sample is not None:
            if moving and self._sample is not None:
                self.speed_scale = self._speed_scale(sample, frame.time)
            self._sample, self._sample_time = sample, frame.time
        self._time = frame.time
        self._sequence = frame.sequence
        self.upload_path = INTEROP
        return True

    def _show_population(self, population: np.ndarray, count: int) -> None:
        if len(population) != count:
            # a source switching runs may pair a new label array with a last old frame: draw
            # that one frame in the first population's colour rather than fail
            population = np.zeros(count, np.uint8)
        if population is not self._population_source:
            if self._population_labels is None or not np.array_equal(self._population_labels,
                                                                     population):
                self._population_labels = np.array(population, copy=True)
                self.population_buffer.write(np.asarray(population, dtype=np.float32))
                self.population_version += 1
            self._population_source = population

    def _release_views(self) -> None:
        self._unfilled = {}
        views, self._views = self._views, []
        for view in views:
            view.release()

    def set_masses(self, masses) -> None:
        """Masses for the density pass (None: equal masses, the total 1)."""
        if masses is None:
            masses = np.full(max(self.count, 1), 1.0 / max(self.count, 1), np.float32)
        self.mass_buffer = self._extra("mass", masses)

    def set_supports(self, supports) -> None:
        """Each particle's kernel support for adaptive density smoothing."""
        self.support_buffer = self._extra("support", supports)

    def set_values(self, values) -> None:
        """A per-particle quantity for the density pass to colour by."""
        self.value_buffer = self._extra("value", values)

    def extra(self, name: str):
        """The host array last given for ``name`` ("mass", "value" or "support") while the
        buffers kept their layout, or None (what the compute density splat uploads)."""
        source, version, buffer = self._extras.get(name, (None, None, None))
        return source if buffer is not None and version == self.layout_version else None

    def _extra(self, name: str, array):
        """A float32 buffer of ``array`` (one value a particle), re-uploaded only when the array
        or the buffers' layout changed."""
        source, version, buffer = self._extras.get(name, (None, None, None))
        if source is array and version == self.layout_version and buffer is not None:
            return buffer
        data = np.ascontiguousarray(array, dtype=np.float32).reshape(-1)
        if len(data) != max(self.count, 1) and self.count:
            raise InvalidInputError(f"{len(data)} {name}s for {self.count} particles")
        if buffer is not None:
            buffer.release()
        buffer = self.ctx.buffer(data.tobytes())
        self._extras[name] = (array, self.layout_version, buffer)
        return buffer

    def _allocate(self, count: int, dtype: np.dtype) -> None:
        self._release_views()  # CUDA lets go of a buffer before GL deletes it
        for buffer in (*self._buffers, self.population_buffer):
            if buffer is not None:
                buffer.release()
        size = max(count, 1) * 3 * dtype.itemsize
        self.position_format = _POSITION_FORMATS[dtype]
        self._buffers = [self.ctx.buffer(reserve=size), self.ctx.buffer(reserve=size)]
        self.population_buffer = self.ctx.buffer(reserve=max(count, 1) * 4)
        self._unfilled, self._holds = {}, [None, None]
        self._population_labels = None
        self._population_source = None
        self._host_current = self._sample = None
        self.device = None
        self.host = None
        self._time = None
        self.count = count
        self.layout_version += 1

    def _speed_scale(self, sample: np.ndarray, time: float) -> float:
        """The speed colour map's scale from this frame's sample and the last one's. Speeds are
        shown relative to the median speed: robust to a few escapers."""
        interval = time - self._sample_time
        step = sample.astype(np.float32) - self._sample  # float16 would overflow
        speeds = np.linalg.norm(step, axis=1) / interval
        reference = float(np.median(speeds))
        return 1.0 / (interval * reference) if reference > 0 else 0.0

    def release(self) -> None:
        self._release_views()
        for buffer in (*self._buffers, self.population_buffer,
                       *(extra[2] for extra in self._extras.values())):
            if buffer is not None:
                buffer.release()
        self._buffers, self.population_buffer, self.count = [], None, 0
        self.device = None
        self.host = None
        self._extras = {}
        self.mass_buffer = self.value_buffer = self.support_buffer = None


def locality_order(frame: Frame, context):
    """The snapshot of ``frame``'s locality order (``Snapshot.locality_order``) where its device
    copy lives on ``context`` (the splat reads it there) and orders the frame's particles; else
    None."""
    snapshot = frame.snapshot
    ordered = None if snapshot is None else snapshot.locality_order
    if ordered is None or context is None or ordered.context is not context or \
            ordered.device is None or ordered.device.shape != (frame.count,):
        return None
    return ordered


def _device_particles(context, current, previous, snapshots: tuple, ordered) -> DeviceParticles:
    """:class:`DeviceParticles` with the frame's locality order where it has one (``ordered``,
    from :func:`locality_order`: its snapshot is kept with the others)."""
    if ordered is None:
        return DeviceParticles(context, current, previous, snapshots)
    return DeviceParticles(context, current, previous, snapshots + (ordered,), ordered.device)
