"""Frames and the ``FrameSource`` interface: what the renderer and the recorder consume.

A live simulation (the solver thread) and a replayed recording both implement ``FrameSource``,
so the renderer never knows which one it is drawing.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod

import numpy as np


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
                 stats: dict | None = None, *, snapshot=None):
        if positions is None and snapshot is None:
            raise ValueError("a frame needs positions or a snapshot of them")
        self._positions = positions
        self.snapshot = snapshot
        self.time = time
        self.step = step
        self.sequence = sequence  # increases by one for every frame a source publishes
        self.stats = {} if stats is None else stats

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

    def relabelled(self, *, sequence: int, stats: dict) -> "Frame":
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
