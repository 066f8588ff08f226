"""Tone mapping: the accumulated light of the float target to the output framebuffer, with an
optional bloom (the bright part of the light, blurred at half size, added back before the
filmic curve)."""

from __future__ import annotations

from ._shaders import program
from ._style import ToneMap


class ToneMapPass:
    def __init__(self, ctx):
        self.ctx = ctx
        self.program = program(ctx, "fullscreen.vert", "tonemap.frag")
        self.blur = program(ctx, "fullscreen.vert", "bloom.frag")
        self._triangle = ctx.vertex_array(self.program, [])
        self._blur_triangle = ctx.vertex_array(self.blur, [])
        self._bloom_size = None
        self._bloom = []  # two half-size float textures and their framebuffers, ping-pong

    def draw(self, accumulation, tone: ToneMap, *, origin: tuple[int, int] = (0, 0)) -> None:
        """Cover the bound viewport, reading ``accumulation`` (same size as the viewport)."""
        tone.validate()
        output = self.ctx.fbo
        if tone.bloom > 0:
            self._blur_bright(accumulation, tone)
            output.use()
            self._bloom[1][0].use(location=1)
        accumulation.use(location=0)
        self.program["accumulation"].value = 0
        self.program["exposure"].value = tone.exposure
        self.program["gamma"].value = tone.gamma
        self.program["origin"].value = origin
        if "bloom" in self.program:
            self.program["bloom"].value = 1
            self.program["bloom_strength"].value = tone.bloom
        self._triangle.render(self.ctx.TRIANGLES, vertices=3)

    def _blur_bright(self, accumulation, tone: ToneMap) -> None:
        width, height = accumulation.size
        size = (max(width // 2, 1), max(height // 2, 1))
        if size != self._bloom_size:
            self.release()
            for _ in range(2):
                texture = self.ctx.texture(size, 4, dtype="f4")
                texture.repeat_x = texture.repeat_y = False
                self._bloom.append((texture, self.ctx.framebuffer(color_attachments=[texture])))
            self._bloom_size = size
        viewport = self.ctx.viewport
        blur = self.blur
        blur["threshold"].value = tone.bloom_threshold
        blur["exposure"].value = tone.exposure
        for index, (source, axis, first) in enumerate(
                ((accumulation, (1.0 / width, 0.0), 1), (self._bloom[0][0], (0.0, 1.0 / size[1]), 0))):
            target = self._bloom[index][1]
            target.use()
            target.viewport = (0, 0, *size)
            source.use(location=0)
            blur["source"].value = 0
            blur["direction"].value = axis
            blur["first_pass"].value = first
            self._blur_triangle.render(self.ctx.TRIANGLES, vertices=3)
        self.ctx.viewport = viewport

    def release(self) -> None:
        for texture, framebuffer in self._bloom:
            framebuffer.release()
            texture.release()
        self._bloom, self._bloom_size = [], None
