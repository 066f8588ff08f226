"""Recorder: writes frames to a recording file on its own thread behind a bounded queue.

Crash safety: the file is written in HDF5's single-writer/multiple-reader (SWMR) mode, which
orders HDF5's own metadata writes so the file on disk is consistent at every moment. On top of
that a frame is *committed* only when its ``time`` and ``step`` entries exist: the writer appends
positions (and velocities) as frames arrive, and every ``flush_seconds`` it flushes them, then
extends ``time`` and ``step`` and flushes again. A process killed at any instant therefore leaves a
file holding every frame committed by the last flush, each one complete, and possibly some
uncommitted positions after them that readers ignore.

Keyframes (the whole state in the run's precision, for exact restarts) are written and
committed the same way, in their own datasets. Durability against power loss, beyond what the
operating system's cache keeps after the process dies, comes from ``fsync_every``. Every
``WRITEBACK_BYTES`` of frames the writer asks the OS to start writing them to the disk
(``_writeback``, ADR 0163), so the disk works beside the run instead of all at once when it ends.
"""

from __future__ import annotations

import atexit
import datetime
import math
import operator
import os
import queue
import threading
import time as _time
import warnings

import h5py
import numpy as np

from .. import frame_encoding as encodings
from ..compute import Snapshot
from ..contracts import SteppedSimulation
from ..errors import InvalidInputError, RecordingError
from . import _format as fmt
from ._hdf5 import H5_ERRORS, error_text
from ._writeback import start_writeback
from ._writer_lock import claim, in_use_error

_STOP = object()

# Space the file system must keep free beyond the frames not yet flushed: HDF5's metadata and
# the first chunks of time and step at a commit. Below it the writer commits what it holds and
# stops, before HDF5 ever meets a full disk.
_METADATA_RESERVE_BYTES = 256 << 10
_MAX_FLUSH_SECONDS = 3600.0
# Frame bytes written between two requests to the OS to start writing them back (_writeback):
# a few frames of a million particles, so the disk always has work and the page cache never
# holds more than the disk is behind by.
WRITEBACK_BYTES = 32 << 20


class _DiskFull(Exception):
    """Raised by the writer thread before a write the file system has no room for."""


