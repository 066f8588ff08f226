"""CUDA snapshots that never stop the compute stream: a device-to-device copy into a staging
buffer on the compute stream, then an asynchronous download of that buffer into pinned host
memory on a separate copy stream.

Why each piece: the copy into a staging buffer is ordered on the compute stream, so it holds
exactly one point of the queue (the next kernels may overwrite the source at once); the
download runs on the copy engine while the compute stream goes on; pinned memory is what makes
that download asynchronous. Staging buffers are pooled and a buffer is written again only
once its snapshot has been dropped *and* (on the device, without the host waiting) every copy
that read it has finished: the downloads and any GL interop copy (``_cuda_gl``) register their
completion events as readers.

A snapshot taken with ``download=False`` (a live frame, which the viewer shows from the device)
moves only its sample (``sample_stride``: one strided 2-D copy of a few kilobytes) at once, and
the whole array when ``host()`` first asks. Downloading every frame whole cost a 10M-particle
run 3.2 GB/s of copies into fresh pinned buffers, and each ``cudaHostAlloc`` of 160 MB stopped
every thread's CUDA calls for up to 60 ms: the viewer's frames with them (H200). A device
snapshot (``sample=False``: a frame's locality order, read only by the splat) moves nothing.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from ._types import DeviceArray, Snapshot, sample_stride

# Staging buffers kept for reuse per context (a reader holding more frames than this gets
# buffers that are freed with their snapshots): four frames of positions and locality order.
POOLED_BUFFERS = 8


class _Staging:
    def __init__(self, array: DeviceArray):
        self.array = array
        self.readers: list = []   # events of copies that read ``array``


class CudaSnapshot(Snapshot):
    def __init__(self, pool: "StagingPool", staging: _Staging, written, sample):
        self.context = pool.context
        self.device = staging.array
        self.written = written    # recorded on the compute stream after the staging copy
        self._pool = pool
        self._staging = staging
        self._sample, self._sample_done = sample
        self._lock = threading.Lock()
        self._host: np.ndarray | None = None
        self._done = None  # the host copy's completion, once it has been started
        weakref.finalize(self, pool.release, staging)

    def download(self) -> None:
        """Start the host copy (on the copy stream) unless it has been started."""
        with self._lock:
            if self._done is None:
                self._host, self._done = self._pool.download(self._staging)

    def ready(self) -> bool:
        return self._done is not None and self._done.done

    def host(self) -> np.ndarray:
        self.download()
        self._done.synchronize()  # CuPy waits without the GIL
        self._host.flags.writeable = False
        return self._host

    def sample(self) -> np.ndarray | None:
        if self._sample_done is None or not self._sample_done.done:
            return None
        self._sample.flags.writeable = False
        return self._sample

    def add_reader(self, event) -> None:
        """Another copy reads the staging buffer until ``event`` (recorded after it)."""
        self._pool.add_reader(self._staging, event)


class StagingPool:
    """Staging buffers and the copy stream of one :class:`CudaContext`."""

    def __init__(self, context):
        import cupy

        self._cupy = cupy
        self.context = context
        self._lock = threading.Lock()
        self._free: list[_Staging] = []
        with context.device:
            self.copy_stream = cupy.cuda.Stream(non_blocking=True)

    def _take(self, shape, dtype) -> _Staging:
        with self._lock:
            for staging in self._free:
                if staging.array.shape == tuple(shape) and staging.array.dtype == np.dtype(dtype):
                    self._free.remove(staging)
                    readers, staging.readers = staging.readers, []
                    break
            else:
                return _Staging(self.context.empty(shape, dtype))
        with self.context.device:
            for event in readers:  # the device waits; the host goes on
                self.context.stream.wait_event(event)
        return staging

    def snapshot(self, shape, dtype, write, *, download=True, sample=True) -> CudaSnapshot:
        cupy, context = self._cupy, self.context
        staging = self._take(shape, dtype)
        write(staging.array)
        with context.device:
            written = cupy.cuda.Event(disable_timing=True)
            written.record(context.stream)
            self.copy_stream.wait_event(written)  # every later copy of it follows the write
        snapshot = CudaSnapshot(self, staging, written,
                                self._sample(staging) if sample else (None, None))
        if download:
            snapshot.download()
        return snapshot

    def _sample(self, staging: _Staging):
        """Every sample_stride-th row of the staging buffer into pinned memory (one 2-D copy)
        and the copy's completion event."""
        cupy, array = self._cupy, staging.array
        rows = array.shape[0]
        stride = sample_stride(rows)
        sample = _pinned((len(range(0, rows, stride)), *array.shape[1:]), array.dtype)
        row_bytes = array.nbytes // max(rows, 1)
        with self.context.device:
            if sample.size:
                cupy.cuda.runtime.memcpy2DAsync(
                    sample.ctypes.data, row_bytes, array.memory.data.ptr, stride * row_bytes,
                    row_bytes, sample.shape[0], cupy.cuda.runtime.memcpyDeviceToHost,
                    self.copy_stream.ptr)
            done = cupy.cuda.Event(disable_timing=True)
            done.record(self.copy_stream)
        self.add_reader(staging, done)
        return sample, done

    def download(self, staging: _Staging):
        """The staging buffer's host copy (pinned, in flight on the copy stream) and the copy's
        completion event."""
        cupy = self._cupy
        with self.context.device:
            host = _pinned(staging.array.shape, staging.array.dtype)
            staging.array.memory.get(stream=self.copy_stream, out=host, blocking=False)
            done = cupy.cuda.Event(disable_timing=True)
            done.record(self.copy_stream)
        self.add_reader(staging, done)
        return host, done

    def add_reader(self, staging: _Staging, event) -> None:
        with self._lock:
            staging.readers.append(event)

    def release(self, staging: _Staging) -> None:
        with self._lock:
            if len(self._free) < POOLED_BUFFERS:
                self._free.append(staging)
                return
            readers, staging.readers = staging.readers, []
        for event in readers:  # freed memory may be reused at once: let its readers finish
            event.synchronize()


def _pinned(shape, dtype) -> np.ndarray:
    # From CuPy's pinned-memory pool: the block returns to the pool when the array is freed,
    # so a frame's host copy is never reused while anyone holds it.
    import cupyx

    return cupyx.empty_pinned(shape, dtype)
