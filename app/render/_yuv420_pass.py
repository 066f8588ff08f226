"""Colour conversion on the GPU: the tone-mapped picture to a yuv420p frame (``yuv420.frag``),
read back through two pixel buffers in turn, so that one frame's bytes travel to the host while
the next is drawn.

Against reading RGB back and converting on the CPU (swscale), a frame moves half the bytes
(1.5 instead of 3 a pixel: 3.1 MB instead of 6.2 MB at 1080p), arrives with its rows in the
order the encoder wants (no flip copy on the host) and costs the encoders no conversion.
"""

from __future__ import annotations

import numpy as np

from . import _gl_calls
from ._shaders import program

# Frames in flight between the GPU and the host: one being drawn while one is read.
PIXEL_BUFFERS = 2


class Yuv420Pass:
    """Convert ``picture`` (an RGBA8 texture of ``size``) into yuv420p frames of
    ``encoded_size`` (even, at least ``size``; the margin is black).

    ``submit()`` converts the picture and starts its readback; ``collect()`` gives the oldest
    submitted frame as a (height * 3 / 2, width) uint8 array (``_video.yuv420_layout``), waiting
    for it if it is not there yet; ``pending`` says how many are in flight.
    """

    def __init__(self, ctx, picture, encoded_size: tuple[int, int]):
        width, height = (int(v) for v in encoded_size)
        if width % 2 or height % 2 or width < picture.size[0] or height < picture.size[1]:
            raise ValueError(f"encoded size {encoded_size} must be even and cover the picture's "
                             f"{picture.size}")
        self.ctx = ctx
        self.picture = picture
        self.shape = (height * 3 // 2, width)
        self.program = program(ctx, "fullscreen.vert", "yuv420.frag")
        self._triangle = ctx.vertex_array(self.program, [])
        self._target = ctx.texture((width, self.shape[0]), 1, dtype="f1")
        self._framebuffer = ctx.framebuffer(color_attachments=[self._target])
        self._buffers = [ctx.buffer(reserve=width * self.shape[0]) for _ in range(PIXEL_BUFFERS)]
        self._fences = [None] * PIXEL_BUFFERS  # each buffer's copy done: a GL fence
        self._next = 0      # the buffer the next submit reads into
        self.pending = 0

    def submit(self) -> None:
        if self.pending == PIXEL_BUFFERS:
            raise RuntimeError("collect a frame before submitting another")
        ctx = self.ctx
        self._framebuffer.use()
        self._framebuffer.viewport = (0, 0, *self._target.size)
        ctx.disable(ctx.BLEND | ctx.DEPTH_TEST)
        self.picture.use(location=0)
        self.program["picture"].value = 0
        self.program["size"].value = self.picture.size
        self.program["encoded"].value = (self.shape[1], self.shape[0] * 2 // 3)
        self._triangle.render(ctx.TRIANGLES, vertices=3)
        # into a pixel buffer: the call returns at once, the copy runs after the draw
        self._framebuffer.read_into(self._buffers[self._next], components=1, alignment=1)
        self._fences[self._next] = _gl_calls.fence(ctx)
        self._next = (self._next + 1) % PIXEL_BUFFERS
        self.pending += 1

    def collect(self) -> np.ndarray:
        if not self.pending:
            raise RuntimeError("no frame submitted")
        oldest = (self._next - self.pending) % PIXEL_BUFFERS
        self.pending -= 1
        # The wait for the GPU (the draw, behind whatever else it runs) and the copy are made
        # without the GIL, so the threads beside this one keep running meanwhile.
        _gl_calls.wait(self.ctx, self._fences[oldest])
        self._fences[oldest] = None
        return _gl_calls.read(self._buffers[oldest], np.empty(self.shape, np.uint8))

    def release(self) -> None:
        for marker in self._fences:  # a copy still running: let it end before its buffer goes
            if marker is not None:
                _gl_calls.wait(self.ctx, marker)
        for buffer in self._buffers:
            buffer.release()
        self._framebuffer.release()
        self._target.release()
        self._triangle.release()
