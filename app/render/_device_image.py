"""A float image that kernels write on the compute device and the renderer's accumulation texture
then holds: through a GL pixel buffer registered with CUDA where interop works (no pixel visits
the host), else through a device array downloaded and uploaded (SYCL devices). Shared by the
compute splats of points (``_splat_pass``) and of density (``_density_splat_pass``)."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ...engine.compute import InteropUnavailableError, gl_buffer_view

CHANNELS = 4  # RGBA, the accumulation texture's layout


class DeviceImage:
    def __init__(self, ctx):
        self.ctx = ctx
        self.target = None         # (queue, size) the buffers are for
        self._pixels = None        # GL buffer the image goes through into the texture
        self._pixels_view = None   # its CUDA view, where interop works
        self._light = None         # the image on the device where the GL buffer cannot be mapped
        self.interop_unavailable: str | None = None
        self._copy_timer = None    # GL time query around the last copy (moderngl frees it with ctx)

    @property
    def values(self) -> int:
        width, height = self.target[1]
        return width * height * CHANNELS

    @property
    def on_device(self) -> bool:
        """Whether the image reaches the texture without visiting the host."""
        return self._pixels_view is not None

    def allocate(self, queue, size: tuple[int, int]) -> bool:
        """Buffers for an image of ``size`` on ``queue``; returns whether they are new."""
        if self.target == (queue, size):
            return False
        self.release()
        values = size[0] * size[1] * CHANNELS
        self._pixels = self.ctx.buffer(reserve=values * 4)
        try:
            self._pixels_view = gl_buffer_view(queue, self._pixels.glo, self._pixels.size)
        except InteropUnavailableError as error:
            self.interop_unavailable = str(error)
            self._light = queue.empty((values,), np.float32)
        self.target = (queue, size)
        return True

    @contextmanager
    def writing(self, texture):
        """The (width * height * 4,) float32 device array to queue the image's kernels into;
        on leaving, its contents go into ``texture`` (an RGBA32F texture of the same size)."""
        if self._copy_timer is None:
            self._copy_timer = self.ctx.query(time=True)
        if self._pixels_view is not None:
            with self._pixels_view.mapped((self.values,), np.float32) as light:
                yield light
            with self._copy_timer:
                texture.write(self._pixels)  # a GPU copy from the pixel buffer
            return
        yield self._light
        pixels = self._light.download().tobytes()
        with self._copy_timer:
            texture.write(pixels)

    def copy_seconds(self) -> float:
        """GL time of the last copy into the texture (waits for it)."""
        return 0.0 if self._copy_timer is None else self._copy_timer.elapsed * 1e-9

    def release(self) -> None:
        if self._pixels_view is not None:
            self._pixels_view.release()  # CUDA lets go before GL deletes the buffer
        if self._pixels is not None:
            self._pixels.release()
        self._light = self._pixels = self._pixels_view = None
        self.target = None
