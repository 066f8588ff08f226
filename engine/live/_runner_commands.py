"""The runner's control queue: controls (pause, step, a settings change, a recording, reset)
from any thread, waiting for the solver thread, which applies them between two steps.

Controls of the same kind queued one after the other merge (the newest value, or the sum of
steps), and the queue is bounded: a caller finding it full waits up to ``QUEUE_WAIT`` seconds
for room (same-kind controls merge, so only a flood of mixed ones fills it).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from ..errors import OrreryError

MAX_QUEUED_CONTROLS = 64
QUEUE_WAIT = 5.0

# How a queued control merges into the same kind queued just before it.
_MERGE = {
    "pause": lambda old, new: new,
    "step": lambda old, new: old + new,
    "update": lambda old, new: {**old, **new},
    "reset": lambda old, new: None,
}


class ControlQueueFullError(OrreryError, RuntimeError):
    """The solver thread has not taken the queued controls within ``QUEUE_WAIT`` seconds."""


class ControlQueue:
    """Controls as ``[kind, value]`` under ``condition`` (the runner's), which every change
    notifies. ``taking``: whether the solver thread still takes controls (a caller finding the
    queue full stops waiting when it does not); ``stopped``: whether the runner is closing
    (then nothing waits for room)."""

    def __init__(self, condition: threading.Condition, *, taking: Callable[[], bool],
                 stopped: Callable[[], bool]):
        self._condition = condition
        self._taking, self._stopped = taking, stopped
        self._controls: deque[list] = deque()

    def __len__(self) -> int:
        return len(self._controls)

    def submit(self, kind: str, value) -> None:
        """Queue a control (merged into the last one if of the same kind)."""
        with self._condition:
            last = self._controls[-1] if self._controls else None
            if last is not None and last[0] == kind and kind in _MERGE:
                last[1] = _MERGE[kind](last[1], value)
                self._condition.notify_all()
                return
            deadline = time.monotonic() + QUEUE_WAIT
            while len(self._controls) >= MAX_QUEUED_CONTROLS and not self._stopped():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._taking():
                    raise ControlQueueFullError(
                        f"{len(self._controls)} controls are waiting for the solver thread "
                        f"(its step may be taking long); {kind!r} was not queued")
                self._condition.wait(remaining)
            self._controls.append([kind, value])
            self._condition.notify_all()

    def take(self) -> list[list]:
        """Every queued control, in order, leaving the queue empty (call it with the lock
        held)."""
        controls = list(self._controls)
        self._controls.clear()
        self._condition.notify_all()  # callers waiting for room in the queue
        return controls