class _ChangedUnderUs(Exception):
    """Raised by the writer thread when another program changed the file (ADR 0200)."""


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
                 queue_bytes: int = 256 << 20, overwrite: bool = False):
        self.encoding = encodings.named(dtype)
        self.dtype = encodings.STORED_DTYPES[self.encoding]
        self.compression = compression or "none"
        self._filter = fmt.compression_filter(compression, self.encoding)
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

        self.frame_bytes = self.n * 3 * self.dtype.itemsize
        self._frames_per_chunk = fmt.frames_per_chunk(self.frame_bytes)
        datasets = 2 if velocities else 1
        self._stored_frame_bytes = self.frame_bytes * datasets
        # HDF5 writes whole chunks: the one being filled may take a chunk's worth of space.
        self._reserve_bytes = (_METADATA_RESERVE_BYTES
                               + datasets * self._frames_per_chunk * self.frame_bytes)
        # append() copies each frame in the recording's encoding: for float16 the native
        # narrowing (F16C where present, without the GIL) is that copy; a device frame arrives
        # narrowed already (Simulation.stage_frame).
        self.queue_capacity = max(2, int(queue_bytes) // self._stored_frame_bytes)
        self._queue: queue.Queue = queue.Queue(maxsize=self.queue_capacity)
        self._error: BaseException | None = None
        self._closed = False
        self._last_step: int | None = None
        self._last_time = -np.inf
        self.frames_appended = 0
        self.frames_committed = 0
        self.queue_waits = 0          # appends that found the queue full and waited
        self.queue_wait_seconds = 0.0
        self.device_frames = 0        # frames handed over narrowed on a device
        # Where the writer thread's time goes (seconds): waiting for device copies to arrive,
        # writing frames into the file, committing; and the device time of the kernels that
        # narrowed the frames (their events, read once the copy has arrived).
        self._writer_seconds = {"wait_for_copies": 0.0, "write": 0.0, "commit": 0.0,
                                "device_narrowing": 0.0}
        self.keyframes_appended = 0
        self.keyframes_committed = 0
        self._last_keyframe_step: int | None = None
        self._last_keyframe_time = -np.inf
        self._uncommitted = 0  # written by the writer thread, not yet committed
        self._uncommitted_keyframes = 0
        self._frames_since_fsync = 0
        self._unflushed_bytes = 0  # frame bytes HDF5 may still hold in memory
        self._bytes_since_writeback = 0  # frame bytes written since write-back last started
        self._file_removed = False

        self._lock = claim(path, overwrite=overwrite)
        self.path = self._lock.path
        try:
            self._require_space(self._reserve_bytes, "start a recording")
            self._file = self._create(masses, population, names, encoded_attributes)
            self._lock.keep_other_writers_out()
            self._fingerprint = self._lock.fingerprint()
        except BaseException as error:
            self._lock.release(remove=True)
            if isinstance(error, _DiskFull):
                raise RecordingError(str(error)) from None
            if isinstance(error, BlockingIOError):
                raise in_use_error(self.path) from error
            if isinstance(error, H5_ERRORS):
                raise RecordingError(f"cannot create the recording {self.path}: "
                                     f"{error_text(error)}") from error
            raise
        self._thread = threading.Thread(target=self._write_loop, name="orrery-recorder",
                                        daemon=True)
        self._thread.start()
        atexit.register(self._close_at_exit)

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

    # -- file layout ---------------------------------------------------------------------------

    def _create(self, masses, population, names, attributes) -> h5py.File:
        fpc = self._frames_per_chunk
        chunk_bytes = fpc * self.frame_bytes
        # v110 is the oldest format SWMR needs and what HDF5 1.10+ (h5py >= 2.7) can read.
        file = h5py.File(self.path, "w", libver=("v110", "v110"),
                         rdcc_nbytes=max(4 << 20, 2 * chunk_bytes))
        # Held until the file is flushed: closing a dataset writes it, and a write failing
        # there is only printed by h5py (then crashes the process), not raised.
        made = {}
        try:
            from ... import __version__
            file.attrs.update({"format": fmt.FORMAT_NAME, "format_version": fmt.FORMAT_VERSION,
                               fmt.POSITION_ENCODING: self.encoding,
                               fmt.COMPRESSION: self.compression,
                               "orrery_version": __version__,
                               "created_utc": datetime.datetime.now(datetime.timezone.utc)
                               .isoformat(timespec="seconds")})
            file.attrs.update(attributes)
            frames = dict(shape=(0, self.n, 3), maxshape=(None, self.n, 3), chunks=(fpc, self.n, 3),
                          dtype=self.dtype, **self._filter)
            made[fmt.POSITIONS] = file.create_dataset(fmt.POSITIONS, **frames)
            if self.encoding == encodings.FIXED16:
                made[fmt.POSITION_BOX] = file.create_dataset(
                    fmt.POSITION_BOX, shape=(0, 3, 3), maxshape=(None, 3, 3), chunks=(1024, 3, 3),
                    dtype="<f4")
            if self.records_velocities:
                made[fmt.VELOCITIES] = file.create_dataset(fmt.VELOCITIES, **frames)
            series = [(fmt.TIME, fmt.STEP)]
            if self.keyframe_dtype is not None:  # one state per chunk: read one at a time
                state = dict(shape=(0, self.n, 3), maxshape=(None, self.n, 3),
                             chunks=(1, self.n, 3), dtype=self.keyframe_dtype)
                made[fmt.KEYFRAME_POSITIONS] = file.create_dataset(fmt.KEYFRAME_POSITIONS, **state)
                made[fmt.KEYFRAME_VELOCITIES] = file.create_dataset(fmt.KEYFRAME_VELOCITIES,
                                                                    **state)
                series.append((fmt.KEYFRAME_TIME, fmt.KEYFRAME_STEP))
            for time_name, step_name in series:
                made[time_name] = file.create_dataset(time_name, shape=(0,), maxshape=(None,),
                                                      chunks=(4096,), dtype="<f8",
                                                      fillvalue=np.nan)
                made[step_name] = file.create_dataset(step_name, shape=(0,), maxshape=(None,),
                                                      chunks=(4096,), dtype="<i8",
                                                      fillvalue=fmt.STEP_FILL)
            made[fmt.MASSES] = file.create_dataset(fmt.MASSES,
                                                   data=np.asarray(masses, dtype="<f8"))
            made[fmt.POPULATION] = file.create_dataset(fmt.POPULATION, data=population)
            made[fmt.POPULATION_NAMES] = file.create_dataset(
                fmt.POPULATION_NAMES, data=list(names), dtype=h5py.string_dtype("utf-8"))
            file.flush()
            file.swmr_mode = True  # from here on no new objects or attributes can be added
        except BaseException:
            _abandon(file, made)
            raise
        self._datasets = {name: made[name] for name in (fmt.POSITIONS, fmt.POSITION_BOX,
                                                        fmt.VELOCITIES, fmt.TIME, fmt.STEP,
                                                        *fmt.KEYFRAME_DATASETS)
                          if name in made}
        return file

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
        self._put((False, positions, velocities, time, step))
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
        self._put((True, *(array if is_staged else np.array(array, order="C", copy=True)
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
                   for stage, seconds in self._writer_seconds.items()}}

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

    def _put(self, item) -> None:
        try:
            self._queue.put_nowait(item)
            return
        except queue.Full:
            pass
        # The disk is behind: wait (counted), in slices so a writer that failed while we waited
        # is noticed instead of hanging.
        start = _time.perf_counter()
        try:
            while True:
                try:
                    self._queue.put(item, timeout=0.25)
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
        while self._thread.is_alive():  # a writer that stopped takes nothing more
            try:
                self._queue.put(_STOP, timeout=0.1)
                break
            except queue.Full:
                continue
        self._thread.join()
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
        error = self._error
        if error is None:
            return
        if isinstance(error, _ChangedUnderUs):
            raise RecordingError(str(error)) from None
        if isinstance(error, (_DiskFull, InvalidInputError)):
            raise RecordingError(f"{error}; the recording stopped and {self._what_is_kept()}") \
                from None
        raise RecordingError(f"writing {self.path} failed: {error_text(error)}; "
                             f"{self._what_is_kept()}") from error

    def _what_is_kept(self) -> str:
        if self._file_removed:
            return f"no frame had been committed, so {self.path} was removed"
        return f"{self.path} keeps the {self.frames_committed} frame(s) committed before"

    # -- the writer thread ---------------------------------------------------------------------

    def _write_loop(self) -> None:
        pending: list[tuple[bool, float, int]] = []
        deadline = None
        error: BaseException | None = None
        intact = True  # False once HDF5 failed a write: the file must not be touched again
        try:
            while True:
                timeout = None if deadline is None else max(0.0, deadline - _time.monotonic())
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    item = None
                if item is _STOP:
                    self._commit(pending)
                    if self.fsync_every:
                        self._fsync()
                    break
                if item is not None:
                    size = _item_bytes(item, self)
                    needed = size + self._reserve_bytes
                    if self._lock.free_bytes() < self._unflushed_bytes + needed:
                        # Short of room: commit early, so what HDF5 holds takes its place on
                        # disk, then look again.
                        self._commit(pending)
                        pending, deadline = [], None
                        self._require_space(needed, "write another frame")
                    started = _time.perf_counter()
                    self._write_frame(item)
                    self._writer_seconds["write"] += _time.perf_counter() - started
                    pending.append((item[0], item[3], item[4]))
                    if deadline is None:
                        deadline = _time.monotonic() + self.flush_seconds
                    if not item[0]:
                        self._frames_since_fsync += 1
                    self._bytes_since_writeback += size
                    if self._bytes_since_writeback >= WRITEBACK_BYTES:
                        self._start_writeback()
                if self.fsync_every and self._frames_since_fsync >= self.fsync_every:
                    self._commit(pending)
                    self._fsync()
                    pending, deadline = [], None
                if deadline is not None and _time.monotonic() >= deadline:
                    self._commit(pending)
                    pending, deadline = [], None
        except (_DiskFull, InvalidInputError) as stop:
            # nothing failed yet (no room, or a frame refused before it was written): keep what
            # was written, then stop
            error = stop
            try:
                self._commit(pending)
            except BaseException as failure:
                error, intact = failure, False
        except BaseException as failure:
            error, intact = failure, False
        finally:
            error = self._close_file(intact, error)
            self._discard_queue()
            self._error = error  # last: append/close report it with the file's final state

    def _write_frame(self, item) -> None:
        keyframe, positions, velocities, _, _ = item
        if keyframe:
            index = self.keyframes_committed + self._uncommitted_keyframes
            names, dtype = (fmt.KEYFRAME_POSITIONS, fmt.KEYFRAME_VELOCITIES), self.keyframe_dtype
            positions, velocities = (self._arrived(array, dtype, "keyframe")
                                     for array in (positions, velocities))
        else:
            index = self.frames_committed + self._uncommitted
            names, dtype = (fmt.POSITIONS, fmt.VELOCITIES), self.dtype
            positions, box = encodings.split_staged(
                self.encoding, self._arrived(positions, self.dtype, "frame"), self.n)
            # A device narrowed this frame without looking at it: refused here, before any of
            # it is written, the recording stops with every frame before it.
            try:
                encodings.check_narrowed(self.encoding, positions, box)
            except InvalidInputError as error:
                raise InvalidInputError(f"frame {index} of {self.path} refused: {error}") \
                    from None
            if box is not None:
                boxes = self._datasets[fmt.POSITION_BOX]
                boxes.resize(index + 1, axis=0)
                boxes[index] = box
        for name, data in zip(names, (positions, velocities)):
            if data is None:
                continue
            dataset = self._datasets[name]
            dataset.resize(index + 1, axis=0)
            if not keyframe and self._frames_per_chunk == 1 and not self._filter:
                # A frame is a whole chunk: hand HDF5 its bytes, past the chunk cache (one copy
                # fewer) and the filter pipeline (there are no filters).
                dataset.id.write_direct_chunk((index, 0, 0), data)
            else:
                dataset.write_direct(data.astype(dtype, copy=False), dest_sel=np.s_[index])
        if keyframe:
            self._uncommitted_keyframes += 1
        else:
            self._uncommitted += 1
        self._unflushed_bytes += _item_bytes(item, self)

    def _arrived(self, array, dtype: np.dtype, what: str) -> np.ndarray:
        """A queued array, or a device frame's host copy once its download has arrived (the
        writer thread waits for it, without the GIL), checked against the file's layout."""
        if not isinstance(array, Snapshot):
            return array
        started = _time.perf_counter()
        host = array.host()
        waited = _time.perf_counter() - started
        self._writer_seconds["wait_for_copies"] += waited
        self._writer_seconds["write"] -= waited  # counted apart from the write it is inside
        self._writer_seconds["device_narrowing"] += sum(
            event.seconds() for event in array.kernel_events or ())
        expected = encodings.staged_shape(self.encoding, self.n) if what == "frame" \
            else (self.n, 3)
        if host.shape != expected or host.dtype.str != np.dtype(dtype).str:
            raise InvalidInputError(f"a staged {what} of {host.dtype}{host.shape} does not fit "
                                    f"this recording's {np.dtype(dtype)}{expected}")
        return host

    def _commit(self, pending) -> None:
        """Make ``pending`` frames and keyframes visible: their data reaches the file before
        their time and step entries do, so a reader (or a crash) never sees a step without its
        positions."""
        if not pending:
            return
        started = _time.perf_counter()
        try:
            self._commit_now(pending)
        finally:
            self._writer_seconds["commit"] += _time.perf_counter() - started

    def _commit_now(self, pending) -> None:
        self._check_unchanged()
        self._file.flush()
        self._unflushed_bytes = 0
        for keyframes, (time_name, step_name) in ((False, (fmt.TIME, fmt.STEP)),
                                                  (True, (fmt.KEYFRAME_TIME, fmt.KEYFRAME_STEP))):
            entries = [(t, s) for kind, t, s in pending if kind == keyframes]
            if not entries:
                continue
            start = self.keyframes_committed if keyframes else self.frames_committed
            count = len(entries)
            times = np.array([t for t, _ in entries], dtype="<f8")
            steps = np.array([s for _, s in entries], dtype="<i8")
            for name, values in ((time_name, times), (step_name, steps)):
                dataset = self._datasets[name]
                dataset.resize(start + count, axis=0)
                dataset[start:start + count] = values
        self._file.flush()
        self._fingerprint = self._lock.fingerprint()
        for keyframes in (False, True):
            count = sum(1 for kind, _, _ in pending if kind == keyframes)
            if keyframes:
                self.keyframes_committed += count
                self._uncommitted_keyframes -= count
            else:
                self.frames_committed += count
                self._uncommitted -= count

    def _start_writeback(self) -> None:
        """Let the disk take the frames written so far while the run goes on (``_writeback``)."""
        handle = self._file.id.get_vfd_handle()
        if isinstance(handle, int) and handle >= 0:
            start_writeback(handle)
        self._bytes_since_writeback = 0

    def _fsync(self) -> None:
        """Ask the OS to put what the last commit wrote on the disk itself (power-loss safe)."""
        handle = self._file.id.get_vfd_handle()
        if isinstance(handle, int) and handle >= 0:
            os.fsync(handle)
        self._frames_since_fsync = 0

    def _check_unchanged(self) -> None:
        """Raise :class:`_ChangedUnderUs` if another program emptied, rewrote, replaced or
        removed the file since the last flush: a flush then would write into someone else's
        file, or into nothing anybody can read."""
        reason = self._lock.changed(self._fingerprint)
        if reason is not None:
            raise _ChangedUnderUs(f"{self.path} changed while it was being recorded: {reason}; "
                                  "the recording stopped")

    def _require_space(self, needed: int, what: str) -> None:
        free = self._lock.free_bytes()
        if free < needed:
            raise _DiskFull(f"the disk holding {self.path} is full: {free / 1e6:.3g} MB free, "
                            f"{needed / 1e6:.3g} MB needed to {what}")

    def _close_file(self, intact: bool, error: BaseException | None) -> BaseException | None:
        """Close the file (see :func:`_abandon` when a write failed) and release the path;
        returns ``error``, or the close's own failure when there was none."""
        if intact:
            try:
                self._check_unchanged()
            except _ChangedUnderUs as changed:
                intact, error = False, error or changed
        if intact:
            self._datasets.clear()
            try:
                self._file.close()
            except H5_ERRORS as failure:
                intact = False
                error = error or failure
        if not intact:
            _abandon(self._file, self._datasets)
        # A recording that failed before its first commit holds nothing: it must not block a
        # retry under the same name.
        self._file_removed = error is not None and not isinstance(error, _ChangedUnderUs) \
            and self.frames_committed == 0 \
            and self._lock.created
        self._lock.release(remove=self._file_removed)
        return error

    def _discard_queue(self) -> None:
        """Free the frames a stopped writer will never write."""
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return


def _abandon(file: h5py.File, objects: dict | None = None) -> None:
    """Close ``file`` after HDF5 failed to write it, without letting HDF5 write anything more.

    After a failed write HDF5's caches are in a state its close would try (and fail) to flush,
    and in which h5py has been seen to crash the process. Pointing HDF5's file descriptor at
    /dev/null first makes those writes vanish: the file on disk stays as the last successful
    commit left it, which a reader opens like the file of a killed writer. ``objects`` (open
    datasets of the file) are let go only then: closing one flushes its chunks.
    """
    try:
        handle = file.id.get_vfd_handle()
    except H5_ERRORS:
        handle = None
    if isinstance(handle, int) and handle >= 0 and os.name == "posix":
        null = os.open(os.devnull, os.O_RDWR)
        try:
            os.dup2(null, handle)
        finally:
            os.close(null)
    if objects:
        objects.clear()
    try:
        file.close()
    except H5_ERRORS:
        pass  # the writes it failed went to /dev/null; nothing on disk depends on them


def keyframe_due(frame_index: int, keyframe_every: int) -> bool:
    """Whether frame ``frame_index`` (0-based) of a run recording a keyframe every
    ``keyframe_every`` frames (0: never on its own) comes with a keyframe."""
    return keyframe_every > 0 and frame_index % keyframe_every == 0


def _item_bytes(item, recorder: Recorder) -> int:
    """Bytes a queued frame or keyframe takes in the file."""
    if item[0]:
        return 2 * recorder.n * 3 * recorder.keyframe_dtype.itemsize
    return recorder._stored_frame_bytes


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
