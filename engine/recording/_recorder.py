"""Recorder: what a caller records a run through (its arguments checked, frames copied and
queued), in front of a writer thread (``_writer``) that puts them into the file's HDF5 layout
(``_layout``, which also says how the file survives a crash or a power loss).

Frames are committed, and so visible to readers and kept by a crash, every ``flush_seconds``;
keyframes (the whole state in the run's precision, for exact restarts) the same way, in their
own datasets.
"""

from __future__ import annotations

import atexit
import math
import operator
import queue
import time as _time
import warnings

import numpy as np

from .. import frame_encoding as encodings
from ..compute import Snapshot
from ..contracts import SteppedSimulation
from ..errors import InvalidInputError, RecordingError
from . import _format as fmt
from ._hdf5 import H5_ERRORS, error_text
from ._layout import ChangedUnderUs, DiskFull, RecordingLayout
from ._writer import QueuedFrame, RecordingWriter
from ._writer_lock import claim, in_use_error

_MAX_FLUSH_SECONDS = 3600.0


class Recorder:
    """Record frames of one run into an HDF5 file.

    Parameters
    ----------
    path
        File to create. An existing file is an error unless ``overwrite``.
    masses
        ``(n,)`` particle masses; fixes the particle count of every frame.
    population, population_names
        ``(n,)`` uint8 labels and their names (default: every particle in population ``"all"``).
    attributes
        Run description stored as file attributes (scenario, solver, solver_params, dt,
        softening, G, units, ...): strings, numbers, bools, or dicts (stored as JSON text).
    dtype
        ``"float32"``, ``"float16"`` or ``"fixed16"`` for positions (float32 or float16 for
        velocities). float16 halves the file and keeps about 3 significant digits (relative
        spacing 2**-10; largest value 65504, and a frame with a coordinate beyond it is
        refused, never stored as inf); fixed16 also takes 6 bytes a body, as 16-bit
        integers on each frame's bounding box (an absolute error of about extent / 131070 per
        axis, the same everywhere in the box: ``frame_encoding``).
    compression
        None or ``"none"`` (default), ``"blosc2"``, ``"blosc2-bitshuffle"`` (lossless) or
        ``"zfp=ACCURACY"`` (float32 only, lossy within ACCURACY): frames compressed through
        hdf5plugin on the writer thread (see ``_format.COMPRESSIONS``).
    velocities
        Also store velocities; ``append`` then requires them.
    keyframe_dtype
        The run's precision (float32 or float64) for keyframes, the full states
        ``append_keyframe`` stores for exact restarts; None (default): no keyframes.
    keyframe_every
        ``append_simulation`` also stores a keyframe every this many frames, from the first
        (None, the default: as many as make keyframes a tenth of the frames' bytes,
        ``default_keyframe_every``; 0: only those asked for with ``append_keyframe``).
        A simulation whose state lives on a device hands over frames and keyframes already
        narrowed there and downloading asynchronously (``Simulation.stage_frame``): the
        caller's thread never waits for them, the writer thread does.
    fsync_every
        Commit and ``fsync`` the file after every this many frames (default 0: never, the
        operating system writes back when it chooses). Without it a killed process loses
        nothing the last commit made, but a power loss can lose what the OS had not written.
    flush_seconds
        Longest time (seconds, default 2, at most 3600) a frame waits before it is committed to
        disk. A process killed at any moment keeps every frame appended more than this long
        before (plus the time to write whatever was queued ahead of it).
    queue_bytes
        Memory the queue of frames waiting for the disk may hold (default 256 MiB, at least two
        frames). When full, ``append`` blocks until the writer catches up, and counts it in
        ``queue_waits`` and ``queue_wait_seconds`` (:meth:`stats`): no frame is ever dropped.
    overwrite
        Replace ``path`` if it exists (default False). A file another Recorder is writing is
        never replaced.
    order
        ``"natural"`` (default): particles stored in the run's order. ``"priority"``: every
        per-particle array stored through one fixed random permutation (written once in the
        file), so the first K particles of any frame are a fair sample of all of them
        (``RecordingFile.read(index, count=K)``, ``Player(max_particles=K)``; ADR 0280). Arrays
        are handed over in the run's order either way; the writer thread gathers them.

    Raises
    ------
    Bad arguments raise :class:`InvalidInputError`. A path that cannot be recorded to (its
    folder cannot be made, it exists, another Recorder holds it, the disk is full) raises
    :class:`RecordingError` here, and nothing is left behind. When writing fails later (the disk
    fills up, the device fails) the writer stops: the file keeps every frame committed before,
    and the next ``append`` or ``close`` raises :class:`RecordingError` saying what happened.
    No call blocks on a writer that has stopped.
    """

    def __init__(self, path, *, masses, population=None, population_names=("all",),
                 attributes: dict | None = None, dtype="float32", compression=None,
                 velocities: bool = False,
                 keyframe_dtype=None, keyframe_every: int | None = None,
                 fsync_every: int = 0, flush_seconds: float = 2.0,
                 queue_bytes: int = 256 << 20, overwrite: bool = False,
                 order: str = fmt.NATURAL):
        if order not in fmt.ORDERS:
            raise InvalidInputError(f"order must be one of {fmt.ORDERS}, got {order!r}")
        self.order = order
        self.encoding = encodings.named(dtype)
        self.dtype = encodings.STORED_DTYPES[self.encoding]
        self.compression = compression or "none"
        compression_filter = fmt.compression_filter(compression, self.encoding)
        if velocities and self.encoding == encodings.FIXED16:
            raise InvalidInputError("fixed16 stores positions only: record velocities as "
                                    "float16 or float32")
        self.keyframe_dtype = None if keyframe_dtype is None else fmt.keyframe_dtype(keyframe_dtype)
        if keyframe_every is None:
            keyframe_every = 0 if self.keyframe_dtype is None else fmt.default_keyframe_every(
                self.encoding, velocities, self.keyframe_dtype)
        self.keyframe_every = _checked_count(keyframe_every, "keyframe_every")
        self.fsync_every = _checked_count(fsync_every, "fsync_every")
        masses = np.asarray(masses)
        if masses.ndim != 1 or masses.shape[0] == 0:
            raise InvalidInputError(f"masses must have shape (n,) with n > 0, got {masses.shape}")
        self.n = int(masses.shape[0])
        fmt.check_particle_count(self.n)
        population, names = _checked_population(population, population_names, self.n)
        self.flush_seconds = _checked_flush_seconds(flush_seconds)
        self.records_velocities = bool(velocities)
        encoded_attributes = fmt.encode_attributes(dict(attributes or {}))

        self._closed = False
        self._last_step: int | None = None
        self._last_time = -np.inf
        self.frames_appended = 0
        self.queue_waits = 0          # appends that found the queue full and waited
        self.queue_wait_seconds = 0.0
        self.device_frames = 0        # frames handed over narrowed on a device
        self.keyframes_appended = 0
        self._last_keyframe_step: int | None = None
        self._last_keyframe_time = -np.inf

        lock = claim(path, overwrite=overwrite)
        self.path = lock.path
        try:
            self._layout = RecordingLayout(
                lock, n=self.n, encoding=self.encoding, compression=self.compression,
                filter=compression_filter, velocities=self.records_velocities,
                keyframe_dtype=self.keyframe_dtype, masses=masses, population=population,
                names=names, attributes=encoded_attributes, order=order)
        except BaseException as error:
            lock.release(remove=True)
            if isinstance(error, DiskFull):
                raise RecordingError(str(error)) from None
            if isinstance(error, BlockingIOError):
                raise in_use_error(self.path) from error
            if isinstance(error, H5_ERRORS):
                raise RecordingError(f"cannot create the recording {self.path}: "
                                     f"{error_text(error)}") from error
            raise
        self.frame_bytes = self._layout.frame_bytes
        # append() copies each frame in the recording's encoding: for float16 the native
        # narrowing (F16C where present, without the GIL) is that copy; a device frame arrives
        # narrowed already (Simulation.stage_frame).
        self.queue_capacity = max(2, int(queue_bytes) // self._layout.stored_frame_bytes)
        self._writer = RecordingWriter(self._layout, capacity=self.queue_capacity,
                                       flush_seconds=self.flush_seconds,
                                       fsync_every=self.fsync_every)
        atexit.register(self._close_at_exit)

    @property
    def frames_committed(self) -> int:
        """Frames a reader (or a crash) would find in the file now."""
        return self._writer.frames_committed

    @property
    def keyframes_committed(self) -> int:
        return self._writer.keyframes_committed

    @classmethod
    def for_simulation(cls, path, simulation, *, scenario: str, source: dict | None = None,
                       **options) -> Recorder:
        """A recorder for ``simulation`` (a :class:`~orrery.engine.Simulation`): its masses,
        populations and run settings (:func:`run_attributes`; ``source`` adds where the
        particles came from, e.g. a snapshot's file and unit conversion); ``options`` as for the
        constructor (dtype, velocities, flush_seconds, ...). Initial positions that ``dtype``
        cannot represent (beyond float16's 65,504, say) raise :class:`InvalidInputError` before
        the file is created."""
        particles = simulation.particles
        encoding = encodings.named(options.get("dtype", "float32"))
        if encoding != encodings.FLOAT32:  # refused now, before the file exists
            try:
                encodings.encode_on_host(particles.pos, encoding)
            except InvalidInputError as error:
                raise InvalidInputError(f"cannot record {path} as {encoding}: {error}") from None
        attributes = {**run_attributes(simulation, scenario=scenario), **(source or {})}
        simulation.prepare_frames()  # a device's frame kernels, built before the run is timed
        options.setdefault("keyframe_dtype", particles.pos.dtype)  # the run's own precision
        return cls(path, masses=particles.mass, population=particles.population,
                   population_names=particles.population_names, attributes=attributes, **options)

    # -- the caller's side ---------------------------------------------------------------------

    def append(self, positions, time: float, step: int, velocities=None) -> None:
        """Queue one frame; blocks while the queue is full. The arrays are copied before this
        returns, so the caller may reuse them at once. ``positions`` may also be a device
        frame: a :class:`~orrery.engine.compute.Snapshot` of the staged frame in this
        recording's encoding (``Simulation.stage_frame``), held until written."""
        self._raise_if_failed()
        if self._closed:
            raise RecordingError(f"{self.path}: the recorder is closed")
        staged = isinstance(positions, Snapshot)
        if staged and velocities is not None:
            raise InvalidInputError("a device frame carries positions only")
        positions = positions if staged else self._frame_array(positions, "positions")
        if self.records_velocities:
            if velocities is None:
                raise InvalidInputError("this recording stores velocities: pass velocities=")
            velocities = self._frame_array(velocities, "velocities")
        elif velocities is not None:
            raise InvalidInputError("this recording was created without velocities=True")
        step, time = _checked_step(step), float(time)
        if self.frames_appended >= fmt.MAX_FRAMES:
            raise InvalidInputError(f"a recording holds at most {fmt.MAX_FRAMES} frames")
        fmt.check_frame(self.frames_appended, step, time,
                        None if self._last_step is None else (self._last_step, self._last_time))
        self._put(QueuedFrame(False, positions, velocities, time, step))
        self._last_step, self._last_time = step, time
        self.frames_appended += 1
        self.device_frames += staged and positions.kernel_events is not None  # by a device

    def append_keyframe(self, positions, velocities, time: float, step: int) -> None:
        """Queue one keyframe: the whole state (arrays in the run's precision, stored exactly)
        at ``step``; keyframes come in increasing step order, like frames."""
        self._raise_if_failed()
        if self._closed:
            raise RecordingError(f"{self.path}: the recorder is closed")
        if self.keyframe_dtype is None:
            raise InvalidInputError("this recording was created without keyframe_dtype=")
        staged = [isinstance(array, Snapshot) for array in (positions, velocities)]
        state = [array if is_staged else np.asarray(array)
                 for array, is_staged in zip((positions, velocities), staged)]
        for what, array, is_staged in zip(("positions", "velocities"), state, staged):
            if is_staged:
                continue  # checked by the writer, when its copy has arrived
            if array.shape != (self.n, 3):
                raise InvalidInputError(f"keyframe {what} must have shape ({self.n}, 3), got "
                                        f"{array.shape}")
            if array.dtype != self.keyframe_dtype:  # a keyframe is exact or it is useless
                raise InvalidInputError(f"keyframe {what} are {array.dtype}, the recording "
                                        f"keeps {self.keyframe_dtype} states")
        step, time = _checked_step(step), float(time)
        if self.keyframes_appended >= fmt.MAX_FRAMES:
            raise InvalidInputError(f"a recording holds at most {fmt.MAX_FRAMES} keyframes")
        fmt.check_frame(self.keyframes_appended, step, time,
                        None if self._last_keyframe_step is None
                        else (self._last_keyframe_step, self._last_keyframe_time))
        self._put(QueuedFrame(True, *(array if is_staged else np.array(array, order="C", copy=True)
                                      for array, is_staged in zip(state, staged)), time, step))
        self._last_keyframe_step, self._last_keyframe_time = step, time
        self.keyframes_appended += 1

    def keyframe_due(self) -> bool:
        """Whether the next ``append_simulation`` also stores a keyframe."""
        return keyframe_due(self.frames_appended, self.keyframe_every) \
            and self.keyframe_dtype is not None

    def append_simulation(self, simulation: SteppedSimulation) -> None:
        """Append ``simulation``'s current state (positions, velocities if recorded, time, step)
        as a frame, and as a keyframe when one is due (:meth:`keyframe_due`). A simulation that
        stages frames on its device (``stage_frame``, ``stage_state``) hands them over without
        waiting for them.

        The state is read in one order whatever happens after: the keyframe's state, then the
        frame (a distributed run's reads are collectives its other ranks make in that order,
        ``app/cli/_record_args.py``)."""
        keyframe = self.keyframe_due()
        time, step = simulation.time, simulation.steps
        if self.records_velocities:
            particles = simulation.particles
            self.append(particles.pos, time, step, velocities=particles.vel)
            if keyframe:
                self.append_keyframe(particles.pos, particles.vel, time, step)
            return
        state = simulation.stage_state() if keyframe else None
        self.append(simulation.stage_frame(self.encoding), time, step)
        if state is not None:
            self.append_keyframe(*state, time, step)

    def append_last_keyframe(self, simulation: SteppedSimulation) -> None:
        """Store ``simulation``'s state as a keyframe unless the last one is of this step (call
        it when the run ends, so the recording can be continued from its last state)."""
        if self.keyframe_dtype is not None and self._last_keyframe_step != simulation.steps:
            self.append_keyframe(*simulation.stage_state(), simulation.time, simulation.steps)

    def stats(self) -> dict:
        """What the recording did so far: frames appended and committed, how many came narrowed
        from a device, and how often (and how long) an append waited for the disk."""
        return {"frames_appended": self.frames_appended, "frames_committed": self.frames_committed,
                "keyframes_appended": self.keyframes_appended, "device_frames": self.device_frames,
                "queue_capacity": self.queue_capacity, "queue_waits": self.queue_waits,
                "queue_wait_seconds": self.queue_wait_seconds,
                **{f"writer_{stage}_seconds": seconds
                   for stage, seconds in self._writer.seconds.items()}}

    def _frame_array(self, array, what: str) -> np.ndarray:
        array = np.asarray(array)
        if array.shape != (self.n, 3):
            raise InvalidInputError(f"{what} must have shape ({self.n}, 3), got {array.shape}")
        if what == "positions":
            encoding = self.encoding
        else:  # velocities: float32 or float16 (fixed16 recordings refuse them)
            encoding = encodings.FLOAT32 if self.dtype.itemsize == 4 else encodings.FLOAT16
        try:
            return encodings.encode_on_host(array, encoding, what=what)
        except InvalidInputError as error:
            raise InvalidInputError(f"frame {self.frames_appended} of {self.path} refused: "
                                    f"{error}") from None

    def _put(self, item: QueuedFrame) -> None:
        try:
            self._writer.queue.put_nowait(item)
            return
        except queue.Full:
            pass
        # The disk is behind: wait (counted), in slices so a writer that failed while we waited
        # is noticed instead of hanging.
        start = _time.perf_counter()
        try:
            while True:
                try:
                    self._writer.queue.put(item, timeout=0.25)
                    return
                except queue.Full:
                    self._raise_if_failed()
        finally:
            self.queue_waits += 1
            self.queue_wait_seconds += _time.perf_counter() - start

    def close(self) -> None:
        """Commit every queued frame, stop the writer thread and close the file (idempotent).
        Raises :class:`RecordingError` if the writer failed."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self._close_at_exit)
        self._writer.finish()
        self._raise_if_failed()

    def _close_at_exit(self) -> None:
        """A recorder left open commits its frames when the interpreter exits; a failure is
        warned about, since nobody is left to catch it."""
        try:
            self.close()
        except RecordingError as error:
            warnings.warn(str(error), RuntimeWarning, stacklevel=1)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _raise_if_failed(self) -> None:
        error = self._writer.error
        if error is None:
            return
        if isinstance(error, ChangedUnderUs):
            raise RecordingError(str(error)) from None
        if isinstance(error, (DiskFull, InvalidInputError)):
            raise RecordingError(f"{error}; the recording stopped and {self._what_is_kept()}") \
                from None
        raise RecordingError(f"writing {self.path} failed: {error_text(error)}; "
                             f"{self._what_is_kept()}") from error

    def _what_is_kept(self) -> str:
        if self._writer.file_removed:
            return f"no frame had been committed, so {self.path} was removed"
        return f"{self.path} keeps the {self.frames_committed} frame(s) committed before"


def keyframe_due(frame_index: int, keyframe_every: int) -> bool:
    """Whether frame ``frame_index`` (0-based) of a run recording a keyframe every
    ``keyframe_every`` frames (0: never on its own) comes with a keyframe."""
    return keyframe_every > 0 and frame_index % keyframe_every == 0


def _checked_count(value, what: str) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise InvalidInputError(f"{what} must be an integer, got {value!r}") from None
    if value < 0:
        raise InvalidInputError(f"{what} must be 0 or more, got {value}")
    return value


def _checked_step(step) -> int:
    try:
        return operator.index(step)
    except TypeError:
        raise InvalidInputError(f"step must be an integer, got {step!r}") from None


def _checked_flush_seconds(seconds) -> float:
    seconds = float(seconds)
    if not (0 < seconds <= _MAX_FLUSH_SECONDS and math.isfinite(seconds)):
        raise InvalidInputError(f"flush_seconds must be more than 0 and at most "
                                f"{_MAX_FLUSH_SECONDS:g} seconds, got {seconds!r}")
    return seconds


def _checked_population(population, names, n):
    names = fmt.check_population_names(names)
    if population is None:
        population = np.zeros(n, dtype=np.uint8)
    population = np.asarray(population)
    if population.shape != (n,):
        raise InvalidInputError(f"population must have shape ({n},), got {population.shape}")
    if population.size and population.dtype.kind not in "iub":
        raise InvalidInputError(f"population labels must be integers, got {population.dtype}")
    fmt.check_population(population, len(names))
    return population.astype(np.uint8), names


def run_attributes(simulation: SteppedSimulation, *, scenario: str) -> dict:
    """The attributes that describe ``simulation``'s run: the scenario, the model and the
    model's own (``run_attributes()``: a gravity run's solver, a flock's rules)."""
    return {"scenario": scenario, fmt.MODEL: simulation.model, **simulation.run_attributes()}
