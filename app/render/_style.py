"""How particles look: validated parameters the render passes turn into uniforms."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine.errors import InvalidInputError

COLOUR_MODES = ("population", "speed", "heading")

# Colours for population labels 0..15: distinct hues that stay apart after tone mapping.
PALETTE = np.array([
    (0.55, 0.72, 1.00), (1.00, 0.72, 0.42), (0.60, 1.00, 0.78), (1.00, 0.55, 0.72),
    (0.85, 0.80, 1.00), (1.00, 0.95, 0.60), (0.50, 0.95, 1.00), (1.00, 0.65, 0.55),
    (0.75, 0.75, 0.75), (0.70, 1.00, 0.50), (0.95, 0.60, 1.00), (0.60, 0.80, 0.90),
    (1.00, 0.85, 0.85), (0.85, 1.00, 0.95), (0.90, 0.75, 0.55), (0.65, 0.65, 1.00),
])

PALETTE_SIZE = len(PALETTE)

# Dark-matter haloes hold most particles of a galaxy model and would wash out the stars.
DIM_POPULATION_WORDS = ("halo", "dark")
DIM_WEIGHT = 0.12


def population_weights(names: tuple[str, ...]) -> np.ndarray:
    """Default brightness per population: haloes dim, everything else 1."""
    weights = np.ones(16)
    for index, name in enumerate(names[:16]):
        if any(word in name.lower() for word in DIM_POPULATION_WORDS):
            weights[index] = DIM_WEIGHT
    return weights


@dataclass
class PointStyle:
    """Point sprites.

    point_size : sprite diameter in window pixels (scaled by the display's pixel ratio), > 0.
    intensity : light one particle adds at its sprite centre, > 0.
    colour_mode : "population", "speed" or "heading" (direction of travel).
    weights : brightness per population label (16 values, >= 0).
    """

    point_size: float = 3.0
    intensity: float = 1.0
    colour_mode: str = "population"
    weights: np.ndarray | None = None

    def validate(self) -> None:
        if not self.point_size > 0:
            raise InvalidInputError(f"point size must be positive, got {self.point_size}")
        if not self.intensity > 0:
            raise InvalidInputError(f"intensity must be positive, got {self.intensity}")
        if self.colour_mode not in COLOUR_MODES:
            raise InvalidInputError(
                f"colour mode must be one of {COLOUR_MODES}, got {self.colour_mode!r}")

    def key(self) -> tuple:
        """Everything that changes the drawn particles, for telling whether a redraw is due."""
        weights = None if self.weights is None else np.asarray(self.weights, float).tobytes()
        return (self.point_size, self.intensity, self.colour_mode, weights)

    def palette(self) -> np.ndarray:
        """(16, 4) float32: rgb and brightness weight per population label."""
        weights = np.ones(16) if self.weights is None else np.asarray(self.weights, dtype=float)
        return np.column_stack([PALETTE, weights]).astype(np.float32)


@dataclass
class ToneMap:
    """Accumulated light to display values.

    exposure : multiplies the accumulated light before the filmic curve, > 0.
    gamma : display gamma (2.2 for an ordinary monitor), > 0.
    """

    exposure: float = 0.6
    gamma: float = 2.2

    def validate(self) -> None:
        if not self.exposure > 0:
            raise InvalidInputError(f"exposure must be positive, got {self.exposure}")
        if not self.gamma > 0:
            raise InvalidInputError(f"gamma must be positive, got {self.gamma}")
