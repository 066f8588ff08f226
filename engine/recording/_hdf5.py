"""The few HDF5 calls h5py does not offer, and the translation of h5py's errors.

HDF5 rereads metadata whose checksum fails when a file is open for SWMR reading, in case a
live writer was half-way through writing it, sleeping twice as long before each retry: its
default of 100 attempts turns one damaged byte into an hour-long hang. h5py exposes no setter for
that count, so :func:`open_swmr` calls ``H5Pset_metadata_read_attempts`` from the very libhdf5
h5py is linked to (found among the process's loaded libraries and checked by version).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import os
import re
import sys

import h5py
from h5py import h5f, h5p

from .. import portable

# Cumulative sleep of HDF5's retries is about 2**attempts nanoseconds: 28 attempts ride out a
# live writer's torn write for about 0.3 s; a file nobody writes any more needs one.
LIVE_READ_ATTEMPTS = 28
STILL_READ_ATTEMPTS = 1

# What h5py raises for an HDF5 failure (RuntimeError for some iteration and cache errors).
H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)


_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_WRITE_ACCESS_FLAGS = 0x01 | 0x04  # superblock v2+ status flags: open for writing, SWMR writing


def marked_open_for_writing(path) -> bool:
    """Whether the superblock (at the start of the file) still says a writer has the file open:
    a writer that is alive, or one that stopped without closing."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(12)
    except OSError:
        return False
    return len(head) == 12 and head[:8] == _SIGNATURE and head[8] >= 2 \
        and bool(head[11] & _WRITE_ACCESS_FLAGS)


def error_text(error: BaseException) -> str:
    """One line for an h5py error: HDF5's summary, and the system's reason when a read or write
    failed (HDF5 puts that on later lines, among buffer addresses and offsets)."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    first = text.splitlines()[0]
    system = re.search(r"error message = '([^']*)'", text)
    if system:
        return f"{first.split(' (')[0]}: {system.group(1)}"
    return first[:300]


def open_swmr(path, *, attempts: int) -> h5py.File:
    """Open ``path`` read-only for SWMR reading, retrying a failed metadata read at most
    ``attempts`` times (unbounded only where libhdf5 cannot be found, see the module doc)."""
    fapl = h5p.create(h5p.FILE_ACCESS)
    setter = _metadata_read_attempts_setter()
    if setter is not None and setter(fapl.id, attempts) < 0:
        raise OSError("H5Pset_metadata_read_attempts failed")
    fid = h5f.open(os.fsencode(path), h5f.ACC_RDONLY | h5f.ACC_SWMR_READ, fapl=fapl)
    return h5py.File(fid)


@functools.lru_cache(maxsize=None)
def _metadata_read_attempts_setter():
    for candidate in _loaded_hdf5_libraries():
        try:
            library = ctypes.CDLL(candidate)
            setter = library.H5Pset_metadata_read_attempts
            version = (ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint())
            library.H5get_libversion(*(ctypes.byref(part) for part in version))
        except (OSError, AttributeError):
            continue
        if tuple(part.value for part in version) == h5py.version.hdf5_version_tuple[:3]:
            setter.argtypes = (ctypes.c_int64, ctypes.c_uint)
            setter.restype = ctypes.c_int
            return setter
    return None


def _loaded_hdf5_libraries() -> list[str]:
    """Paths of libhdf5 (not its high-level companion) this process has loaded, or ships with
    h5py's wheel."""
    found = [path for path in portable.loaded_libraries() if "/libhdf5" in path]
    package = os.path.dirname(h5py.__file__)
    for pattern in ("../h5py.libs/libhdf5*", ".dylibs/libhdf5*", "../h5py.libs/*hdf5*.dll"):
        found += glob.glob(os.path.join(package, pattern))
    if sys.platform == "win32":  # pragma: no cover
        found.append("hdf5.dll")
    names = [path for path in dict.fromkeys(found)
             if not os.path.basename(path).startswith("libhdf5_")]
    return names
