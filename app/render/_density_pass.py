"""How a density image is drawn: particles splatted with a cubic-spline kernel into the float
target (mass, and mass times a quantity), then shown on a log scale through a colour map."""

from __future__ import annotations

import math

import numpy as np

from ._camera import gl_bytes
from ._colormaps import colour_map_texture
from ._scene import ParticleScene
from ._shaders import program
from ._style import AUTO_DECADES, DENSITY_QUANTITIES, DensityStyle

# Fraction of the occupied pixels above the automatic range's top: a few bright cores saturate
# instead of pushing everything else into the dark end.
_AUTO_TOP_FRACTION = 0.005
# Size of the colour bar, as fractions of the output (width) and in pixels (height, margin).
_BAR_WIDTH, _BAR_HEIGHT, _BAR_MARGIN = 0.25, 12, 16


def neighbour_supports(positions: np.ndarray, neighbours: int) -> np.ndarray:
    """Each particle's distance to its ``neighbours``-th nearest neighbour (float32): the
    kernel support of adaptive smoothing. Coincident crowds get the smallest positive distance
    found rather than zero."""
    from scipy.spatial import cKDTree

    points = np.asarray(positions, dtype=np.float64)
    k = min(int(neighbours) + 1, len(points))  # the nearest "neighbour" is the particle itself
    if k < 2:
        return np.ones(len(points), np.float32)
    distances, _ = cKDTree(points).query(points, k=[k], workers=-1)
    supports = distances[:, 0].astype(np.float32)
    positive = supports[supports > 0]
    floor = float(positive.min()) if len(positive) else 1.0
    return np.maximum(supports, floor)


