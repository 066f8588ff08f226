"""Boids on the CPU through the native module (native/flock.cpp): threads and the GIL released."""

from __future__ import annotations

import numpy as np

from ... import _native


class CpuFlock:
    """Steps float32 state held in host arrays, double-buffered (no allocation per step)."""

    device = "cpu"

    def __init__(self, pos: np.ndarray, vel: np.ndarray, *, threads: int | None = None,
                 simd: str | None = None):
        self._pos = np.array(pos, np.float32, order="C")
        self._vel = np.array(vel, np.float32, order="C")
        self._spare = (np.empty_like(self._pos), np.empty_like(self._vel))
        self.threads = threads
        self.simd = simd
        self.timing: dict = {}

    @property
    def n(self) -> int:
        return len(self._pos)

    def step(self, constants: dict, search: str, cell_width: int) -> None:
        pos_out, vel_out = self._spare
        self.timing = _native.flock_step(self._pos, self._vel, pos_out, vel_out, constants, search,
                                         cell_width, self.threads or 0, self.simd or "")
        self._spare = (self._pos, self._vel)
        self._pos, self._vel = pos_out, vel_out

    @property
    def traffic(self) -> dict:
        """Not modelled on the CPU (its phases run through caches, not device memory)."""
        return {}

    def synchronize(self) -> None:
        """Nothing to wait for: a CPU step has finished when it returns."""

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the positions and velocities."""
        return self._pos.copy(), self._vel.copy()

    def positions(self) -> np.ndarray:
        return self._pos

    def describe(self) -> str:
        threads = self.threads or _native.hardware_threads()
        return f"cpu ({threads} threads, {_native.simd_level(self.simd or '')['level']})"
