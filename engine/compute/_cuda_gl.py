"""CUDA-OpenGL interop: a GL buffer object registered with CUDA, so a snapshot's staging buffer
is copied into it device to device and a live frame never visits the host.

The runtime calls come from ``cuda.bindings.runtime`` (NVIDIA's cuda-python; CuPy 14 has no
graphics-interop functions). Per CUDA's rules: the GL context that owns the buffer must be
current on the calling thread; mapping orders earlier GL work before the CUDA copy and
unmapping orders the copy before later GL work; the mapped pointer may change on every map, so
it is looked up each time. The copy runs on a stream of its own that first waits (on the
device) for the snapshot's staging copy; its completion is registered with the snapshot so the
staging buffer is not rewritten under it. ``copy`` instead copies a device array of the context
the view was made for into it, on that context's stream.
"""

from __future__ import annotations

import threading

from .._optional import MissingPackageError, require
from ._types import InteropUnavailableError, KernelEvent, Snapshot

_registered = 0  # GL buffers registered with CUDA and not yet released, in this process
_registered_lock = threading.Lock()


def registered_gl_buffers() -> int:
    """How many GL buffers are registered with CUDA now (a leak check for tests)."""
    return _registered


def gl_buffer_view(source, gl_buffer: int, nbytes: int) -> "CudaGLBuffer":
    """A device view of the GL buffer object named ``gl_buffer`` (``nbytes`` long) that
    snapshots from ``source``'s device can be written into, or that kernels of ``source`` (a
    :class:`Context`) can be copied into with ``copy``; raises :class:`InteropUnavailableError`
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
        self._copied = False  # whether ``copy`` wrote into it on the context's stream
        _count(+1)

    def write(self, snapshot) -> None:
        """Copy ``snapshot``'s device copy into the start of the buffer (queued; GL work issued
        after this call sees it)."""
        source = snapshot.device
        _start, done = self._copy_in(self._stream, source.memory.data.ptr, source.nbytes,
                                     after=snapshot.written)
        snapshot.add_reader(done)

    def copy(self, array) -> KernelEvent:
        """Copy ``array`` (of the context this view was made for) into the start of the buffer
        on that context's stream, after the kernels queued there; returns the copy's timed
        event. A DMA: where a long simulation kernel holds every multiprocessor a copy kernel
        waited behind it, and the GL work waiting on the copy (the viewer's frame) with it:
        up to 70 ms at 10M particles (H200)."""
        from ._cuda import CudaEvent

        self._copied = True
        return CudaEvent(*self._copy_in(self._context.stream, array.memory.data.ptr,
                                        array.nbytes))

    def _copy_in(self, stream, source: int, nbytes: int, *, after=None):
        """Queue on ``stream`` (after the event ``after``) a device-to-device copy of
        ``nbytes`` from the pointer ``source`` into the start of the buffer, mapped for just
        that copy; returns the copy's (start, end) events."""
        if nbytes > self.nbytes:
            raise InteropUnavailableError(f"{nbytes} bytes do not fit a {self.nbytes}-byte GL "
                                          "buffer")
        cupy, runtime = self._cupy, self._runtime
        with self._lock, self._context.device:
            if self._resource is None:
                raise InteropUnavailableError("the GL buffer view was released")
            if after is not None:
                stream.wait_event(after)
            _check(runtime, runtime.cudaGraphicsMapResources(1, self._resource, stream.ptr),
                   "mapping the GL buffer")
            try:
                pointer, _size = _check(runtime, runtime.cudaGraphicsResourceGetMappedPointer(
                    self._resource), "looking up the mapped GL buffer")
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                start.record(stream)
                cupy.cuda.runtime.memcpyAsync(int(pointer), source, nbytes,
                                              cupy.cuda.runtime.memcpyDeviceToDevice, stream.ptr)
                end.record(stream)
            finally:
                _check(runtime, runtime.cudaGraphicsUnmapResources(1, self._resource, stream.ptr),
                       "unmapping the GL buffer")
        return start, end

    def release(self) -> None:
        """Unregister the buffer (before GL deletes it); later calls do nothing."""
        with self._lock:
            resource, self._resource = self._resource, None
        if resource is not None:
            with self._context.device:
                self._stream.synchronize()
                if self._copied:
                    self._context.stream.synchronize()  # copies queued by ``copy``
                _check(self._runtime, self._runtime.cudaGraphicsUnregisterResource(resource),
                       "unregistering the GL buffer")
            _count(-1)


def _count(change: int) -> None:
    global _registered
    with _registered_lock:
        _registered += change
