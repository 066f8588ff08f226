"""Frames, their statistics and the ``FrameSource`` interface: what the renderer consumes.

A live simulation (the solver thread) and a replayed recording both implement ``FrameSource``,
so the renderer never knows which one it is drawing; ``PublishedFrames`` is the publishing the
live sources share.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .particles import Particles


@dataclass(frozen=True)
class FrameStats:
    """What a source says about the run behind a frame. A field is None where the source does
    not know it: a replay has no solver, a live run no frame index."""

    n: int | None = None
    dt: float | None = None
    solver: str | None = None  # the solver in use (a flock: where it runs), described
    theta: float | None = None  # the opening angle in use, where the solver has one
    steps_per_second: float | None = None  # 0 while paused
    solver_seconds_per_step: float | None = None
    energy_error: float | None = None  # None until the first sample after a (re)start
    paused: bool | None = None
    error: str | None = None  # the exception that stopped the run, with its traceback
    recording: tuple[str, int] | None = None  # (path, frames appended) while recording
    recording_error: str | None = None  # why the last recording stopped early
    # Recorder.stats(): frames narrowed on the device, how often the run waited for the disk
    recording_stats: dict | None = None
    index: int | None = None  # a replayed frame's index in its recording ...
    frame_count: int | None = None  # ... and the recording's frames

    def as_dict(self) -> dict:
        """Every field by name (for JSON: the viewer's statistics file, the served client)."""
        return dataclasses.asdict(self)


class Frame:
    """One complete snapshot. ``positions`` is (n, 3), float32 or float16, and must not be
    written to: a source may hand the same array to several readers.

    A live source may give a device :class:`~orrery.engine.compute.Snapshot` instead of a host
    array: ``positions`` then waits for its host copy on first use (usually long arrived), and
    ``snapshot`` is there for a reader that can copy device to device (GL interop). The frame
    holds the snapshot, so its device copy stays valid while the frame is held.
    """

    __slots__ = ("_positions", "snapshot", "time", "step", "sequence", "stats")

    def __init__(self, positions: np.ndarray | None, time: float, step: int, sequence: int,
                 stats: FrameStats = FrameStats(), *, snapshot=None):
        if positions is None and snapshot is None:
            raise ValueError("a frame needs positions or a snapshot of them")
        self._positions = positions
        self.snapshot = snapshot
        self.time = time
        self.step = step
        self.sequence = sequence  # increases by one for every frame a source publishes
        self.stats = stats

    @property
    def positions(self) -> np.ndarray:
        if self._positions is None:
            self._positions = self.snapshot.host()
        return self._positions

    @property
    def count(self) -> int:
        """Particles in the frame (known without waiting for a snapshot's host copy)."""
        source = self._positions if self._positions is not None else self.snapshot.device
        if source is None:
            source = self.positions
        return int(source.shape[0])

    def relabelled(self, *, sequence: int, stats: FrameStats) -> "Frame":
        """The same positions published again with a new sequence number and statistics."""
        return Frame(self._positions, self.time, self.step, sequence, stats,
                     snapshot=self.snapshot)

    def __repr__(self) -> str:
        return f"Frame(step={self.step}, sequence={self.sequence}, time={self.time:g})"


class FrameSource(ABC):
    """Something that publishes frames; ``latest()`` never blocks and never returns a frame
    mixed from two steps."""

    @property
    @abstractmethod
    def population(self) -> np.ndarray:
        """Per-particle population labels (uint8, shape (n,))."""

    @property
    @abstractmethod
    def population_names(self) -> tuple[str, ...]:
        """Names of the population labels."""

    @property
    def masses(self) -> np.ndarray | None:
        """Per-particle masses (for density images), or None where the source has none: the
        density pass then weighs every particle the same."""
        return None

    @property
    def error(self) -> str | None:
        """Why the run behind the source stopped (None while it has not)."""
        return None

    def energy_history(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Sampled (time, relative energy error) of the run, or None for a source that does not
        sample it (a replay, a flock)."""
        return None

    @abstractmethod
    def latest(self) -> Frame | None:
        """The newest complete frame, or None before the first one exists."""

    @abstractmethod
    def close(self) -> None:
        """Stop any thread behind the source and release its resources."""

    def wait_for_newer(self, sequence: int | None, timeout: float) -> None:
        """Return once a frame other than the one numbered ``sequence`` may be there, at most
        after ``timeout`` seconds, without holding the GIL: what a render loop calls instead of
        drawing a frame that would show nothing new. A source that cannot tell sleeps
        ``timeout``."""
        time.sleep(timeout)

    def on_frame(self, wake: Callable[[], None]) -> bool:
        """Have ``wake()`` called, from the publishing thread, whenever a newer frame is
        published, so that a reader waiting for other news too (the served render thread: a
        viewer's input) waits on its own event instead of polling ``wait_for_newer``. False
        where the source cannot tell (a replay, whose frames come from its clock): its readers
        poll."""
        return False


class PublishedFrames(FrameSource):
    """A source whose frames are made by a thread of its own (or by the caller) and published
    one at a time: the newest is handed out by ``latest()``, and ``wait_for_newer`` waits for
    the next on a condition the publisher notifies. The live runner, the served distributed run
    and the notebook's simulation are this.

    ``_condition`` is re-entrant: a subclass may publish while holding it.
    """

    def __init__(self):
        self._condition = threading.Condition()
        self._front: Frame | None = None
        self._sequence = 0
        self._population = np.zeros(0, np.uint8)
        self._population_names: tuple[str, ...] = ()
        self._masses: np.ndarray | None = None
        self._wakes: list[Callable[[], None]] = []

    @property
    def population(self) -> np.ndarray:
        return self._population

    @property
    def population_names(self) -> tuple[str, ...]:
        return self._population_names

    @property
    def masses(self) -> np.ndarray | None:
        return self._masses

    def latest(self) -> Frame | None:
        with self._condition:
            self._frame_taken()
            return self._front

    def wait_for_newer(self, sequence: int | None, timeout: float) -> None:
        """Wait (the GIL released) until a frame other than ``sequence`` is published, the
        source stops, or ``timeout`` seconds pass."""
        with self._condition:
            self._frame_taken()
            self._condition.wait_for(lambda: self._stopping() or (
                self._front is not None and self._front.sequence != sequence), timeout)

    def _frame_taken(self) -> None:
        """Called (the lock held) when a reader takes or waits for a frame: a publisher that
        makes frames only when they are read hears of it here."""

    def _stopping(self) -> bool:
        """Whether the publisher has stopped, so waiting for a newer frame is over."""
        return False

    def _label(self, particles: Particles) -> None:
        """The population labels, their names and the masses of the frames published from now
        on (call it with the lock held where frames of another run may be read meanwhile)."""
        self._population = particles.population
        self._population_names = particles.population_names
        self._masses = particles.mass

    def _publish_frame(self, make: Callable[[int], Frame]) -> Frame:
        """Publish ``make(sequence)``, the frame numbered next, and wake the waiting readers."""
        with self._condition:
            self._sequence += 1
            self._front = make(self._sequence)
            self._condition.notify_all()
            for wake in self._wakes:
                wake()
            return self._front

    def on_frame(self, wake: Callable[[], None]) -> bool:
        with self._condition:
            self._wakes.append(wake)
        return True
