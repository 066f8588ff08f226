"""The renderer: particles into a floating-point accumulation target, then tone mapping into the
output framebuffer. Owns the accumulation target and follows the output's size."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...engine.compute import DeviceUnavailableError, KernelBuildError
from ...engine.errors import InvalidInputError
from ._context import is_software
from ._density_pass import DensityPass
from ._density_splat_pass import DensitySplatPass
from ._detail import DrawnStretch, LevelOfDetail
from ._host_splat_pass import DEFAULT_THREADS, HostSplatPass
from ._host_tone_map import HostToneMap
from ._particle_pass import ParticlePass
from ._scene import ParticleScene
from ._splat_pass import SplatPass
from ._style import DensityStyle, PointStyle, ToneMap
from ._tonemap_pass import ToneMapPass

# Accumulation formats. A half float holds integers exactly only up to 2048, so an additive
# half-float target stops counting where more than 2048 unit sprites overlap (measured in the
# tests); single float costs the same on llvmpipe and the H200 (docs/performance.md).
TARGET_FORMATS = {"rgba32f": "f4", "rgba16f": "f2"}
DEFAULT_TARGET_FORMAT = "rgba32f"

# How point sprites are drawn (shown in the viewer's panel beside the upload path).
GL_POINTS = "GL points"


class Renderer:
    """Draw a :class:`ParticleScene` with a :class:`PointStyle` (light of point sprites, tone
    mapped with a :class:`ToneMap`) or a :class:`DensityStyle` (a kernel-splatted density image
    through a colour map).

    Point sprites are splatted on the compute device (:class:`SplatPass`) where the scene holds
    the positions there (a live GPU run, or a scene given a ``compute`` context) and the target
    is RGBA32F; else, where GL draws on the CPU (llvmpipe) and the frame came through the host,
    splatted by the host's threads (:class:`HostSplatPass`, the same sprites and sums);
    otherwise, or with ``splat=False``, drawn as GL points (:class:`ParticlePass`).
    Density images likewise: a pyramid splat on the compute device (:class:`DensitySplatPass`),
    else GL point discs (:class:`DensityPass`). ``particle_path`` says which,
    ``splat_unavailable`` / ``density_splat_unavailable`` why a compute splat failed, if it did,
    ``host_splat_unavailable`` why the host splat is not used.

    Point sprites are drawn at a level of detail (``detail``, a :class:`LevelOfDetail`): with
    ``max_drawn`` a picture that changed draws a fair subsample of that many particles and each
    later :meth:`accumulate` of the same picture adds more until every particle is in
    (``refining`` says whether one would); the light drawn is scaled by ``light_scale`` where it
    is shown and read, so the total light stands for every particle.

    Parameters
    ----------
    ctx : moderngl.Context
    target_format : "rgba32f" (default) or "rgba16f"
    splat : allow the compute and host splats (default True)
    host_splat : None (default): where GL is software; True: for every host frame; False: never
    host_threads : the host splat's threads (0: every hardware thread; default 1)
    max_drawn : particles a changed picture draws (None, the default: every particle)
    """

    def __init__(self, ctx, *, target_format: str = DEFAULT_TARGET_FORMAT, splat: bool = True,
                 host_splat: bool | None = None, host_threads: int = DEFAULT_THREADS,
                 max_drawn: int | None = None):
        if target_format not in TARGET_FORMATS:
            raise InvalidInputError(
                f"target format must be one of {sorted(TARGET_FORMATS)}, got {target_format!r}")
        self.ctx = ctx
        self.target_format = target_format
        self.particles = ParticlePass(ctx)
        self.splat = SplatPass(ctx)
        self.splat_unavailable: str | None = None if splat else "turned off"
        self.host_splat = HostSplatPass(ctx, threads=host_threads)
        if not splat or host_splat is False:
            self.host_splat_unavailable: str | None = "turned off"
        elif host_splat is None and not is_software(ctx):
            self.host_splat_unavailable = "GL draws on a GPU"
        else:
            self.host_splat_unavailable = None
        self.particle_path = GL_POINTS
        self.density = DensityPass(ctx)
        self.density_splat = DensitySplatPass(ctx)
        self.density_splat_unavailable: str | None = self.splat_unavailable
        self.tone_map = ToneMapPass(ctx)
        self.host_tone_map = HostToneMap()
        # the last accumulation's light is the host splat's (on the host), and whether the
        # accumulation target holds it yet: it goes into GL only where a GL pass needs it
        self._host_light = self._host_light_uploaded = False
        self._picture = self._picture_fbo = None  # an RGBA8 texture of the host's picture
        self.detail = LevelOfDetail(max_drawn)
        self.light_scale = 1.0  # what the light in the target is multiplied by where shown
        self._style = None  # the style of the last accumulation: how to present it
        self.size = (0, 0)
        self.accumulation = None
        self._accumulation_fbo = None

    def resize(self, width: int, height: int) -> None:
        """Match the accumulation target to an output of ``width`` x ``height`` pixels."""
        size = (max(int(width), 1), max(int(height), 1))
        if size == self.size:
            return
        self.splat.discard()  # light of the old size
        self.density_splat.discard()
        if self._accumulation_fbo is not None:
            self._accumulation_fbo.release()
            self.accumulation.release()
        self.accumulation = self.ctx.texture(size, 4, dtype=TARGET_FORMATS[self.target_format])
        self._accumulation_fbo = self.ctx.framebuffer(color_attachments=[self.accumulation])
        self.size = size

    def begin_accumulation(self, *, clear: bool = True) -> None:
        """Bind and clear the accumulation target and set additive blending: what any pass that
        adds light needs (the UI may have changed GL state since the last frame). ``clear``
        False keeps the light there (a stretch adds to the ones before it)."""
        ctx = self.ctx
        self._accumulation_fbo.use()
        if clear:
            self._accumulation_fbo.clear(0.0, 0.0, 0.0, 0.0)
        ctx.disable(ctx.DEPTH_TEST | ctx.CULL_FACE)
        ctx.enable(ctx.BLEND | ctx.PROGRAM_POINT_SIZE)
        ctx.blend_func = ctx.ONE, ctx.ONE
        ctx.blend_equation = ctx.FUNC_ADD

    @property
    def refining(self) -> bool:
        """Whether another :meth:`accumulate` of the same picture would add particles."""
        return self.detail.refining

    def accumulate(self, scene: ParticleScene, view_projection: np.ndarray,
                   style: PointStyle | DensityStyle, *, pixel_ratio: float = 1.0,
                   deferred: bool = False, represents: int | None = None) -> None:
        """Clear the accumulation target and add the particles of this level of detail into
        it (a refining point-sprite draw of the same picture adds the next stretch to the
        light instead; one with nothing to add leaves it). ``deferred``: light
        splatted on a compute device reaches the target when :meth:`land` finds it ready (a
        live frame's splat waits on the device for the step that made the frame; GL work
        waiting behind it would cost the simulation its time), until then the target keeps the
        last light. ``represents``: the particles the scene's stand for where it holds a fair
        sample of a larger frame (its light is scaled up to theirs; default: the scene's own).
        """
        if isinstance(style, PointStyle):
            self._accumulate_points(scene, view_projection, style, pixel_ratio, deferred,
                                    represents)
            return
        self.detail.whole(scene.count, represents)
        self.light_scale = 1.0
        self._host_light = False
        self.splat.discard()  # deferred light must not land over this pass's
        if self._density_splat(scene, view_projection, style, deferred):
            self._style = style
            return
        self.density_splat.discard()
        self.begin_accumulation()
        self.density.draw(scene, view_projection, style,
                          pixels_per_unit=self._pixels_per_unit(view_projection))
        self.particle_path = GL_POINTS
        self.ctx.disable(self.ctx.BLEND)
        self._style = style

    def _accumulate_points(self, scene, view_projection, style, pixel_ratio, deferred,
                           represents) -> None:
        on_device = self._splat_possible(scene)
        picture = (id(scene), scene.sequence, scene.layout_version, self.size,
                   np.asarray(view_projection, np.float32).tobytes(), style.key(), pixel_ratio)
        stretch = self.detail.plan(picture, scene.count, represents=represents)
        self._style = style
        if stretch.start == stretch.stop and stretch.start > 0:
            return  # the same picture, every particle in its light already
        self.light_scale = stretch.light_scale
        self._host_light = False
        if on_device and self._splat(scene, view_projection, style, pixel_ratio, deferred,
                                     stretch):
            return
        # the host and GL passes read the order's entries from the host
        order = None if stretch.whole else self.detail.order(scene.count, stretch.stop)
        self.splat.discard()  # deferred light must not land over this pass's
        if self._host_splat(scene, view_projection, style, pixel_ratio, stretch, order):
            self.density_splat.discard()
            return
        self.density_splat.discard()
        self.begin_accumulation(clear=stretch.start == 0)
        self.particles.draw(scene, view_projection, style, pixel_ratio=pixel_ratio,
                            stretch=stretch, order=order)
        self.particle_path = GL_POINTS
        self.ctx.disable(self.ctx.BLEND)

    def land(self) -> bool:
        """Bring deferred light (or a deferred density image) into the accumulation target if
        it is ready; returns whether the target changed."""
        return self.accumulation is not None and (
            self.splat.land(self.accumulation, wait=False)
            or self.density_splat.land(self.accumulation, wait=False))

    def _pixels_per_unit(self, view_projection) -> float:
        """Pixels per world unit at clip w = 1: the projection's y scale (the view's rows are
        orthonormal) times half the target's height."""
        scale = float(np.linalg.norm(np.asarray(view_projection)[1, :3]))
        return scale * self.size[1] / 2.0

    def _density_splat(self, scene, view_projection, style, deferred) -> bool:
        if scene.device is None or scene.count == 0 or self.density_splat_unavailable is not None \
                or self.target_format != "rgba32f":
            return False
        support = self.density.prepare(scene, style)
        try:
            self.density_splat.draw(scene, view_projection, style, self.accumulation,
                                    support=support,
                                    pixels_per_unit=self._pixels_per_unit(view_projection),
                                    deferred=deferred)
        except (DeviceUnavailableError, KernelBuildError) as error:
            self.density_splat_unavailable = str(error)
            self.density_splat.release()
            return False
        self.particle_path = self.density_splat.path
        return True

    def _splat_possible(self, scene) -> bool:
        return scene.device is not None and self.splat_unavailable is None and \
            self.target_format == "rgba32f"

    def _splat(self, scene, view_projection, style, pixel_ratio, deferred,
                stretch: DrawnStretch) -> bool:
        try:
            self.splat.draw(scene, view_projection, style, self.accumulation,
                            pixel_ratio=pixel_ratio, deferred=deferred, stretch=stretch)
        except (DeviceUnavailableError, KernelBuildError) as error:
            self.splat_unavailable = str(error)
            self.splat.release()
            return False
        self.density_splat.discard()  # a deferred density image must not land over this light
        self.particle_path = self.splat.path
        return True

    def _host_splat(self, scene, view_projection, style, pixel_ratio,
                    stretch: DrawnStretch, order) -> bool:
        if scene.host is None or self.host_splat_unavailable is not None or \
                self.target_format != "rgba32f":
            return False
        self.host_splat.draw(scene, view_projection, style, self.accumulation,
                             pixel_ratio=pixel_ratio, stretch=stretch, order=order,
                             upload=False)
        self._host_light, self._host_light_uploaded = True, False
        self.particle_path = self.host_splat.path
        return True

    def host_picture(self, tone: ToneMap, *, yuv420: bool = False,
                     top_first: bool = True) -> np.ndarray | None:
        """The last accumulation's picture made on the host, (height, width, 4) uint8 RGBX, top
        row first (``top_first=False``: bottom row first, as GL holds it), what the GL tone-map
        pass draws to within one step of 255 a value, where its light is on the host (the host
        splat drew it) and ``tone`` has no bloom; else None: :meth:`present` it and read the
        output. ``yuv420``: the picture as a yuv420p frame instead (``HostToneMap.yuv420``; even
        sides)."""
        if not (self._host_light and tone.bloom == 0):
            return None
        tone = replace(tone, exposure=tone.exposure * self.light_scale)
        if yuv420:
            return self.host_tone_map.yuv420(self.host_splat.light, tone)
        return self.host_tone_map.apply(self.host_splat.light, tone, top_first=top_first)

    def present(self, output, tone: ToneMap) -> None:
        """Show the accumulation target in ``output`` (a framebuffer of the same size): tone
        mapped light, or the density image through its colour map. Light the host splat made
        is tone mapped on the host and copied in as 8-bit pixels (GL is software wherever the
        host splat draws, and there llvmpipe's tone-map pass of the uploaded float light cost
        more than the host's table and the copy: ADR 0342); bloom still needs GL's pass."""
        picture = self.host_picture(tone, top_first=False)
        if picture is not None:
            self._show_picture(output, picture)
            return
        self._upload_host_light()
        output.use()
        output.viewport = (0, 0, *self.size)
        self.ctx.disable(self.ctx.BLEND | self.ctx.DEPTH_TEST)
        if isinstance(self._style, DensityStyle):
            if self.density.density_range is None:
                self.density_splat.land(self.accumulation)  # the first image sets the range
            self.density.present(self.accumulation, self._style, self.size)
        else:
            self.tone_map.draw(self.accumulation,
                               replace(tone, exposure=tone.exposure * self.light_scale))

    def _show_picture(self, output, picture: np.ndarray) -> None:
        """Copy ``picture`` (RGBX, bottom row first, the renderer's size) into ``output``."""
        if self._picture is None or self._picture.size != self.size:
            self._release_picture()
            self._picture = self.ctx.texture(self.size, 4)
            self._picture_fbo = self.ctx.framebuffer(color_attachments=[self._picture])
        self._picture.write(picture)
        self.ctx.copy_framebuffer(output, self._picture_fbo)
        output.use()  # what draws next (the panel) draws over the picture, as after GL's pass

    def _release_picture(self) -> None:
        if self._picture is not None:
            self._picture_fbo.release()
            self._picture.release()
        self._picture = self._picture_fbo = None

    def render(self, scene: ParticleScene, view_projection: np.ndarray,
               style: PointStyle | DensityStyle,
               tone: ToneMap, output, *, pixel_ratio: float = 1.0,
               represents: int | None = None) -> None:
        """One frame: accumulate, then tone-map into ``output``."""
        self.resize(*output.size)
        self.accumulate(scene, view_projection, style, pixel_ratio=pixel_ratio,
                        represents=represents)
        self.present(output, tone)

    def read_accumulation(self) -> np.ndarray:
        """The accumulation target's light as a (height, width, 4) float32 array, bottom row
        first (deferred light included), times ``light_scale``."""
        self._upload_host_light()
        self.splat.land(self.accumulation)
        self.density_splat.land(self.accumulation)
        data = self._accumulation_fbo.read(components=4, dtype="f4")
        light = np.frombuffer(data, dtype=np.float32).reshape(self.size[1], self.size[0], 4)
        return light * np.float32(self.light_scale) if self.light_scale != 1.0 else light

    def current_light(self) -> np.ndarray:
        """The light in the accumulation target now, (height, width, 4) float32, bottom row
        first, not multiplied by ``light_scale`` and without waiting for deferred light: the host
        splat's own array where it drew the last accumulation (nothing read back), else the
        target read."""
        if self._host_light:
            return self.host_splat.light
        texture = self.accumulation
        return np.frombuffer(texture.read(), dtype=texture.dtype).reshape(
            texture.height, texture.width, texture.components)

    def _upload_host_light(self) -> None:
        """Put light the host splat kept on the host into the target."""
        if self._host_light and not self._host_light_uploaded:
            self.accumulation.write(self.host_splat.light)
            self._host_light_uploaded = True

    def release(self) -> None:
        self._release_picture()
        self.tone_map.release()
        self.splat.release()
        self.host_splat.release()
        self.density_splat.release()
        if self._accumulation_fbo is not None:
            self._accumulation_fbo.release()
            self.accumulation.release()
        self._accumulation_fbo = self.accumulation = None
        self.size = (0, 0)
