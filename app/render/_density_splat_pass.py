"""The density image on the compute device (``kernels/density.cl``, ADR 0107): the mass of the
scene's :class:`DeviceParticles` deposited with the cubic spline into a pyramid of fixed-point
levels, each particle on the level where its support spans at most LEVEL_RADIUS texels (a cost
per particle that does not grow with its footprint), then the levels upsampled into the
renderer's RGBA32F accumulation texture (r = sum m W, g = sum m W q per pixel, as the GL path
``DensityPass.draw`` adds them), which ``DensityPass.present`` shows unchanged.

A frame is 3 + (levels) launches on the compute device, then one copy into the texture
(``DeviceImage``: on CUDA a copy kernel into a GL pixel buffer and a GPU copy, deferrable until
the kernels have finished, as the point splat's light), and no host round trip: the fixed-point
scales come from a reduction on the device. ``stage_seconds()`` gives the device time of the
last frame's stages (extent, deposit, reconstruct: their kernel events; copy: a GL time query).
"""

from __future__ import annotations

import numpy as np

from ._device_image import DeviceImage
from ._scene import DeviceParticles, ParticleScene
from ._style import DENSITY_QUANTITIES, DensityStyle

# The largest support radius, in texels, a particle is deposited with on its level: on level 0
# (supports up to LEVEL_RADIUS pixels) the kernel is exact; beyond, its shape is approximated
# (density.cl's header). A particle touches at most (2 LEVEL_RADIUS + 1)^2 texels.
LEVEL_RADIUS = 8.0
GROUP = 256
_DEFINES = {"LEVEL_RADIUS": f"{LEVEL_RADIUS!r}f", "DENSITY_GROUP": GROUP}
PATH = "compute density pyramid"


