"""How particles are drawn: Gaussian point sprites added into the accumulation target, and the
bare-point baseline the benchmark compares against."""

from __future__ import annotations

import numpy as np

from ._camera import gl_bytes
from ._detail import DrawnStretch
from ._scene import ParticleScene
from ._shaders import program
from ._style import COLOUR_MODES, PointStyle


class ParticlePass:
    def __init__(self, ctx):
        self.ctx = ctx
        self.program = program(ctx, "particles.vert", "particles.frag")
        self._vertex_arrays: dict = {}
        self._order = (None, None, 0)  # (the host order, its GL index buffer, entries in it)

    def draw(self, scene: ParticleScene, view_projection: np.ndarray, style: PointStyle,
             *, pixel_ratio: float = 1.0, stretch: DrawnStretch | None = None,
             order: np.ndarray | None = None) -> None:
        """Add ``scene`` into the bound framebuffer (additive blending must be set): every
        particle, or with ``stretch`` those at ``order[stretch.start:stretch.stop]`` (``order``
        a permutation of the scene's particles, each entry uploaded once into an index
        buffer)."""
        if scene.count == 0:
            return
        style.validate()
        uniforms = self.program
        uniforms["view_projection"].write(gl_bytes(view_projection))
        uniforms["point_size"].value = style.point_size * pixel_ratio
        uniforms["intensity"].value = style.intensity
        uniforms["palette"].write(style.palette().tobytes())
        uniforms["colour_mode"].value = COLOUR_MODES.index(style.colour_mode)
        if "speed_scale" in uniforms:
            uniforms["speed_scale"].value = scene.speed_scale
        if stretch is None or stretch.whole:
            self._vertex_array(scene, None).render(self.ctx.POINTS, vertices=scene.count)
        elif stretch.stop > stretch.start:
            self._vertex_array(scene, self._index_buffer(order, stretch.stop)).render(
                self.ctx.POINTS, vertices=stretch.stop - stretch.start, first=stretch.start)

    def _index_buffer(self, order: np.ndarray, stop: int):
        """The GL index buffer of ``order``, holding at least its first ``stop`` entries."""
        held, buffer, uploaded = self._order
        if held is not order:
            if buffer is not None:
                buffer.release()
            buffer, uploaded = self.ctx.buffer(reserve=max(order.nbytes, 4)), 0
            self._vertex_arrays = {k: v for k, v in self._vertex_arrays.items() if not k[3]}
        if stop > uploaded:
            buffer.write(order[uploaded:stop], offset=uploaded * order.itemsize)
            uploaded = stop
        self._order = (order, buffer, uploaded)
        return buffer

    def _vertex_array(self, scene: ParticleScene, index_buffer):
        scene.fill_vertex_buffers()
        key = (id(scene), scene.layout_version, scene.parity, index_buffer is not None)
        if key not in self._vertex_arrays:
            self._vertex_arrays = {k: v for k, v in self._vertex_arrays.items()
                                   if k[:2] == key[:2]}
            content = [(scene.current, scene.position_format, "position"),
                       (scene.population_buffer, "f", "population")]
            if "previous" in self.program:
                content.append((scene.previous, scene.position_format, "previous"))
            self._vertex_arrays[key] = self.ctx.vertex_array(
                self.program, content, index_buffer=index_buffer, index_element_size=4)
        return self._vertex_arrays[key]


class BarePointPass:
    """Constant-colour square points: the least a point renderer can do with these buffers."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.program = program(ctx, "bare_points.vert", "bare_points.frag")
        self._vertex_arrays: dict = {}

    def draw(self, scene: ParticleScene, view_projection: np.ndarray, *, point_size: float) -> None:
        scene.fill_vertex_buffers()
        key = (id(scene), scene.layout_version, scene.parity)
        if key not in self._vertex_arrays:
            self._vertex_arrays = {key: self.ctx.vertex_array(
                self.program, [(scene.current, scene.position_format, "position")])}
        self.program["view_projection"].write(gl_bytes(view_projection))
        self.program["point_size"].value = point_size
        self._vertex_arrays[key].render(self.ctx.POINTS, vertices=scene.count)
