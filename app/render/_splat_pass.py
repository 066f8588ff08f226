"""The particle pass as a compute splat (``kernels/splat.cl``): the same Gaussian sprites as
:class:`ParticlePass`, added with integer atomics on the compute device that already holds the
positions, then written into the renderer's float accumulation texture. No point is rasterised
and, on CUDA, no pixel visits the host: the resolved light reaches the texture through a GL
pixel buffer registered with CUDA (:class:`DeviceImage`). Elsewhere (SYCL devices) the light is
downloaded and uploaded, which is what the tests compare against the GL point path.

The kernels run on a queue of their own beside the simulation's (``Context.another_queue``), so a
frame does not wait behind queued steps; they start after the snapshot copies they read. A
deferred draw leaves the light on the device until ``land`` finds its kernels finished: GL then
never queues work that waits on the GPU for a simulation step (the live path).

Particles are drawn in the scene's locality order where it has one (``DeviceParticles.order``:
the tree solvers' Morton order), so that a work-group's sprites cover few pixels and add into a
tile in local memory before the image (a window of at most ``TILE_PIXELS`` pixels a
work-group; ADR 0170). Any order and either path give the same bits.
"""

from __future__ import annotations

import numpy as np

from ...engine.errors import InvalidInputError
from ._detail import DrawnStretch, weyl_order
from ._device_image import CHANNELS, DeviceImage
from ._scene import DeviceParticles, ParticleScene
from ._style import COLOUR_MODES, PointStyle

# Counts per unit of light, and the largest contribution in counts (the largest float32 below
# 2^32): see the fixed-point paragraph of splat.cl.
FIXED_ONE = 2.0 ** 20
FIXED_CAP = 2.0 ** 32 - 256
GROUP = 256
# Pixels of a work-group's tile: 16 KB of 32-bit counters for the four channels, which leaves a
# multiprocessor room for every work-group it can hold. It sizes the kernel's local array; a
# smaller tile (0: none) is a launch argument, so every tile size runs the same compiled code
# (one program: the same float contraction, so the same bits on every path).
TILE_PIXELS = 1024
_DEFINES = {"FIXED_ONE": f"{FIXED_ONE!r}f", "FIXED_CAP": f"{FIXED_CAP!r}f",
            "TILE_CAPACITY": TILE_PIXELS}


