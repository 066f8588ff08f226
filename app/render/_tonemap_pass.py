"""Tone mapping: the accumulated light of the float target to the output framebuffer."""

from __future__ import annotations

from ._shaders import program
from ._style import ToneMap


class ToneMapPass:
    def __init__(self, ctx):
        self.ctx = ctx
        self.program = program(ctx, "fullscreen.vert", "tonemap.frag")
        self._triangle = ctx.vertex_array(self.program, [])

    def draw(self, accumulation, tone: ToneMap, *, origin: tuple[int, int] = (0, 0)) -> None:
        """Cover the bound viewport, reading ``accumulation`` (same size as the viewport)."""
        tone.validate()
        accumulation.use(location=0)
        self.program["accumulation"].value = 0
        self.program["exposure"].value = tone.exposure
        self.program["gamma"].value = tone.gamma
        self.program["origin"].value = origin
        self._triangle.render(self.ctx.TRIANGLES, vertices=3)
