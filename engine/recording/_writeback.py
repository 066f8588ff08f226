"""Asking the operating system to start writing a file's cached pages to the disk now, without
waiting for the disk: Linux's ``sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)``.

A recorder writes faster than Linux starts writing back on its own (it waits until a tenth of
the memory is dirty, or 30 s): a minute of float16 frames of a million particles piles up
gigabytes in the page cache, and the disk then takes that whole pile at once, at the close (some
file systems flush a file when it is closed) or under the next program's feet. Started as the
frames arrive, the write-back runs beside the simulation at the disk's rate. It promises nothing
about durability (that is ``fsync``'s job): the pages may still be in flight when the call
returns. Elsewhere the call does nothing and the OS writes back when it chooses.
"""

from __future__ import annotations

import ctypes
import sys

# <linux/fs.h>: start write-out of the range's dirty pages not already under write-out.
_SYNC_FILE_RANGE_WRITE = 2


def _sync_file_range():
    if not sys.platform.startswith("linux"):
        return None
    # looked up by name: not every C library has it
    call = getattr(ctypes.CDLL(None, use_errno=True), "sync_file_range", None)
    if call is None:
        return None
    call.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    call.restype = ctypes.c_int
    return call


_CALL = _sync_file_range()


def start_writeback(fd: int) -> bool:
    """Start writing every dirty page of the open file ``fd`` to the disk (the GIL is released
    during the call, as for every ctypes call). False where the OS has no such call or the file
    system refused it: nothing is lost, the OS writes back later."""
    return _CALL is not None and _CALL(fd, 0, 0, _SYNC_FILE_RANGE_WRITE) == 0
