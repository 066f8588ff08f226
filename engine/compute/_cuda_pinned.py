"""Host-device copies of large arrays on the CUDA backend through reused pinned buffers.

A copy from pageable NumPy memory is staged by the driver through its own small pinned buffer,
one piece at a time. Here the array is cut into :data:`CHUNK`-byte pieces that a few threads copy
through :data:`SLOTS` pinned buffers of this context (allocated once, reused by every call): while
one thread's piece moves over PCIe another's is being copied into or out of its buffer, and the
copies between pageable and pinned memory (the slow part, a memcpy) run on several cores. The
NumPy copy releases the GIL; the CUDA runtime is thread-safe; every DMA goes on the context's one
stream, and an event per buffer says when its DMA has finished and it may be reused.

An upload returns once the caller's array has been copied into the pinned buffers (the caller may
then reuse its array); the last DMAs may still be in flight, ordered before later work on the
stream. A download returns once the data is in the caller's array.
"""

from __future__ import annotations

import os
import queue
from concurrent.futures import ThreadPoolExecutor

import numpy as np

CHUNK = 2 << 20
SLOTS = max(2, min(8, os.cpu_count() or 2))


def _cupy():
    import cupy
    return cupy


class PinnedStaging:
    def __init__(self, device, stream):
        self._device = device
        self._stream = stream
        self._free: queue.SimpleQueue | None = None
        self._pool: ThreadPoolExecutor | None = None

    def _start(self) -> None:
        import cupyx

        cupy = _cupy()
        self._free = queue.SimpleQueue()
        with self._device:
            for _ in range(SLOTS):
                buffer = cupyx.empty_pinned((CHUNK,), np.uint8)
                done = cupy.cuda.Event(block=False, disable_timing=True)
                self._free.put((buffer, done))
        self._pool = ThreadPoolExecutor(max_workers=SLOTS, thread_name_prefix="orrery-pinned")

    def _run(self, piece, count: int) -> None:
        if self._pool is None:
            self._start()
        for _ in self._pool.map(piece, range(0, count, CHUNK)):
            pass

    def upload(self, host: np.ndarray, device_pointer: int) -> None:
        """Copy the C-contiguous ``host`` to device memory at ``device_pointer``."""
        source = host.reshape(-1).view(np.uint8)
        runtime = _cupy().cuda.runtime

        def piece(begin: int) -> None:
            part = source[begin:begin + CHUNK]
            buffer, done = self._free.get()
            try:
                done.synchronize()  # this buffer's previous DMA has finished
                np.copyto(buffer[:part.size], part)
                with self._device:
                    runtime.memcpyAsync(device_pointer + begin, buffer.ctypes.data, part.size,
                                        runtime.memcpyHostToDevice, self._stream.ptr)
                    done.record(self._stream)
            finally:
                self._free.put((buffer, done))

        self._run(piece, source.size)

    def download(self, device_pointer: int, host: np.ndarray) -> None:
        """Fill the C-contiguous ``host`` from device memory at ``device_pointer`` (after all
        work queued on the stream)."""
        target = host.reshape(-1).view(np.uint8)
        runtime = _cupy().cuda.runtime

        def piece(begin: int) -> None:
            size = min(CHUNK, target.size - begin)
            buffer, done = self._free.get()
            try:
                with self._device:
                    runtime.memcpyAsync(buffer.ctypes.data, device_pointer + begin, size,
                                        runtime.memcpyDeviceToHost, self._stream.ptr)
                    done.record(self._stream)
                done.synchronize()
                np.copyto(target[begin:begin + size], buffer[:size])
            finally:
                self._free.put((buffer, done))

        self._run(piece, target.size)
