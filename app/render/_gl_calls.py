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

import numpy as np

# GL_COPY_WRITE_BUFFER: a binding point no draw call reads, so moderngl's bindings stay intact.
_COPY_WRITE_BUFFER = 0x8F37


@functools.cache
def _library():
    name = os.environ.get("ORRERY_LIBGL") or ctypes.util.find_library("GL") or "libGL.so.1"
    try:
        gl = ctypes.CDLL(name)
        finish, bind, sub_data, flush = (gl.glFinish, gl.glBindBuffer, gl.glBufferSubData,
                                         gl.glFlush)
    except (OSError, AttributeError):
        return None
    finish.restype = bind.restype = sub_data.restype = flush.restype = None
    bind.argtypes = (ctypes.c_uint, ctypes.c_uint)
    sub_data.argtypes = (ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_void_p)
    return finish, bind, sub_data, flush


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
