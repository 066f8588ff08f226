"""What every state kept in host memory does alike to hand out frames (the members of
:class:`~orrery.engine.contracts.SimulationState` that a device state implements with kernels):
frames encoded here (``frame_encoding.encode_on_host``, the device kernels' bits), keyframes
copied, nothing to prepare, no device arrays, and a step that is simply run."""

from __future__ import annotations

from collections.abc import Callable, Hashable

import numpy as np

from . import frame_encoding
from .compute import HostSnapshot


class HostFrames:
    """Mixed into a host state, which supplies ``positions()`` and ``snapshot()``."""

    def advance(self, key: Hashable, step: Callable[[], None]) -> None:
        """Run ``step()``: a host state has no graphs to replay it from (``key`` unused)."""
        step()

    def stage_positions(self) -> HostSnapshot:
        """The current positions as a float32 (n, 3) snapshot (a frame)."""
        return HostSnapshot(np.array(self.positions(), np.float32))

    def stage_frame(self, encoding: str) -> HostSnapshot:
        """The current positions encoded as a recorded frame (``frame_encoding``)."""
        return HostSnapshot(frame_encoding.encode_on_host(self.positions(), encoding))

    def stage_state(self) -> tuple[HostSnapshot, HostSnapshot]:
        """(positions, velocities) in the run's precision (a keyframe)."""
        pos, vel, _ = self.snapshot()
        return HostSnapshot(pos), HostSnapshot(vel)

    def prepare_frames(self) -> None:
        """Nothing to build: frames are encoded by the host."""

    def device_arrays(self) -> None:
        """None: the state is in host memory."""
        return None
