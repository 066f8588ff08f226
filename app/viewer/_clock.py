"""Render-rate bookkeeping and an optional frame-rate cap (so the render loop leaves CPU time to
the solver thread)."""

from __future__ import annotations

import time
from collections import deque

import numpy as np


class FrameClock:
    """Frames per second from the median of the last ``window`` frame intervals."""

    def __init__(self, *, max_fps: float = 60.0, window: int = 60):
        self.max_fps = max_fps
        self._intervals: deque[float] = deque(maxlen=window)
        self._last = None
        self._deadline = None  # when the last frame's period began
        self.frames = 0

    def tick(self) -> None:
        """Mark the end of a frame. With a cap, a frame that ends within a period of the last
        deadline sleeps until the next (each deadline a period after the one before, so late
        wake-ups do not add up: sleeping a period after each frame gave 59.5 frames a second for
        a cap of 60); a frame that ends past it does not wait, and the next period starts at its
        end. Waiting for the next tick of a fixed grid instead (ADR 0166) made a frame slower
        than the period wait half a period on average, and behind vsync, whose flip has already
        waited for the display, could miss every other refresh (ADR 0341)."""
        now = time.perf_counter()
        if self.max_fps and self._deadline is not None and \
                now < self._deadline + 1.0 / self.max_fps:
            self._deadline += 1.0 / self.max_fps
            time.sleep(self._deadline - now)
            now = time.perf_counter()
        else:
            self._deadline = now
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
