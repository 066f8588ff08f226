"""A recording's HDF5 file while it is written: its datasets, and what makes it durable.

Crash safety: the file is written in HDF5's single-writer/multiple-reader (SWMR) mode, which
orders HDF5's own metadata writes so the file on disk is consistent at every moment. On top of
that a frame is *committed* only when its ``time`` and ``step`` entries exist: positions (and
velocities) are written as frames arrive, and a commit flushes them, then extends ``time`` and
``step`` and flushes again. A process killed at any instant therefore leaves a file holding
every frame committed by the last flush, each one complete, and possibly some uncommitted
positions after them that readers ignore. Keyframes are written and committed the same way, in
their own datasets.

Durability against power loss, beyond what the operating system's cache keeps after the
process dies, comes from :meth:`RecordingLayout.fsync`; :meth:`RecordingLayout.start_writeback`
asks the OS to start writing the frames so far to the disk (``engine.portable``, ADR 0163). Another
program changing the file (ADR 0200) stops the recording before it writes into that file.
"""

from __future__ import annotations

import datetime
import os

import h5py
import numpy as np

from .. import frame_encoding as encodings
from .. import portable
from . import _format as fmt
from ._hdf5 import H5_ERRORS
from ._writer_lock import WriterLock

# Space the file system must keep free beyond the frames not yet flushed: HDF5's metadata and
# the first chunks of time and step at a commit. Below it the writer commits what it holds and
# stops, before HDF5 ever meets a full disk.
METADATA_RESERVE_BYTES = 256 << 10


class DiskFull(Exception):
    """Raised before a write the file system has no room for."""


class ChangedUnderUs(Exception):
    """Raised when another program changed the file (ADR 0200)."""


