"""The particle pass as a splat on the host (``native/splat.cpp``): the compute splat's Gaussian
sprites and 64-bit fixed-point sums (``kernels/splat.cl``) computed by the CPU's threads with the
GIL released, the light then uploaded into the renderer's float accumulation texture. Where GL
draws on the CPU (Mesa's llvmpipe) a GL point costs more than the whole host splat does
(docs/adr/0160): the renderer picks this pass there for frames that came through the host.
"""

from __future__ import annotations

import time

import numpy as np

from ... import _native
from ._detail import DrawnStretch
from ._scene import HostParticles, ParticleScene
from ._splat_pass import FIXED_CAP, FIXED_ONE
from ._style import COLOUR_MODES, PointStyle


DEFAULT_THREADS = 1


class HostSplatPass:
    """Splat a scene's :class:`HostParticles` into an RGBA32F accumulation texture.

    threads : CPU threads of the splat (0: every hardware thread). Default 1: beside a live
        simulation on two cores one thread kept more frames and more steps than two (which
        wait for the solver's threads; docs/performance.md, Boids).
    """

    def __init__(self, ctx, *, threads: int = DEFAULT_THREADS):
        self.ctx = ctx
        self.threads = threads
        self._light: np.ndarray | None = None  # the last frame's light, reused
        self._sum: np.ndarray | None = None  # the light of the stretches drawn so far
        self._last: np.ndarray | None = None  # _light or _sum: what the last draw made
        self._labels = (None, None)  # ((scene, version, count), uint8 labels)
        self._seconds: dict[str, float] = {}  # the last frame's stages

    def draw(self, scene: ParticleScene, view_projection: np.ndarray, style: PointStyle,
             accumulation, *, pixel_ratio: float = 1.0, stretch: DrawnStretch | None = None,
             order: np.ndarray | None = None, upload: bool = True) -> None:
        """Replace the contents of ``accumulation`` (an RGBA32F texture) with the light of
        ``scene``'s particles (``scene.host`` must be set): every particle, or with ``stretch``
        those at ``order[stretch.start:stretch.stop]`` (``order`` a permutation of them) added
        to the light of the stretches before it (none where ``stretch.start`` is 0).
        ``upload`` False keeps the light in :attr:`light` alone (its size is the texture's)."""
        style.validate()
        particles: HostParticles = scene.host
        width, height = accumulation.size
        if self._light is None or self._light.shape[:2] != (height, width):
            self._light = np.empty((height, width, 4), np.float32)
            self._sum = None
        current, previous, labels = particles.current, particles.previous, \
            self._population(scene)
        if stretch is not None and not stretch.whole:
            # a gather of the stretch alone: the frame itself is never copied
            chosen = order[stretch.start:stretch.stop]
            current, previous, labels = current[chosen], previous[chosen], labels[chosen]
        start = time.perf_counter()
        _native.splat_points(
            np.ascontiguousarray(current, np.float32),
            np.ascontiguousarray(previous, np.float32), labels,
            style.palette(), COLOUR_MODES.index(style.colour_mode), scene.speed_scale,
            style.point_size * pixel_ratio, style.intensity,
            np.ascontiguousarray(view_projection, np.float32), FIXED_ONE, FIXED_CAP,
            self._light, self.threads)
        light = self._light
        if stretch is not None and stretch.start > 0 and self._sum is not None:
            self._sum += self._light
            light = self._sum
        elif stretch is not None and not stretch.whole:
            self._sum = self._light.copy()
        self._last = light
        splatted = time.perf_counter()
        if upload:
            accumulation.write(light)
        self._seconds = {"splat": splatted - start, "copy": time.perf_counter() - splatted}

    @property
    def light(self) -> np.ndarray | None:
        """The light of the last :meth:`draw` (every stretch drawn so far), (height, width, 4)
        float32, bottom row first; None before the first."""
        return self._last

    def stage_seconds(self) -> dict[str, float]:
        """Wall seconds of the last frame's stages: the splat, and handing its light to GL
        (``copy``; a software GL copies it at once)."""
        return dict(self._seconds)

    @property
    def path(self) -> str:
        """How the light is made (for the panel)."""
        threads = self.threads or _native.hardware_threads()
        return (f"host splat ({threads} thread{'s' if threads > 1 else ''}, "
                f"{_native.simd_level()['level']})")

    def _population(self, scene: ParticleScene) -> np.ndarray:
        key, labels = self._labels
        wanted = (id(scene), scene.population_version, scene.count)
        if key != wanted:
            host = scene.population
            if host is None or len(host) != scene.count:
                host = np.zeros(scene.count, np.uint8)
            labels = (np.asarray(host).astype(np.int64) & 15).astype(np.uint8)  # labels mod 16
            self._labels = (wanted, labels)
        return labels

    def release(self) -> None:
        self._light = self._sum = self._last = None
        self._labels = (None, None)