def pyramid(width: int, height: int) -> list[tuple[int, int, int]]:
    """The levels of an image of ``width`` x ``height`` pixels: (width, height, first texel)
    each, halving (rounding up) down to one texel."""
    levels, first = [], 0
    while True:
        levels.append((width, height, first))
        first += width * height
        if width == 1 and height == 1:
            return levels
        width, height = -(-width // 2), -(-height // 2)


class DensitySplatPass:
    """Splat a scene's :class:`DeviceParticles` as a density image into an RGBA32F texture."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._queues: dict = {}    # source context -> the context the splat runs on
        self._image = DeviceImage(ctx)
        self._levels = []          # pyramid(...) of the image size
        self._level_table = None   # the same on the device (3 ints a level)
        self._counts = None        # fixed-point sums of every level, zero between frames
        self._floats = None        # the reconstructed levels above the image
        self._extent = None        # the bits of the largest m' and |m' q|
        self._inputs: dict = {}    # name -> (host array, (queue, key), device array)
        self._equal = None         # equal masses, where the scene has none for this layout
        self._events: dict = {}    # stage -> the last frame's kernel events

    def draw(self, scene: ParticleScene, view_projection: np.ndarray, style: DensityStyle,
             accumulation, *, support: float, pixels_per_unit: float,
             deferred: bool = False) -> None:
        """Replace ``accumulation`` with the density image of ``scene`` (``scene.device`` set,
        ``DensityPass.prepare`` run: ``support`` is what it returned); ``deferred``: once
        ``land`` finds the image ready, where it stays on the device."""
        particles: DeviceParticles = scene.device
        queue = self._queue(particles.context)
        width, height = accumulation.size
        self._allocate(queue, (width, height))
        count = particles.current.shape[0]
        masses = scene.extra("mass")
        if masses is None or np.size(masses) != count:
            masses = self._equal_masses(count)
        version = scene.layout_version
        mass = self._input(queue, "mass", masses, (id(masses), version))
        adaptive = style.neighbours > 0
        value = mass
        if style.quantity == "values":
            values = scene.extra("value")
            value = self._input(queue, "value", values, (id(values), version))
        support_array = mass
        if adaptive:
            supports = scene.extra("support")
            support_array = self._input(queue, "support", supports, (id(supports), version))
        labels = self._input(queue, "population", _labels(scene, count),
                             (scene.population_version, count))
        weights = np.ones(16, np.float32) if style.weights is None else \
            np.asarray(style.weights, np.float32).reshape(16)
        weights = self._input(queue, "weights", weights, weights.tobytes())
        program = queue.build(["view.cl", "density.cl"], package=__package__, defines=_DEFINES)
        quantity = np.int32(DENSITY_QUANTITIES.index(style.quantity))
        inverse_interval = np.float32(1.0 / scene.interval if scene.interval > 0 else 0.0)
        matrix = [np.float32(v) for v in np.asarray(view_projection, np.float32).reshape(-1)]
        max_radius = LEVEL_RADIUS * 2.0 ** (len(self._levels) - 1)
        events = {"extent": [], "deposit": [], "reconstruct": []}
        with queue.reading(particles.snapshots):
            events["extent"].append(program.kernel("density_clear").launch(
                GROUP, GROUP, self._extent))
            if count:
                events["extent"].append(program.kernel("density_extent").launch(
                    _padded(count), GROUP, particles.current, particles.previous, mass, value,
                    labels, weights, np.int32(count), quantity, inverse_interval, self._extent))
                events["deposit"].append(program.kernel("density_deposit").launch(
                    _padded(count), GROUP, particles.current, particles.previous, mass, value,
                    support_array, labels, weights, np.int32(count), np.int32(adaptive),
                    np.float32(support), np.float32(pixels_per_unit),
                    np.float32(style.min_radius), np.float32(max_radius), quantity,
                    inverse_interval, *matrix, self._level_table, np.int32(len(self._levels)),
                    self._extent, self._counts))
            events["reconstruct"] = self._reconstruct(program, self._image.image)
        self._events = events
        self._image.finish(accumulation, events["reconstruct"][-1], deferred=deferred)

    def land(self, accumulation, *, wait: bool = True) -> bool:
        """Bring a deferred image into ``accumulation`` once its kernels have finished (or at
        once with ``wait``); returns whether it did."""
        return self._image.land(accumulation, wait=wait)

    def discard(self) -> None:
        """Forget an image not yet landed (the target is being redrawn or resized)."""
        self._image.discard()

    def _reconstruct(self, program, image) -> list:
        """Launch the upsampling from the top level to the image; the events, in order."""
        kernel = program.kernel("density_reconstruct")
        above = self._levels[1][2] if len(self._levels) > 1 else 0  # floats start at level 1
        events = []
        for level in range(len(self._levels) - 1, -1, -1):
            width, height, first = self._levels[level]
            if level + 1 < len(self._levels):
                coarse_width, coarse_height, coarse_first = self._levels[level + 1]
                coarse_first -= above
            else:
                coarse_width = coarse_height = coarse_first = 0
            output, output_first, channels = ((image, 0, 4) if level == 0
                                              else (self._floats, first - above, 2))
            events.append(kernel.launch(
                _padded(width * height), GROUP, self._counts, np.int32(first), np.int32(width),
                np.int32(height), self._floats, np.int32(coarse_first), np.int32(coarse_width),
                np.int32(coarse_height), self._extent, output, np.int32(output_first),
                np.int32(channels)))
        return events

    def stage_seconds(self) -> dict[str, float]:
        """Device seconds of the last frame's stages (waits for them): the kernels' events, and
        the GL copy of the image into the texture."""
        return self._image.stage_seconds(self._events)

    @property
    def path(self) -> str:
        """How the image reaches the texture (for the panel)."""
        return self._image.path(PATH)

    def _queue(self, context):
        if context not in self._queues:
            self._queues[context] = context.another_queue()
        return self._queues[context]

    def _allocate(self, queue, size) -> None:
        if not self._image.allocate(queue, size):
            return
        self._levels = pyramid(*size)
        last_width, last_height, last_first = self._levels[-1]
        texels = last_first + last_width * last_height
        above = texels - size[0] * size[1]
        self._level_table = queue.upload(np.asarray(self._levels, np.int32).reshape(-1))
        self._counts = queue.zeros((2 * texels,), np.uint64)
        self._floats = queue.empty((max(2 * above, 2),), np.float32)
        self._extent = queue.zeros((2,), np.uint32)

    def _input(self, queue, name: str, host, key):
        """``host`` on the device, uploaded again only when ``key`` (or the queue) changed; the
        host array is held, so an identity in ``key`` stays its own."""
        if host is None:
            raise ValueError(f"the density splat needs the scene's {name}s")
        held = self._inputs.get(name)
        if held is None or held[1] != (queue, key):
            data = np.ascontiguousarray(host, dtype=np.int32 if name == "population"
                                        else np.float32).reshape(-1)
            array = queue.upload(data if len(data) else np.zeros(1, data.dtype))
            held = self._inputs[name] = (host, (queue, key), array)
        return held[2]

    def _equal_masses(self, count: int) -> np.ndarray:
        """Masses 1 / count each (the total 1), as ``ParticleScene.set_masses(None)`` gives."""
        if self._equal is None or len(self._equal) != max(count, 1):
            self._equal = np.full(max(count, 1), 1.0 / max(count, 1), np.float32)
        return self._equal

    def release(self) -> None:
        self._image.release()
        self._counts = self._floats = self._extent = self._level_table = None
        self._inputs, self._events, self._queues = {}, {}, {}


def _labels(scene: ParticleScene, count: int) -> np.ndarray:
    labels = scene.population
    if labels is None or len(labels) != count:
        labels = np.zeros(count, np.int32)
    return labels


def _padded(count: int) -> int:
    return max(-(-count // GROUP) * GROUP, GROUP)
