"""The GL calls of a frame that wait on the GPU or copy megabytes, made through ctypes so
they run without the GIL: moderngl holds the GIL through every call (``ctx.finish()`` and
``Buffer.write`` included), which would stall the solver thread for as long as the GPU works.

The functions come from the GL library the context was made with (``ORRERY_LIBGL``, else the
system's libGL); where it lacks them, moderngl's own calls are used.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections import deque

import numpy as np

# GL_COPY_WRITE_BUFFER: a binding point no draw call reads, so moderngl's bindings stay intact.
_COPY_WRITE_BUFFER = 0x8F37
_SYNC_GPU_COMMANDS_COMPLETE = 0x9117
_SYNC_FLUSH_COMMANDS_BIT = 0x1
_WAIT_FAILED = 0x911D
_FOREVER_NS = 0xFFFFFFFFFFFFFFFF


@functools.cache
def _gl():
    """The GL library, or None where it cannot be loaded."""
    name = os.environ.get("ORRERY_LIBGL") or ctypes.util.find_library("GL") or "libGL.so.1"
    try:
        return ctypes.CDLL(name)
    except OSError:
        return None


@functools.cache
def _library():
    try:
        gl = _gl()
        finish, bind, sub_data, flush = (gl.glFinish, gl.glBindBuffer, gl.glBufferSubData,
                                         gl.glFlush)
    except AttributeError:  # no library (None), or one without these functions
        return None
    finish.restype = bind.restype = sub_data.restype = flush.restype = None
    bind.argtypes = (ctypes.c_uint, ctypes.c_uint)
    sub_data.argtypes = (ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_void_p)
    return finish, bind, sub_data, flush


@functools.cache
def _sync_calls():
    try:
        gl = _gl()
        fence, wait, delete = gl.glFenceSync, gl.glClientWaitSync, gl.glDeleteSync
    except AttributeError:  # no library (None), or one without fences
        return None
    fence.restype, fence.argtypes = ctypes.c_void_p, (ctypes.c_uint, ctypes.c_uint)
    wait.restype, wait.argtypes = ctypes.c_uint, (ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint64)
    delete.restype, delete.argtypes = None, (ctypes.c_void_p,)
    return fence, wait, delete


class FramesInFlight:
    """Frames queued on the GPU, at most ``depth`` of them, as a window's swap chain holds them:
    ``submitted()`` after a frame's commands marks it (a GL fence) and waits, without the GIL,
    until the frame ``depth`` frames back is done; ``drain()`` waits for all of them. Where GL
    fences cannot be called, every frame is waited for (``finish``)."""

    def __init__(self, ctx, depth: int):
        if depth < 1:
            raise ValueError(f"frames in flight must be at least 1, got {depth}")
        self.ctx, self.depth = ctx, depth
        self._fences: deque = deque()

    def submitted(self) -> None:
        calls = _sync_calls()
        if calls is None:
            finish(self.ctx)
            return
        self._fences.append(calls[0](_SYNC_GPU_COMMANDS_COMPLETE, 0))
        flush(self.ctx)  # the GPU may start the frame while this thread waits or sleeps
        while len(self._fences) > self.depth - 1:
            self._wait(self._fences.popleft())

    def drain(self) -> None:
        while self._fences:
            self._wait(self._fences.popleft())
        finish(self.ctx)

    @staticmethod
    def _wait(fence) -> None:
        _, wait, delete = _sync_calls()
        if wait(fence, _SYNC_FLUSH_COMMANDS_BIT, _FOREVER_NS) == _WAIT_FAILED:
            delete(fence)
            raise RuntimeError("glClientWaitSync failed")
        delete(fence)


def flush(ctx) -> None:
    """Hand every GL command issued so far to the GPU (without waiting for it)."""
    calls = _library()
    if calls is not None:
        calls[3]()


def finish(ctx) -> None:
    """Wait until the GPU has done every GL command issued so far, without the GIL."""
    calls = _library()
    if calls is None:
        ctx.finish()
    else:
        calls[0]()


def write(buffer, data: np.ndarray) -> None:
    """``buffer.write(data)`` with the copy made without the GIL."""
    calls = _library()
    data = np.ascontiguousarray(data)
    if calls is None or data.nbytes > buffer.size:
        buffer.write(data)
        return
    _, bind, sub_data, _ = calls
    bind(_COPY_WRITE_BUFFER, buffer.glo)
    sub_data(_COPY_WRITE_BUFFER, 0, data.nbytes, data.ctypes.data)
    bind(_COPY_WRITE_BUFFER, 0)
