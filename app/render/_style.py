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
    bloom : strength of the glow around bright light (its part above ``bloom_threshold``
        after exposure, blurred), >= 0; 0 turns it off.
    bloom_threshold : exposed light below which nothing glows, >= 0.
    auto_exposure : let whoever draws set ``exposure`` from the light itself
        (:func:`~orrery.app.render.auto_exposure`; the viewer does, until a hand moves it).
    """

    exposure: float = 0.6
    gamma: float = 2.2
    bloom: float = 0.0
    bloom_threshold: float = 1.0
    auto_exposure: bool = False

    def validate(self) -> None:
        if not self.exposure > 0:
            raise InvalidInputError(f"exposure must be positive, got {self.exposure}")
        if not self.gamma > 0:
            raise InvalidInputError(f"gamma must be positive, got {self.gamma}")
        if not (np.isfinite(self.bloom) and self.bloom >= 0):
            raise InvalidInputError(f"bloom must be a finite number >= 0, got {self.bloom}")
        if not (np.isfinite(self.bloom_threshold) and self.bloom_threshold >= 0):
            raise InvalidInputError(
                f"bloom threshold must be a finite number >= 0, got {self.bloom_threshold}")


DENSITY_QUANTITIES = ("density", "speed", "values")
# Decades of surface density an automatic range shows below its top.
AUTO_DECADES = 3.5


@dataclass
class DensityStyle:
    """Particles splatted with a smoothing kernel into a density image, shown through a colour map.

    smoothing : kernel smoothing length h in world units (the disc's radius is 2h), > 0; None
        picks one from the data (the renderer's first frame). With ``neighbours`` it multiplies
        each particle's own length instead.
    neighbours : adaptive smoothing, as SPH codes do: each particle's support 2h is the distance
        to its ``neighbours``-th nearest neighbour (found once per data set and on request);
        0 turns it off.
    colour_map : one of :func:`~orrery.app.render.colour_maps` (matplotlib's perceptual maps).
    quantity : "density" (log surface density), "speed" or "values" (the scene's per-particle
        values): colour shows the mass-weighted mean quantity, brightness the log density.
    density_range : (low, high) log10 surface density (mass per pixel) mapped onto the colour map;
        None: set automatically from the image (its top 0.5%, AUTO_DECADES decades deep).
    quantity_range : (low, high) of the quantity; None: from the image.
    min_radius : smallest disc radius in pixels, so that far particles are still resolved.
    colour_bar : draw the map's colour bar at the lower right.
    weights : per-population mass multipliers (16 values, >= 0; 0 hides a population).
    """

    smoothing: float | None = None
    neighbours: int = 32
    colour_map: str = "magma"
    quantity: str = "density"
    density_range: tuple[float, float] | None = None
    quantity_range: tuple[float, float] | None = None
    min_radius: float = 1.5
    colour_bar: bool = True
    weights: np.ndarray | None = None

    def validate(self) -> None:
        from ._colormaps import colour_maps

        if self.smoothing is not None and not (np.isfinite(self.smoothing)
                                                and self.smoothing > 0):
            raise InvalidInputError(f"smoothing must be positive, got {self.smoothing}")
        if self.colour_map not in colour_maps():
            raise InvalidInputError(
                f"colour map must be one of {colour_maps()}, got {self.colour_map!r}")
        if self.quantity not in DENSITY_QUANTITIES:
            raise InvalidInputError(
                f"quantity must be one of {DENSITY_QUANTITIES}, got {self.quantity!r}")
        for name in ("density_range", "quantity_range"):
            span = getattr(self, name)
            if span is not None and not (len(span) == 2 and np.all(np.isfinite(span))
                                         and span[1] > span[0]):
                raise InvalidInputError(f"{name} must be (low, high) with low < high, got {span}")
        if not 0 <= self.neighbours <= 1024:
            raise InvalidInputError(f"neighbours must be in 0..1024, got {self.neighbours}")
        if not (np.isfinite(self.min_radius) and self.min_radius >= 1.0):
            raise InvalidInputError(f"min_radius must be at least 1 pixel, got {self.min_radius}")

    def key(self) -> tuple:
        weights = None if self.weights is None else np.asarray(self.weights, float).tobytes()
        return ("density", self.smoothing, self.neighbours, self.quantity, self.min_radius,
                weights)