class SplatPass:
    """Splat a scene's :class:`DeviceParticles` into an RGBA32F accumulation texture."""

    def __init__(self, ctx, *, tile_pixels: int = TILE_PIXELS):
        self.ctx = ctx
        self.tile_pixels = tile_pixels
        self._queues: dict = {}    # source context -> the context the splat runs on
        self._accumulation = None  # integer counts, zero between frames
        # The sprites drawn and those summed in a work-group's tile, counted on the device over
        # every frame since the image was allocated.
        self._sprites = None
        self._unordered = None  # the locality order argument where the scene has none
        self._image = DeviceImage(ctx)  # the resolved light, and how it reaches the texture
        self._events: dict = {}    # stage -> the last frame's kernel events
        self._population = (None, None, None)  # (queue, (scene, version), device labels)
        self._palette = (None, None, None)     # (queue, bytes, device palette)
        self._kept = False  # whether the last resolve kept its counts for a next stretch

    @property
    def tile_pixels(self) -> int:
        """Pixels of a work-group's tile, 0 to ``TILE_PIXELS`` (0: none; for comparisons)."""
        return self._tile_pixels

    @tile_pixels.setter
    def tile_pixels(self, pixels: int) -> None:
        if not 0 <= pixels <= TILE_PIXELS:
            raise InvalidInputError(f"tile_pixels must be 0 to {TILE_PIXELS}, got {pixels}")
        self._tile_pixels = int(pixels)

    @property
    def interop_unavailable(self) -> str | None:
        return self._image.interop_unavailable

    def draw(self, scene: ParticleScene, view_projection: np.ndarray, style: PointStyle,
             accumulation, *, pixel_ratio: float = 1.0, deferred: bool = False,
             stretch: DrawnStretch | None = None) -> None:
        """Replace the contents of ``accumulation`` (an RGBA32F texture) with the light of
        ``scene``'s particles (``scene.device`` must be set); ``deferred``: once ``land`` finds
        the light ready, where it stays on the device. With ``stretch`` only the particles at
        entries ``stretch.start`` to ``stretch.stop`` of the level-of-detail order (made on the
        device: :func:`weyl_order`), added to the counts of the stretches before it; the counts
        are kept for the next stretch until the last."""
        style.validate()
        particles: DeviceParticles = scene.device
        queue = self._queue(particles.context)
        width, height = accumulation.size
        starts = stretch is None or stretch.start == 0
        if self._image.allocate(queue, (width, height)) or (starts and self._kept):
            # new counts: a new size, or a new picture where the last kept its counts
            self._accumulation = queue.zeros((width * height * CHANNELS,), np.uint64)
            self._sprites = queue.zeros(2, np.uint64)
            self._unordered = queue.zeros(1, np.uint32)
        labels = self._labels(queue, scene)
        palette = self._palette_array(queue, style)
        program = queue.build(["view.cl", "splat.cl"], package=__package__, defines=_DEFINES)
        count = particles.current.shape[0]
        matrix = [np.float32(v) for v in np.asarray(view_projection, np.float32).reshape(-1)]
        values = width * height * CHANNELS
        order, ordering, first, keep = particles.order, int(particles.order is not None), 0, False
        step, offset = 1, 0
        if stretch is not None and not stretch.whole:
            ordering, first, (step, offset) = 2, stretch.start, weyl_order(count)
            count, keep = stretch.stop - stretch.start, stretch.stop < stretch.total
        with queue.reading(particles.snapshots):
            events = {"splat": [], "resolve": []}
            if count:
                events["splat"].append(program.kernel("splat_points").launch(
                    _padded(count), GROUP, particles.current, particles.previous, labels,
                    self._unordered if order is None else order, np.int32(ordering),
                    np.int32(count), np.uint32(first), np.uint32(step), np.uint32(offset),
                    np.uint32(max(particles.current.shape[0], 1)), palette, np.int32(COLOUR_MODES.index(style.colour_mode)),
                    np.float32(scene.speed_scale), np.float32(style.point_size * pixel_ratio),
                    np.float32(style.intensity), *matrix, np.int32(width), np.int32(height),
                    np.int32(self.tile_pixels), self._accumulation, self._sprites))
            resolved = program.kernel("splat_resolve").launch(
                _padded(values), GROUP, self._accumulation, np.int32(values), self._image.image,
                np.int32(keep))
            events["resolve"].append(resolved)
        self._events = events
        self._kept = keep
        self._image.finish(accumulation, resolved, deferred=deferred)

    def land(self, accumulation, *, wait: bool = True) -> bool:
        """Bring light not yet in ``accumulation`` there once its kernels have finished (or at
        once with ``wait``); returns whether it did (:meth:`DeviceImage.land`)."""
        return self._image.land(accumulation, wait=wait)

    def discard(self) -> None:
        """Forget light not yet landed (the target is being redrawn or resized)."""
        self._image.discard()

    def stage_seconds(self) -> dict[str, float]:
        """Device seconds of the last frame's kernels (waits for them): splat, resolve, and the
        copy into the texture."""
        return self._image.stage_seconds(self._events)

    def tile_stats(self) -> dict[str, int]:
        """Sprites drawn (some pixel in the image) and those summed in a work-group's tile,
        over the frames drawn since the image was (re)allocated (waits for them)."""
        sprites = np.zeros(2, np.uint64) if self._sprites is None else self._sprites.download()
        return {"sprites": int(sprites[0]), "tiled": int(sprites[1])}

    @property
    def path(self) -> str:
        """How the light reaches the texture (for the panel)."""
        return self._image.path("compute splat")

    def _queue(self, context):
        if context not in self._queues:
            self._queues[context] = context.another_queue()
        return self._queues[context]

    def _labels(self, queue, scene: ParticleScene):
        held_queue, key, labels = self._population
        wanted = (id(scene), scene.population_version, scene.count)
        if held_queue is not queue or key != wanted:
            host = scene.population
            if host is None or len(host) != scene.count:
                host = np.zeros(scene.count, np.int32)
            labels = queue.upload(np.asarray(host, np.int32).reshape(-1) if scene.count
                                  else np.zeros(1, np.int32))
            self._population = (queue, wanted, labels)
        return labels

    def _palette_array(self, queue, style: PointStyle):
        palette = style.palette().tobytes()
        held_queue, held, array = self._palette
        if held_queue is not queue or held != palette:
            array = queue.upload(np.frombuffer(palette, np.float32))
            self._palette = (queue, palette, array)
        return array

    def release(self) -> None:
        self._image.release()
        self._kept = False
        self._accumulation = self._sprites = self._unordered = None
        self._population = self._palette = (None, None, None)
        self._queues = {}


def _padded(count: int) -> int:
    return max(-(-count // GROUP) * GROUP, GROUP)
