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

# GL_COPY_READ_BUFFER / GL_COPY_WRITE_BUFFER: binding points no draw call reads, so moderngl's
# bindings stay intact.
_COPY_READ_BUFFER = 0x8F36
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
        finish, bind, sub_data, flush, get_sub_data = (
            gl.glFinish, gl.glBindBuffer, gl.glBufferSubData, gl.glFlush, gl.glGetBufferSubData)
    except AttributeError:  # no library (None), or one without these functions
        return None
    finish.restype = bind.restype = sub_data.restype = flush.restype = None
    get_sub_data.restype = None
    bind.argtypes = (ctypes.c_uint, ctypes.c_uint)
    sub_data.argtypes = get_sub_data.argtypes = (ctypes.c_uint, ctypes.c_ssize_t,
                                                 ctypes.c_ssize_t, ctypes.c_void_p)
    return finish, bind, sub_data, flush, get_sub_data


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
        self._fences.append(fence(self.ctx))
        while len(self._fences) > self.depth - 1:
            wait(self.ctx, self._fences.popleft())

    def drain(self) -> None:
        while self._fences:
            wait(self.ctx, self._fences.popleft())
        finish(self.ctx)


def fence(ctx):
    """A GL fence after every command issued so far, which are handed to the GPU (flushed) so it
    may start them while this thread does other work; None where fences cannot be called."""
    calls = _sync_calls()
    if calls is None:
        return None
    marker = calls[0](_SYNC_GPU_COMMANDS_COMPLETE, 0)
    flush(ctx)
    return marker


def wait(ctx, marker) -> None:
    """Wait, without the GIL, until the GPU has passed ``marker`` (from :func:`fence`); with no
    marker (no fences here), until it has done every command (``finish``)."""
    if marker is None:
        finish(ctx)
        return
    _, client_wait, delete = _sync_calls()
    failed = client_wait(marker, _SYNC_FLUSH_COMMANDS_BIT, _FOREVER_NS) == _WAIT_FAILED
    delete(marker)
    if failed:
        raise RuntimeError("glClientWaitSync failed")


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
    _, bind, sub_data, _, _ = calls
    bind(_COPY_WRITE_BUFFER, buffer.glo)
    sub_data(_COPY_WRITE_BUFFER, 0, data.nbytes, data.ctypes.data)
    bind(_COPY_WRITE_BUFFER, 0)


def read(buffer, out: np.ndarray) -> np.ndarray:
    """``buffer``'s first ``out.nbytes`` bytes copied into ``out`` without the GIL (moderngl's
    ``Buffer.read`` holds it while the GPU finishes what the buffer waits for, stalling every
    other thread: the served run's WebSocket loop and solver among them)."""
    calls = _library()
    if calls is None or not out.flags.c_contiguous or out.nbytes > buffer.size:
        out.reshape(-1).view(np.uint8)[:] = np.frombuffer(buffer.read(out.nbytes), np.uint8)
        return out
    _, bind, _, _, get_sub_data = calls
    bind(_COPY_READ_BUFFER, buffer.glo)
    get_sub_data(_COPY_READ_BUFFER, 0, out.nbytes, out.ctypes.data)
    bind(_COPY_READ_BUFFER, 0)
    return out
