"""When a render loop draws: a frame is drawn only when it can show something new (the
source's next frame, the answer to an input), and a loop with nothing to show waits for the
source instead (``FrameSource.wait_for_newer``, the GIL released). On a GPU every frame drawn
takes the simulation's time whether or not its picture changed: a loop that redrew its last
picture 1,600 times a second left a 1M-particle live run 57% of its steps (H200, ADR 0166)."""

from __future__ import annotations

import math
import time

# Longest a waiting loop goes without looking at its window's events (their latency).
POLL_S = 0.004
# After an input a loop keeps drawing this long: the panel answers hover and drags over
# several frames.
AFTER_INPUT_S = 0.5
# A loop with nothing new still draws this often (the panel's clocks and messages).
REDRAW_S = 0.1


class DrawPacing:
    """``due(changed)``: whether to draw now; ``drawn()`` after drawing, ``input()`` on every
    window event."""

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self._input_at = -float("inf")
        self._drawn_at = -float("inf")

    def input(self) -> None:
        self._input_at = self._clock()

    def drawn(self) -> None:
        self._drawn_at = self._clock()

    def due(self, changed: bool, *, idle: bool = True) -> bool:
        """``idle=False``: no redraw for the clocks alone (only what changed, and inputs)."""
        now = self._clock()
        return changed or now - self._input_at < AFTER_INPUT_S or \
            (idle and now - self._drawn_at >= REDRAW_S)


def next_tick(origin: float, period: float, now: float) -> float:
    """The first tick at or after ``now`` of a clock ticking every ``period`` seconds from
    ``origin``: what a frame waits for under vsync (a frame that misses a tick waits for the
    next one, and late wake-ups do not add up as they would sleeping a period after each
    frame: that gave 59.5 frames a second for a cap of 60)."""
    return origin + math.ceil((now - origin) / period) * period
