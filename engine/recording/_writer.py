"""The writer thread of a recording: frames taken from a bounded queue, written into the file's
layout and committed every ``flush_seconds`` (and every ``fsync_every`` frames, synced).

Every ``WRITEBACK_BYTES`` of frames the writer asks the OS to start writing them to the disk
(``RecordingLayout.start_writeback``), so the disk works beside the run instead of all at once
when it ends. Short of room, it commits what it holds and stops before HDF5 meets a full disk.
A device frame's download is waited for here, never on the caller's thread.
"""

from __future__ import annotations

import queue
import threading
import time as _time
from typing import NamedTuple

import numpy as np

from .. import frame_encoding as encodings
from ..compute import Snapshot
from ..errors import InvalidInputError
from ._layout import DiskFull, RecordingLayout

# Frame bytes written between two requests to the OS to start writing them back (portable):
# a few frames of a million particles, so the disk always has work and the page cache never
# holds more than the disk is behind by.
WRITEBACK_BYTES = 32 << 20

_STOP = object()


class QueuedFrame(NamedTuple):
    """A frame (or a keyframe) waiting for the writer: host arrays, or device snapshots whose
    host copies the writer waits for."""

    keyframe: bool
    positions: np.ndarray | Snapshot
    velocities: np.ndarray | Snapshot | None
    time: float
    step: int


