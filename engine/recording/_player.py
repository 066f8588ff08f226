"""Player: replays a recording through the same ``FrameSource`` interface as a live simulation.

A prefetch thread keeps a small ring of render-ready frame buffers filled around the play head:
ahead in the direction of play (or of the last seek/step), and one frame behind, so scrubbing
either way finds frames waiting. Buffers keep the file's dtype (float16 frames stay float16; the
renderer uploads them as half floats).

A buffer handed out in a :class:`Frame` is never refilled while anything still refers to it
(the frame, its array, or a view of it): the ring checks reference counts before reusing a
buffer, so a renderer may hold a frame as long as it likes.

With ``max_particles=K`` the ring reads only the first K particles of each frame while playing
(in a priority-ordered recording a fair sample of every frame, ADR 0280) and, once paused, the
whole frame at the play head: the frame on screen stays until its complete copy has arrived.

A recording still being written is followed: the prefetch thread takes in newly committed
frames every ``REFRESH_SECONDS``, and a play head that reaches the last frame waits there
(``live`` is True) and plays on through each frame as it arrives, until the writer finishes.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time as _time

import numpy as np

from ..errors import InvalidInputError, RecordingError
from ..contracts import StoredFrames
from ..frames import Frame, FrameSource, FrameStats
from ._format import NATURAL
from ._reader import RecordingFile

# More buffers than this buys no smoother playback (the ring only needs the frames just ahead).
MAX_BUFFERS = 64
# How often a live recording is asked for new frames (the writer commits every 2 s by default).
REFRESH_SECONDS = 0.1


class _Slot:
    __slots__ = ("array", "index", "rows", "ready")

    def __init__(self, n: int, dtype: np.dtype):
        self.array = np.empty((n, 3), dtype=dtype)
        self.index = -1  # frame held (or being read); -1 when empty
        self.rows = 0  # particles of that frame held: the first ``rows`` of the file's order
        self.ready = False


class Player(FrameSource):
    """Replay a recording file.

    Parameters
    ----------
    path
        The recording (see ``docs/recording-format.md``), or other
        :class:`~orrery.engine.contracts.StoredFrames` (a
        :class:`~orrery.engine.snapshot_series.SnapshotSeries`).
    speed
        Play rate in frames of the recording per second of wall time (default 30). Negative plays
        backwards. When frames cannot be read that fast, the play head keeps to the clock and
        frames in between are skipped.
    loop
        Wrap around at either end instead of pausing there (default False).
    buffers
        Frame buffers in the prefetch ring (default 8, 4 to 64): memory is
        ``buffers * n * 3 * itemsize``.
    max_particles
        None (default): every frame is read whole. K: while playing, only the first K
        particles of each frame are read (a recording's only; also settable later as
        ``max_particles``); paused, the frame at the play head is read whole.

    Playback starts paused at frame 0. ``latest()`` never blocks: until the frame at the play
    head has been read it returns the previous frame (or None before the first one).

    The contract of a frame with ``max_particles``: ``frame.positions`` has k rows, k = K
    (or n when K >= n) while playing and n once the paused frame's complete copy has arrived
    (until then ``latest()`` returns the k-row frame); its rows are the first k particles in
    the file's order, so ``population[:k]`` and ``masses[:k]`` are theirs. In a
    priority-ordered recording (``order == "priority"``) they are a uniform random sample of
    the frame: a drawer that scales each particle's light by n / k keeps the picture's total.
    In a natural-order recording they are just the run's first k particles.
    """

    def __init__(self, path, *, speed: float = 30.0, loop: bool = False, buffers: int = 8,
                 max_particles: int | None = None):
        if not isinstance(buffers, (int, np.integer)) or not 4 <= buffers <= MAX_BUFFERS:
            raise InvalidInputError(f"buffers must be an integer from 4 to {MAX_BUFFERS}, got "
                                    f"{buffers!r}")
        # A path opens a recording; stored frames (a SnapshotSeries) play as they are.
        self._file: StoredFrames = RecordingFile(path) if isinstance(path, (str, os.PathLike)) \
            else path
        try:
            self._max_particles = self._checked_max_particles(max_particles)
        except InvalidInputError:
            if self._file is not path:
                self._file.close()
            raise
        self.loop = bool(loop)
        self._speed = _checked_speed(speed)
        self._playing = False
        self._position = 0
        self._direction = 1
        self._anchor_time = _time.monotonic()
        self._anchor_position = 0
        self._last_frame: Frame | None = None
        self._last_index = -1
        self._sequence = 0
        self._closed = False
        self._waiting_for_frames = False  # the play head reached the live edge while playing
        self._refreshed_at = _time.monotonic()
        self._error: Exception | None = None
        self._cond = threading.Condition()
        self._slots = [_Slot(self._file.n, self._file.dtype) for _ in range(buffers)]
        self._unused_refs = _refcount(self._slots[0])
        self._thread = threading.Thread(target=self._prefetch_loop, name="orrery-prefetch",
                                        daemon=True)
        self._thread.start()

    # -- what the recording holds --------------------------------------------------------------

    @property
    def frame_count(self) -> int:
        return self._file.frame_count

    @property
    def live(self) -> bool:
        """The recording is still being written: new frames appear as they are committed."""
        return self._file.being_written

    @property
    def path(self):
        """The recording's file (None for a sequence of snapshots)."""
        return self._file.path if isinstance(self._file, RecordingFile) else None

    def keyframe_before(self, index: int) -> int:
        """The keyframe a run branched off frame ``index`` starts from (``RecordingFile``)."""
        if not isinstance(self._file, RecordingFile):
            raise RecordingError("a sequence of snapshots holds no keyframes")
        return self._file.keyframe_before(self._checked_index(index))

    @property
    def n(self) -> int:
        return self._file.n

    @property
    def order(self) -> str:
        """The particles' order in the frames: ``"priority"`` (any prefix a fair sample) or
        ``"natural"`` (the run's; a sequence of snapshots is natural)."""
        return self._file.order if isinstance(self._file, RecordingFile) else NATURAL

    @property
    def max_particles(self) -> int | None:
        """Particles read of each frame while playing (None: all of them)."""
        return self._max_particles

    @max_particles.setter
    def max_particles(self, value: int | None) -> None:
        checked = self._checked_max_particles(value)
        with self._cond:
            self._max_particles = checked
            self._cond.notify_all()

    def _checked_max_particles(self, value) -> int | None:
        if value is None:
            return None
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise InvalidInputError(f"max_particles must be a positive integer or None, got "
                                    f"{value!r}")
        if not isinstance(self._file, RecordingFile):
            raise InvalidInputError("max_particles reads part of a recording's frames; a "
                                    "sequence of snapshots is read whole")
        return int(value)

    @property
    def dtype(self) -> np.dtype:
        return self._file.dtype

    @property
    def attributes(self) -> dict:
        return self._file.attributes

    @property
    def population(self) -> np.ndarray:
        return self._file.population

    @property
    def population_names(self) -> tuple[str, ...]:
        return self._file.population_names

    @property
    def masses(self) -> np.ndarray:
        return self._file.masses

    def time_of(self, index: int) -> float:
        """Simulation time of frame ``index``."""
        return float(self._file.times[self._checked_index(index)])

    def step_of(self, index: int) -> int:
        """Simulation step of frame ``index``."""
        return int(self._file.steps[self._checked_index(index)])

    def read_frame(self, index: int, *, velocities: bool = False) -> np.ndarray:
        """Frame ``index`` read now into a new array (blocking; bypasses the ring)."""
        return self._file.read(self._checked_index(index), velocities=velocities)

    # -- transport controls --------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Index of the frame at the play head."""
        with self._cond:
            self._advance()
            return self._position

    @property
    def playing(self) -> bool:
        with self._cond:
            self._advance()
            return self._playing

    @playing.setter
    def playing(self, value: bool) -> None:
        self.play() if value else self.pause()

    @property
    def speed(self) -> float:
        """Frames of recording per second of wall time; negative plays backwards."""
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        with self._cond:
            self._advance()
            self._speed = _checked_speed(value)
            self._reanchor()

    def play(self) -> None:
        """Start playing from the play head; at the end (or start, playing backwards) without
        ``loop`` playback restarts from the other end."""
        with self._cond:
            self._advance()
            if self.frame_count == 0 and not self.live:
                return
            if not self.loop and not self.live:
                if self._speed > 0 and self._position == self.frame_count - 1:
                    self._position = 0
                elif self._speed < 0 and self._position == 0:
                    self._position = self.frame_count - 1
            self._playing = self._speed != 0
            self._direction = 1 if self._speed >= 0 else -1
            self._reanchor()

    def pause(self) -> None:
        with self._cond:
            self._advance()
            self._playing = False
            self._cond.notify_all()

    def seek(self, index: int) -> None:
        """Move the play head to ``index`` (clamped to the recording); playing continues from there."""
        with self._cond:
            self._advance()
            self._move_to(self._clamp(int(index)))

    def step(self, delta: int = 1) -> None:
        """Pause and move ``delta`` frames (negative: back); wraps with ``loop``, else clamps."""
        with self._cond:
            self._advance()
            self._playing = False
            target = self._position + int(delta)
            if self.loop and self.frame_count:
                target %= self.frame_count
            self._move_to(self._clamp(target))

    # -- FrameSource ---------------------------------------------------------------------------

    def latest(self) -> Frame | None:
        if self._error is not None:
            raise RecordingError(f"reading {self._file.path} failed: {self._error}") \
                from self._error
        with self._cond:
            self._advance()
            index = self._position
            slot = max((s for s in self._slots if s.ready and s.index == index),
                       key=lambda s: s.rows, default=None)
            if slot is None or (self._last_index == index
                                and self._last_frame.positions.shape[0] >= slot.rows):
                return self._last_frame
            positions = slot.array[:slot.rows]
            positions.flags.writeable = False
            self._last_frame = Frame(positions=positions, time=float(self._file.times[index]),
                                     step=int(self._file.steps[index]), sequence=self._sequence,
                                     stats=FrameStats(index=index,
                                                      frame_count=self.frame_count))
            self._last_index = index
            self._sequence += 1
            self._cond.notify_all()  # the previous frame's buffer may be free now
            return self._last_frame

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._file.close()

    def __enter__(self) -> Player:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- play head (call with the lock held) ---------------------------------------------------

    def _advance(self) -> None:
        """Move the play head to where the clock says it is now."""
        if not self._playing or self.frame_count == 0:
            return
        elapsed = _time.monotonic() - self._anchor_time
        target = self._anchor_position + math.floor(elapsed * self._speed)
        count = self.frame_count
        if self.loop:
            target %= count
        elif target >= count and self.live:
            target = count - 1  # wait at the live edge; refresh re-anchors when frames arrive
            self._waiting_for_frames = True
        elif not 0 <= target < count:
            target = min(max(target, 0), count - 1)
            self._playing = False
        if target != self._position:
            self._position = target
            self._cond.notify_all()

    def _reanchor(self) -> None:
        self._waiting_for_frames = False
        self._anchor_time = _time.monotonic()
        self._anchor_position = self._position
        self._cond.notify_all()

    def _move_to(self, index: int) -> None:
        if index != self._position:
            self._direction = 1 if index > self._position else -1
        self._position = index
        self._reanchor()

    def _clamp(self, index: int) -> int:
        return min(max(index, 0), max(self.frame_count - 1, 0))

    def _checked_index(self, index: int) -> int:
        index = int(index)
        if not 0 <= index < self.frame_count:
            raise IndexError(f"frame {index} outside 0..{self.frame_count - 1}")
        return index

    # -- prefetch thread -----------------------------------------------------------------------

    def _rows_wanted(self, index: int) -> int:
        """Particles to read of frame ``index``: all of the paused play head's, else up to
        ``max_particles``."""
        n = self._file.n
        if self._max_particles is None or (not self._playing and index == self._position):
            return n
        return min(self._max_particles, n)

    def _wanted(self) -> list[int]:
        """Frames to hold, most urgent first: the play head, then ahead, then one behind."""
        count = self.frame_count
        direction = self._direction
        if self._playing:
            direction = 1 if self._speed >= 0 else -1
        ahead = len(self._slots) - 3  # one buffer stays with the frame on screen, one behind
        offsets = list(range(ahead + 1)) + [-1]
        wanted = []
        for offset in offsets:
            index = self._position + direction * offset
            if self.loop:
                index %= count
            if 0 <= index < count and index not in wanted:
                wanted.append(index)
        return wanted

    def _next_job(self) -> tuple[_Slot, int] | None:
        if self.frame_count == 0:
            return None
        wanted = self._wanted()
        held: dict[int, int] = {}  # rows held (or being read) of each frame
        for slot in self._slots:
            held[slot.index] = max(held.get(slot.index, 0), slot.rows)
        missing = next((index for index in wanted
                        if held.get(index, 0) < self._rows_wanted(index)), None)
        if missing is None:
            return None
        rank = {index: r for r, index in enumerate(wanted)}
        urgency = rank[missing]
        best, best_rank = None, urgency
        for slot in self._slots:
            if not slot.ready and slot.index != -1:
                continue  # being filled
            if _refcount(slot) > self._unused_refs:
                continue  # a frame handed out still refers to this buffer
            outgrown = slot.rows < held.get(slot.index, 0)  # a larger copy is held or coming
            slot_rank = math.inf if slot.index == -1 or outgrown \
                else rank.get(slot.index, len(wanted))
            if slot_rank > best_rank:
                best, best_rank = slot, slot_rank
        if best is None:
            return None
        best.index, best.rows, best.ready = missing, self._rows_wanted(missing), False
        return best, missing

    def _prefetch_loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    self._advance()
                    if self.live and _time.monotonic() - self._refreshed_at >= REFRESH_SECONDS:
                        job = None
                        break
                    job = self._next_job()
                    if job is not None:
                        break
                    # Woken by the play head moving; the timeout catches buffers released by
                    # the renderer dropping a frame, which nothing signals.
                    self._cond.wait(timeout=0.02)
            if job is None:
                if not self._take_in_new_frames():
                    return
                continue
            slot, index = job
            try:
                self._file.read_into(index, slot.array[:slot.rows])
            except Exception as error:  # reported by latest(); the thread cannot go on
                with self._cond:
                    slot.index, slot.rows = -1, 0
                    self._error = error
                return
            with self._cond:
                slot.ready = True
                self._cond.notify_all()


    def _take_in_new_frames(self) -> bool:
        """Refresh a live file (on the prefetch thread, without the lock: reads of the frames
        already known go on meanwhile); False when that failed."""
        try:
            new = self._file.refresh()
        except Exception as error:  # reported by latest(), like a failed read
            self._error = error
            return False
        with self._cond:
            self._refreshed_at = _time.monotonic()
            if new and self._waiting_for_frames:  # play on from the old edge at the set speed
                self._reanchor()
            self._cond.notify_all()
        return True


def _refcount(slot: _Slot) -> int:
    return sys.getrefcount(slot.array)


def _checked_speed(speed) -> float:
    speed = float(speed)
    if not math.isfinite(speed):
        raise InvalidInputError(f"speed must be finite, got {speed!r}")
    return speed