def default_smoothing(positions: np.ndarray) -> float:
    """A smoothing length from the data: the mean particle spacing inside the radius holding half
    the particles about the median, times 1.5 (``1.5 r_h (N / 2)^(-1/3)``): smooth, not blotchy."""
    sample = np.asarray(positions[:: max(1, len(positions) // 20000)], dtype=np.float64)
    sample = sample[np.isfinite(sample).all(axis=1)]
    if len(sample) == 0:
        return 1.0
    radius = float(np.median(np.linalg.norm(sample - np.median(sample, axis=0), axis=1)))
    return max(1.5 * radius * (max(len(positions), 2) / 2.0) ** (-1.0 / 3.0), 1e-6)


class DensityPass:
    """``draw`` splats the scene into the bound float target (additive blending set);
    ``present`` maps that target to colours."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.splat = program(ctx, "density.vert", "density.frag")
        self.display = program(ctx, "fullscreen.vert", "density_map.frag")
        self._triangle = ctx.vertex_array(self.display, [])
        self._vertex_arrays: dict = {}
        self.smoothing: float | None = None   # in use: the style's, or estimated once
        self._supports_for = None              # the scene layout the adaptive lengths are for
        self.density_range: tuple[float, float] | None = None
        self.quantity_range: tuple[float, float] | None = None
        low, high = ctx.info.get("GL_POINT_SIZE_RANGE", (1.0, 64.0))
        self.max_radius = float(high) / 2.0

    def prepare(self, scene: ParticleScene, style: DensityStyle) -> float:
        """Check ``style`` and make the scene's inputs ready (equal masses where none were set,
        adaptive supports found where stale, the smoothing picked); returns the support length
        the splat uses: 2h, or with adaptive smoothing the multiplier of each particle's own."""
        style.validate()
        if scene.mass_buffer is None:
            scene.set_masses(None)
        if style.quantity == "values" and scene.value_buffer is None:
            raise ValueError("colouring by values needs scene.set_values(...)")
        adaptive = style.neighbours > 0
        if adaptive and (self._supports_for != (id(scene), scene.layout_version)
                         or scene.support_buffer is None):
            scene.set_supports(neighbour_supports(self._positions(scene), style.neighbours))
            self._supports_for = (id(scene), scene.layout_version)
        if style.smoothing is not None:
            self.smoothing = style.smoothing
        elif self.smoothing is None:
            self.smoothing = 1.0 if adaptive else default_smoothing(self._positions(scene))
        return self.smoothing if adaptive else 2.0 * self.smoothing

    def draw(self, scene: ParticleScene, view_projection: np.ndarray, style: DensityStyle,
             *, pixels_per_unit: float) -> None:
        if scene.count == 0:
            return
        support = self.prepare(scene, style)
        adaptive = style.neighbours > 0
        splat = self.splat
        splat["view_projection"].write(gl_bytes(view_projection))
        splat["adaptive"].value = int(adaptive)
        splat["support"].value = support
        splat["pixels_per_unit"].value = pixels_per_unit
        splat["min_radius"].value = style.min_radius
        splat["max_radius"].value = self.max_radius
        splat["quantity_mode"].value = DENSITY_QUANTITIES.index(style.quantity)
        weights = np.ones(16) if style.weights is None else np.asarray(style.weights, float)
        splat["weights"].write(weights.astype(np.float32).tobytes())
        if "inverse_interval" in splat:
            splat["inverse_interval"].value = 1.0 / scene.interval if scene.interval > 0 else 0.0
        self._vertex_array(scene, style).render(self.ctx.POINTS, vertices=scene.count)

    def refresh_smoothing(self) -> None:
        """Find the adaptive smoothing lengths again at the next frame (the particles moved)."""
        self._supports_for = None

    @staticmethod
    def _positions(scene: ParticleScene) -> np.ndarray:
        dtype = np.dtype("f2" if scene.position_format == "3f2" else "f4")
        return np.frombuffer(scene.current.read(), dtype=dtype).reshape(-1, 3)[:scene.count]

    def _vertex_array(self, scene: ParticleScene, style: DensityStyle):
        scene.fill_vertex_buffers()
        value_buffer = scene.value_buffer if style.quantity == "values" else scene.mass_buffer
        supports = scene.support_buffer if style.neighbours > 0 else scene.mass_buffer
        key = (id(scene), scene.layout_version, scene.parity, id(scene.mass_buffer),
               id(value_buffer), id(supports))
        if key not in self._vertex_arrays:
            self._vertex_arrays = {}
            content = [(scene.current, scene.position_format, "position")]
            names = set(self.splat)
            if "previous" in names:
                content.append((scene.previous, scene.position_format, "previous"))
            if "mass" in names:
                content.append((scene.mass_buffer, "f", "mass"))
            if "value" in names:
                content.append((value_buffer, "f", "value"))
            if "population" in names:
                content.append((scene.population_buffer, "f", "population"))
            if "particle_support" in names:
                content.append((supports, "f", "particle_support"))
            self._vertex_arrays[key] = self.ctx.vertex_array(self.splat, content)
        return self._vertex_arrays[key]

    def auto_ranges(self, accumulation, style: DensityStyle) -> None:
        """Fix the ranges the style leaves open from the image: the top ``0.5%`` of occupied
        pixels saturate, the density range spans AUTO_DECADES decades below that."""
        data = np.frombuffer(accumulation.read(), dtype=np.float32).reshape(-1, 4)
        occupied = data[data[:, 0] > 0]
        if len(occupied) == 0:
            self.density_range = style.density_range or (-6.0, -6.0 + AUTO_DECADES)
            self.quantity_range = style.quantity_range or (0.0, 1.0)
            return
        if style.density_range is None:
            top = math.log10(float(np.quantile(occupied[:, 0], 1.0 - _AUTO_TOP_FRACTION)))
            self.density_range = (top - AUTO_DECADES, top)
        else:
            self.density_range = tuple(style.density_range)
        if style.quantity_range is None and style.quantity != "density":
            mean = occupied[:, 1] / occupied[:, 0]
            low, high = (float(v) for v in np.quantile(mean, [0.01, 0.99]))
            self.quantity_range = (low, high if high > low else low + 1.0)
        else:
            self.quantity_range = tuple(style.quantity_range or (0.0, 1.0))

    def present(self, accumulation, style: DensityStyle, size: tuple[int, int],
                *, origin: tuple[int, int] = (0, 0)) -> None:
        if self.density_range is None or (style.density_range is not None
                                          and tuple(style.density_range) != self.density_range):
            self.auto_ranges(accumulation, style)
        accumulation.use(location=0)
        colour_map_texture(self.ctx, style.colour_map).use(location=1)
        display = self.display
        display["density"].value = 0
        display["colour_map"].value = 1
        display["density_range"].value = self.density_range
        display["quantity_range"].value = self.quantity_range or (0.0, 1.0)
        display["show_quantity"].value = int(style.quantity != "density")
        display["origin"].value = origin
        width, height = size
        bar = (width * (1.0 - _BAR_WIDTH) - _BAR_MARGIN, _BAR_MARGIN, width * _BAR_WIDTH,
               _BAR_HEIGHT) if style.colour_bar else (0.0, 0.0, 0.0, 0.0)
        display["colour_bar"].value = bar
        self._triangle.render(self.ctx.TRIANGLES, vertices=3)

    def reset(self) -> None:
        """Forget the estimated smoothing and ranges (a new data set)."""
        self.smoothing = self.density_range = self.quantity_range = None
        self._supports_for = None
