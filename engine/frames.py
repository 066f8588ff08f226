"""Frames and the ``FrameSource`` interface: what the renderer and the recorder consume.

A live simulation (the solver thread) and a replayed recording both implement ``FrameSource``,
so the renderer never knows which one it is drawing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Frame:
    """One complete snapshot. ``positions`` is (n, 3), float32 or float16, and must not be
    written to: a source may hand the same array to several readers."""

    positions: np.ndarray
    time: float
    step: int
    sequence: int  # increases by one for every frame a source publishes
    stats: dict = field(default_factory=dict)


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
