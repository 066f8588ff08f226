"""A float RGBA image that kernels write on the compute device and the renderer's accumulation
texture then holds (the density pyramid splat's, ``_density_splat_pass``). Where a GL pixel
buffer can be registered with CUDA, the finished image is copied into it on the device (a DMA,
``CudaGLBuffer.copy``) and from there into the texture on the GPU, no pixel visiting the host;
that copy may be deferred until the image's kernels have finished (``land``), so GL never
queues work that waits on the device for a simulation step (the live path). Elsewhere (SYCL
devices) the image is downloaded and uploaded."""

from __future__ import annotations

import numpy as np

from ...engine.compute import InteropUnavailableError, gl_buffer_view

CHANNELS = 4  # RGBA, the accumulation texture's layout


class DeviceImage:
    def __init__(self, ctx):
        self.ctx = ctx
        self.target = None         # (queue, size) the buffers are for
        self.image = None          # the device array kernels write the image into
        self._pixels = None        # GL buffer the image goes through into the texture
        self._pixels_view = None   # its CUDA view, where interop works
        self._unlanded = None      # the last event of an image not yet in the texture
        self._copy_event = None    # the last copy into the pixel buffer
        self._copy_timer = None    # GL time query around the last copy into the texture
        self.interop_unavailable: str | None = None

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
        self.image = queue.empty((values,), np.float32)
        self._pixels = self.ctx.buffer(reserve=values * 4)
        try:
            self._pixels_view = gl_buffer_view(queue, self._pixels.glo, self._pixels.size)
        except InteropUnavailableError as error:
            self.interop_unavailable = str(error)
        self.target = (queue, size)
        return True

    def finish(self, texture, last, *, deferred: bool = False) -> None:
        """The image's kernels are queued, ``last`` their last event: bring the image into
        ``texture`` (RGBA32F, the image's size), at once or, ``deferred``, when ``land`` finds
        it finished."""
        if self._copy_timer is None:
            self._copy_timer = self.ctx.query(time=True)
        if self._pixels_view is None:
            pixels = self.image.download().tobytes()
            with self._copy_timer:
                texture.write(pixels)
            return
        self._unlanded = last
        self.land(texture, wait=not deferred)

    def land(self, texture, *, wait: bool = True) -> bool:
        """Copy a finished image into ``texture`` (on the GPU, through the pixel buffer), or at
        once with ``wait``; returns whether it did. The pixel buffer is mapped only here."""
        if self._unlanded is None or not (wait or self._unlanded.finished()):
            return False
        self._copy_event = self._pixels_view.copy(self.image)
        with self._copy_timer:
            texture.write(self._pixels)  # a GPU copy from the pixel buffer
        self._unlanded = None
        return True

    def discard(self) -> None:
        """Forget an image not yet landed (the target is being redrawn or resized)."""
        self._unlanded = None

    def stage_seconds(self, events: dict) -> dict[str, float]:
        """Device seconds of a frame's stages (waits for them): ``events`` (stage -> the
        kernel events that made the image), and ``copy``, the image into the texture."""
        seconds = {stage: sum(event.seconds() for event in launched)
                   for stage, launched in events.items()}
        return {**seconds, "copy": self.copy_seconds()}

    def path(self, name: str) -> str:
        """``name`` and where the image is made and how it reaches the texture (the panel)."""
        if self.target is None:
            return name
        where = "device" if self.on_device else "through the host"
        return f"{name} ({self.target[0].info.spec}, {where})"

    def copy_seconds(self) -> float:
        """Device time of the last copy into the texture (waits for it): the copy into
        the pixel buffer, and the GL copy (a time query)."""
        seconds = 0.0 if self._copy_event is None else self._copy_event.seconds()
        return seconds + (0.0 if self._copy_timer is None else self._copy_timer.elapsed * 1e-9)

    def release(self) -> None:
        if self._pixels_view is not None:
            self._pixels_view.release()  # CUDA lets go before GL deletes the buffer
        if self._pixels is not None:
            self._pixels.release()
        self.image = self._pixels = self._pixels_view = None
        self._unlanded = self._copy_event = None
        self.target = None