class RecordingLayout:
    """The datasets of a new recording at ``lock.path`` (held by ``lock``), created at once.

    Its frames hold ``n`` positions in ``encoding`` (``frame_encoding``), compressed through
    ``filter`` (``_format.compression_filter``), with velocities if ``velocities``, and
    keyframes in ``keyframe_dtype`` (None: none). Every per-particle array (frames, keyframes,
    masses, population) is handed over in the run's order and stored in ``order``
    (``_format.ORDERS``): a priority file's rows are gathered through its permutation here, on
    the writer thread. Arguments are checked by the Recorder.
    """

    def __init__(self, lock: WriterLock, *, n: int, encoding: str, compression: str,
                 filter: dict, velocities: bool, keyframe_dtype: np.dtype | None,
                 masses: np.ndarray, population: np.ndarray, names: tuple[str, ...],
                 attributes: dict, order: str):
        self.lock, self.path = lock, lock.path
        self.n, self.encoding, self.compression = n, encoding, compression
        self.dtype = encodings.STORED_DTYPES[encoding]
        self.velocities, self.keyframe_dtype = velocities, keyframe_dtype
        self.order = order
        self._permutation = fmt.particle_permutation(order, n)
        self._gathered: dict[tuple, np.ndarray] = {}
        self._filter = filter
        self.frame_bytes = n * 3 * self.dtype.itemsize
        self.frames_per_chunk = fmt.frames_per_chunk(self.frame_bytes)
        datasets = 2 if velocities else 1
        self.stored_frame_bytes = self.frame_bytes * datasets
        # HDF5 writes whole chunks: the one being filled may take a chunk's worth of space.
        self.reserve_bytes = (METADATA_RESERVE_BYTES
                              + datasets * self.frames_per_chunk * self.frame_bytes)
        self.require_space(self.reserve_bytes, "start a recording")
        self._file = self._create(masses, population, names, attributes)
        lock.keep_other_writers_out()
        self._fingerprint = lock.fingerprint()

    def item_bytes(self, keyframe: bool) -> int:
        """Bytes a frame (or a keyframe) takes in the file."""
        return 2 * self.n * 3 * self.keyframe_dtype.itemsize if keyframe \
            else self.stored_frame_bytes

    def _create(self, masses, population, names, attributes) -> h5py.File:
        fpc = self.frames_per_chunk
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
                               fmt.COMPRESSION: self.compression, fmt.ORDER: self.order,
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
            if self.velocities:
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
            made[fmt.MASSES] = file.create_dataset(
                fmt.MASSES, data=self._in_file_order(np.asarray(masses, dtype="<f8")))
            made[fmt.POPULATION] = file.create_dataset(fmt.POPULATION,
                                                       data=self._in_file_order(population))
            if self._permutation is not None:
                made[fmt.PARTICLE_PERMUTATION] = file.create_dataset(
                    fmt.PARTICLE_PERMUTATION, data=self._permutation,
                    dtype=fmt.permutation_dtype(self.n))
            made[fmt.POPULATION_NAMES] = file.create_dataset(
                fmt.POPULATION_NAMES, data=list(names), dtype=h5py.string_dtype("utf-8"))
            file.flush()
            file.swmr_mode = True  # from here on no new objects or attributes can be added
            self._gathered.clear()  # the masses' and labels' buffers: no frame reuses them
        except BaseException:
            abandon(file, made)
            raise
        self._datasets = {name: made[name] for name in (fmt.POSITIONS, fmt.POSITION_BOX,
                                                        fmt.VELOCITIES, fmt.TIME, fmt.STEP,
                                                        *fmt.KEYFRAME_DATASETS)
                          if name in made}
        return file

    # -- writing -------------------------------------------------------------------------------

    def _in_file_order(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (one per particle, in the run's order) in the file's order: gathered through
        the permutation, or ``rows`` themselves in a natural file. The gather goes into a buffer
        kept for the next array of its type (HDF5 has written it by then): a fresh frame-sized
        array each time would cost its page faults again."""
        if self._permutation is None:
            return rows
        key = (rows.dtype.str, rows.shape)
        gathered = self._gathered.get(key)
        if gathered is None:
            gathered = self._gathered[key] = np.empty_like(rows)
        # mode="clip": every index is in range by construction, and numpy's default "raise"
        # gathers into a copy of ``out`` first (to leave it untouched on an error), twice the work
        return np.take(rows, self._permutation, axis=0, out=gathered, mode="clip")

    def write_frame(self, index: int, positions: np.ndarray, velocities: np.ndarray | None,
                    box: np.ndarray | None) -> None:
        """Frame ``index``'s stored positions (and velocities, and a fixed16 frame's box)."""
        if box is not None:
            boxes = self._datasets[fmt.POSITION_BOX]
            boxes.resize(index + 1, axis=0)
            boxes[index] = box
        for name, data in ((fmt.POSITIONS, positions), (fmt.VELOCITIES, velocities)):
            if data is None:
                continue
            data = self._in_file_order(data)
            dataset = self._datasets[name]
            dataset.resize(index + 1, axis=0)
            if self.frames_per_chunk == 1 and not self._filter:
                # A frame is a whole chunk: hand HDF5 its bytes, past the chunk cache (one copy
                # fewer) and the filter pipeline (there are no filters).
                dataset.id.write_direct_chunk((index, 0, 0), data)
            else:
                dataset.write_direct(data.astype(self.dtype, copy=False), dest_sel=np.s_[index])

    def write_keyframe(self, index: int, positions: np.ndarray, velocities: np.ndarray) -> None:
        """Keyframe ``index``: the state in the run's precision, exactly."""
        for name, data in ((fmt.KEYFRAME_POSITIONS, positions),
                           (fmt.KEYFRAME_VELOCITIES, velocities)):
            dataset = self._datasets[name]
            dataset.resize(index + 1, axis=0)
            data = self._in_file_order(data)
            dataset.write_direct(data.astype(self.keyframe_dtype, copy=False),
                                 dest_sel=np.s_[index])

    def commit(self, frames: list[tuple[float, int]], first_frame: int,
               keyframes: list[tuple[float, int]], first_keyframe: int) -> None:
        """Make the written ``frames`` and ``keyframes`` ((time, step) each, numbered from
        ``first_frame`` and ``first_keyframe``) visible: their data reaches the file before
        their time and step entries do, so a reader (or a crash) never sees a step without its
        positions."""
        self.check_unchanged()
        self._file.flush()
        for entries, start, (time_name, step_name) in (
                (frames, first_frame, (fmt.TIME, fmt.STEP)),
                (keyframes, first_keyframe, (fmt.KEYFRAME_TIME, fmt.KEYFRAME_STEP))):
            if not entries:
                continue
            count = len(entries)
            times = np.array([t for t, _ in entries], dtype="<f8")
            steps = np.array([s for _, s in entries], dtype="<i8")
            for name, values in ((time_name, times), (step_name, steps)):
                dataset = self._datasets[name]
                dataset.resize(start + count, axis=0)
                dataset[start:start + count] = values
        self._file.flush()
        self._fingerprint = self.lock.fingerprint()

    # -- durability ----------------------------------------------------------------------------

    def start_writeback(self) -> None:
        """Let the disk take the frames written so far while the run goes on (where the OS
        can be asked to: :func:`engine.portable.start_writeback`)."""
        handle = self._file.id.get_vfd_handle()
        if isinstance(handle, int) and handle >= 0:
            portable.start_writeback(handle)

    def fsync(self) -> None:
        """Ask the OS to put what the last commit wrote on the disk itself (power-loss safe)."""
        handle = self._file.id.get_vfd_handle()
        if isinstance(handle, int) and handle >= 0:
            os.fsync(handle)

    def check_unchanged(self) -> None:
        """Raise :class:`ChangedUnderUs` if another program emptied, rewrote, replaced or
        removed the file since the last flush: a flush then would write into someone else's
        file, or into nothing anybody can read."""
        reason = self.lock.changed(self._fingerprint)
        if reason is not None:
            raise ChangedUnderUs(f"{self.path} changed while it was being recorded: {reason}; "
                                 "the recording stopped")

    def require_space(self, needed: int, what: str) -> None:
        """Raise :class:`DiskFull` unless the file system has ``needed`` bytes free."""
        free = self.lock.free_bytes()
        if free < needed:
            raise DiskFull(f"the disk holding {self.path} is full: {free / 1e6:.3g} MB free, "
                           f"{needed / 1e6:.3g} MB needed to {what}")

    def free_bytes(self) -> int:
        return self.lock.free_bytes()

    def close(self, intact: bool, error: BaseException | None,
              committed: int) -> tuple[BaseException | None, bool]:
        """Close the file (see :func:`abandon` when a write failed, ``intact`` False) and
        release the path; ``committed`` frames are in it. Returns ``error``, or the close's
        own failure when there was none, and whether the file was removed: a recording that
        failed before its first commit holds nothing, and must not block a retry under the
        same name."""
        if intact:
            try:
                self.check_unchanged()
            except ChangedUnderUs as changed:
                intact, error = False, error or changed
        if intact:
            self._datasets.clear()
            try:
                self._file.close()
            except H5_ERRORS as failure:
                intact = False
                error = error or failure
        if not intact:
            abandon(self._file, self._datasets)
        removed = error is not None and not isinstance(error, ChangedUnderUs) \
            and committed == 0 and self.lock.created
        self.lock.release(remove=removed)
        return error, removed


def abandon(file: h5py.File, objects: dict | None = None) -> None:
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
