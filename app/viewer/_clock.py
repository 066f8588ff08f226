"""Render-rate bookkeeping and an optional frame-rate cap (so the render loop leaves CPU time to
the solver thread)."""

from __future__ import annotations

import time
from collections import deque

import numpy as np

from ..render._pacing import next_tick


class FrameClock:
    """Frames per second from the median of the last ``window`` frame intervals."""

    def __init__(self, *, max_fps: float = 60.0, window: int = 60):
        self.max_fps = max_fps
        self._intervals: deque[float] = deque(maxlen=window)
        self._last = None
        self._origin = None  # the cap's first tick
        self.frames = 0

    def tick(self) -> None:
        """Mark the end of a frame; with a cap, sleeps first until the cap's next tick."""
        now = time.perf_counter()
        if self.max_fps:
            if self._origin is None:
                self._origin = now
            wait = next_tick(self._origin, 1.0 / self.max_fps, now) - now
            if wait > 0:
                time.sleep(wait)
                now = time.perf_counter()
        if self._last is not None:
            self._intervals.append(now - self._last)
        self._last = now
        self.frames += 1

    @property
    def fps(self) -> float:
        if not self._intervals:
            return 0.0
        median = float(np.median(self._intervals))
        return 1.0 / median if median > 0 else 0.0
