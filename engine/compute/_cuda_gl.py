"""CUDA-OpenGL interop: a GL buffer object registered with CUDA, so a snapshot's staging buffer
is copied into it device to device and a live frame never visits the host.

The runtime calls come from ``cuda.bindings.runtime`` (NVIDIA's cuda-python; CuPy 14 has no
graphics-interop functions). Per CUDA's rules: the GL context that owns the buffer must be
current on the calling thread; mapping orders earlier GL work before the CUDA copy and
unmapping orders the copy before later GL work; the mapped pointer may change on every map, so
it is looked up each time. The copy runs on a stream of its own that first waits (on the
device) for the snapshot's staging copy; its completion is registered with the snapshot so the
staging buffer is not rewritten under it. ``mapped`` instead lends the buffer to kernels of the
context it was made for, mapped and unmapped on that context's stream.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from .._optional import MissingPackageError, require
from ._types import InteropUnavailableError, Snapshot

_registered = 0  # GL buffers registered with CUDA and not yet released, in this process
_registered_lock = threading.Lock()


def registered_gl_buffers() -> int:
    """How many GL buffers are registered with CUDA now (a leak check for tests)."""
    return _registered


def gl_buffer_view(source, gl_buffer: int, nbytes: int) -> "CudaGLBuffer":
    """A device view of the GL buffer object named ``gl_buffer`` (``nbytes`` long) that
    snapshots from ``source``'s device can be written into, or that kernels of ``source`` (a
    :class:`Context`) can write through ``mapped``; raises :class:`InteropUnavailableError`
    saying why where that device or this machine cannot."""
    from ._cuda import CudaContext

    context = source if isinstance(source, CudaContext) else getattr(source, "context", None)
    if not isinstance(context, CudaContext):
        raise InteropUnavailableError("frames of this device come through the host "
                                      "(GL interop needs a CUDA device)")
    return CudaGLBuffer(context, gl_buffer, nbytes)


def _runtime():
    try:
        return require("cuda.bindings.runtime")
    except MissingPackageError as error:
        raise InteropUnavailableError(f"{error}, so GL buffers cannot be registered") from None


def _check(runtime, result, what: str):
    error, *values = result
    if error != runtime.cudaError_t.cudaSuccess:
        raise InteropUnavailableError(f"{what} failed: {error!r}")
    return values


class CudaGLBuffer:
    """A GL buffer registered with CUDA (write-discard: CUDA replaces its whole contents)."""

    def __init__(self, context, gl_buffer: int, nbytes: int):
        import cupy

        runtime = _runtime()
        self._cupy, self._runtime, self._context = cupy, runtime, context
        self.nbytes = int(nbytes)
        flags = int(runtime.cudaGraphicsRegisterFlags.cudaGraphicsRegisterFlagsWriteDiscard)
        with context.device:
            (self._resource,) = _check(runtime, runtime.cudaGraphicsGLRegisterBuffer(
                int(gl_buffer), flags), "registering the GL buffer with CUDA")
            self._stream = cupy.cuda.Stream(non_blocking=True)
        self._lock = threading.Lock()
        self._kernels_wrote = False  # whether ``mapped`` lent the buffer to the context's stream
        _count(+1)

    def write(self, snapshot) -> None:
        """Copy ``snapshot``'s device copy into the start of the buffer (queued; GL work issued
        after this call sees it)."""
        source = snapshot.device
        if source.nbytes > self.nbytes:
            raise InteropUnavailableError(f"a {source.nbytes}-byte frame does not fit a "
                                          f"{self.nbytes}-byte GL buffer")
        cupy, runtime, stream = self._cupy, self._runtime, self._stream
        with self._lock, self._context.device:
            if self._resource is None:
                raise InteropUnavailableError("the GL buffer view was released")
            stream.wait_event(snapshot.written)
            _check(runtime, runtime.cudaGraphicsMapResources(1, self._resource, stream.ptr),
                   "mapping the GL buffer")
            try:
                pointer, _size = _check(runtime, runtime.cudaGraphicsResourceGetMappedPointer(
                    self._resource), "looking up the mapped GL buffer")
                cupy.cuda.runtime.memcpyAsync(int(pointer), source.memory.data.ptr,
                                              source.nbytes,
                                              cupy.cuda.runtime.memcpyDeviceToDevice, stream.ptr)
                done = cupy.cuda.Event(disable_timing=True)
                done.record(stream)
            finally:
                _check(runtime, runtime.cudaGraphicsUnmapResources(1, self._resource, stream.ptr),
                       "unmapping the GL buffer")
        snapshot.add_reader(done)

    @contextmanager
    def mapped(self, shape, dtype):
        """The buffer as a :class:`DeviceArray` of ``shape`` and ``dtype`` for kernels queued on
        its context inside the block; they replace its whole contents, and GL work issued after
        the block sees them."""
        cupy, runtime = self._cupy, self._runtime
        from ._cuda import CudaArray

        stream = self._context.stream
        with self._lock, self._context.device:
            if self._resource is None:
                raise InteropUnavailableError("the GL buffer view was released")
            _check(runtime, runtime.cudaGraphicsMapResources(1, self._resource, stream.ptr),
                   "mapping the GL buffer")
            self._kernels_wrote = True
            try:
                pointer, size = _check(runtime, runtime.cudaGraphicsResourceGetMappedPointer(
                    self._resource), "looking up the mapped GL buffer")
                memory = cupy.cuda.MemoryPointer(
                    cupy.cuda.UnownedMemory(int(pointer), int(size), self), 0)
                array = cupy.ndarray(shape, dtype, memptr=memory)
                if array.nbytes > self.nbytes:
                    raise InteropUnavailableError(f"{array.nbytes} bytes do not fit a "
                                                  f"{self.nbytes}-byte GL buffer")
                yield CudaArray(self._context, array.shape, array.dtype, memory=array)
            finally:
                _check(runtime, runtime.cudaGraphicsUnmapResources(1, self._resource, stream.ptr),
                       "unmapping the GL buffer")

    def release(self) -> None:
        """Unregister the buffer (before GL deletes it); later calls do nothing."""
        with self._lock:
            resource, self._resource = self._resource, None
        if resource is not None:
            with self._context.device:
                self._stream.synchronize()
                if self._kernels_wrote:
                    self._context.stream.synchronize()  # kernels that wrote through ``mapped``
                _check(self._runtime, self._runtime.cudaGraphicsUnregisterResource(resource),
                       "unregistering the GL buffer")
            _count(-1)


def _count(change: int) -> None:
    global _registered
    with _registered_lock:
        _registered += change