class RecordingWriter:
    """Writes the frames put in ``queue`` (at most ``capacity`` waiting) into ``layout`` on a
    thread of its own, which starts at once. ``error`` is what stopped it (None while it
    runs, or after it finished cleanly); the file is closed by then."""

    def __init__(self, layout: RecordingLayout, *, capacity: int, flush_seconds: float,
                 fsync_every: int):
        self.layout = layout
        self.queue: queue.Queue = queue.Queue(maxsize=capacity)
        self.flush_seconds, self.fsync_every = flush_seconds, fsync_every
        self.error: BaseException | None = None
        self.file_removed = False  # it failed before its first commit, so it was removed
        self.frames_committed = 0
        self.keyframes_committed = 0
        # Where the thread's time goes (seconds): waiting for device copies to arrive, writing
        # frames into the file, committing; and the device time of the kernels that narrowed
        # the frames (their events, read once the copy has arrived).
        self.seconds = {"wait_for_copies": 0.0, "write": 0.0, "commit": 0.0,
                        "device_narrowing": 0.0}
        self._uncommitted = 0  # written, not yet committed
        self._uncommitted_keyframes = 0
        self._frames_since_fsync = 0
        self._unflushed_bytes = 0  # frame bytes HDF5 may still hold in memory
        self._bytes_since_writeback = 0  # frame bytes written since write-back last started
        self._thread = threading.Thread(target=self._write_loop, name="orrery-recorder",
                                        daemon=True)
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def finish(self) -> None:
        """Commit every queued frame, then stop and close the file; returns once it has."""
        while self._thread.is_alive():  # a writer that stopped takes nothing more
            try:
                self.queue.put(_STOP, timeout=0.1)
                break
            except queue.Full:
                continue
        self._thread.join()

    def _write_loop(self) -> None:
        pending: list[tuple[bool, float, int]] = []
        deadline = None
        error: BaseException | None = None
        intact = True  # False once HDF5 failed a write: the file must not be touched again
        layout = self.layout
        try:
            while True:
                timeout = None if deadline is None else max(0.0, deadline - _time.monotonic())
                try:
                    item = self.queue.get(timeout=timeout)
                except queue.Empty:
                    item = None
                if item is _STOP:
                    self._commit(pending)
                    if self.fsync_every:
                        self._fsync()
                    break
                if item is not None:
                    size = layout.item_bytes(item.keyframe)
                    needed = size + layout.reserve_bytes
                    if layout.free_bytes() < self._unflushed_bytes + needed:
                        # Short of room: commit early, so what HDF5 holds takes its place on
                        # disk, then look again.
                        self._commit(pending)
                        pending, deadline = [], None
                        layout.require_space(needed, "write another frame")
                    started = _time.perf_counter()
                    self._write_frame(item)
                    self.seconds["write"] += _time.perf_counter() - started
                    pending.append((item.keyframe, item.time, item.step))
                    if deadline is None:
                        deadline = _time.monotonic() + self.flush_seconds
                    if not item.keyframe:
                        self._frames_since_fsync += 1
                    self._bytes_since_writeback += size
                    if self._bytes_since_writeback >= WRITEBACK_BYTES:
                        layout.start_writeback()
                        self._bytes_since_writeback = 0
                if self.fsync_every and self._frames_since_fsync >= self.fsync_every:
                    self._commit(pending)
                    self._fsync()
                    pending, deadline = [], None
                if deadline is not None and _time.monotonic() >= deadline:
                    self._commit(pending)
                    pending, deadline = [], None
        except (DiskFull, InvalidInputError) as stop:
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
            error, self.file_removed = layout.close(intact, error, self.frames_committed)
            self._discard_queue()
            self.error = error  # last: the Recorder reports it with the file's final state

    def _write_frame(self, item: QueuedFrame) -> None:
        layout = self.layout
        if item.keyframe:
            index = self.keyframes_committed + self._uncommitted_keyframes
            layout.write_keyframe(index, *(self._arrived(array, layout.keyframe_dtype,
                                                         "keyframe")
                                           for array in (item.positions, item.velocities)))
            self._uncommitted_keyframes += 1
        else:
            index = self.frames_committed + self._uncommitted
            positions, box = encodings.split_staged(
                layout.encoding, self._arrived(item.positions, layout.dtype, "frame"), layout.n)
            # A device narrowed this frame without looking at it: refused here, before any of
            # it is written, the recording stops with every frame before it.
            try:
                encodings.check_narrowed(layout.encoding, positions, box)
            except InvalidInputError as error:
                raise InvalidInputError(f"frame {index} of {layout.path} refused: {error}") \
                    from None
            layout.write_frame(index, positions, item.velocities, box)
            self._uncommitted += 1
        self._unflushed_bytes += layout.item_bytes(item.keyframe)

    def _arrived(self, array, dtype: np.dtype, what: str) -> np.ndarray:
        """A queued array, or a device frame's host copy once its download has arrived (this
        thread waits for it, without the GIL), checked against the file's layout."""
        if not isinstance(array, Snapshot):
            return array
        started = _time.perf_counter()
        host = array.host()
        waited = _time.perf_counter() - started
        self.seconds["wait_for_copies"] += waited
        self.seconds["write"] -= waited  # counted apart from the write it is inside
        self.seconds["device_narrowing"] += sum(
            event.seconds() for event in array.kernel_events or ())
        layout = self.layout
        expected = encodings.staged_shape(layout.encoding, layout.n) if what == "frame" \
            else (layout.n, 3)
        if host.shape != expected or host.dtype.str != np.dtype(dtype).str:
            raise InvalidInputError(f"a staged {what} of {host.dtype}{host.shape} does not fit "
                                    f"this recording's {np.dtype(dtype)}{expected}")
        return host

    def _commit(self, pending: list[tuple[bool, float, int]]) -> None:
        """Make ``pending`` frames and keyframes ((keyframe, time, step) each) visible
        (``RecordingLayout.commit``)."""
        if not pending:
            return
        started = _time.perf_counter()
        try:
            frames = [(t, s) for keyframe, t, s in pending if not keyframe]
            keyframes = [(t, s) for keyframe, t, s in pending if keyframe]
            self.layout.commit(frames, self.frames_committed, keyframes, self.keyframes_committed)
            self._unflushed_bytes = 0
            self.frames_committed += len(frames)
            self._uncommitted -= len(frames)
            self.keyframes_committed += len(keyframes)
            self._uncommitted_keyframes -= len(keyframes)
        finally:
            self.seconds["commit"] += _time.perf_counter() - started

    def _fsync(self) -> None:
        self.layout.fsync()
        self._frames_since_fsync = 0

    def _discard_queue(self) -> None:
        """Free the frames a stopped writer will never write."""
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                return
