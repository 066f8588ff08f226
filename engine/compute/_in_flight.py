"""How far a simulation's host thread may run ahead of its device.

A step that never waits for the device (gpu-tree since ADR 0162, gpu-direct, the device flock)
would let the host queue as many steps as the driver's queue holds: a frame or a control queued
now would show that many steps late, and the host would block inside a launch, holding the GIL,
when the driver's queue fills. :class:`InFlight` keeps at most ``limit`` steps queued: before
queuing one more, the host waits (on CUDA without the GIL) for the oldest to finish.
"""

from __future__ import annotations

from collections import deque

from ._types import KernelEvent

# Steps queued on the device at once: the host queues one while the device runs the one
# before, so the device never waits for the host between steps, and what the host asks for
# next (a frame, a control) comes within a step or two.
STEPS_IN_FLIGHT = 2


class InFlight:
    """``admit()`` before queuing a step, ``add(event)`` after, with the step's last kernel."""

    def __init__(self, limit: int = STEPS_IN_FLIGHT):
        self.limit = limit
        self._queued: deque[KernelEvent] = deque()

    def admit(self) -> None:
        """Wait until fewer than ``limit`` steps are queued."""
        while len(self._queued) >= self.limit:
            self._queued.popleft().wait()

    def add(self, event: KernelEvent) -> None:
        self._queued.append(event)

    def __len__(self) -> int:
        return len(self._queued)
