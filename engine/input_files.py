"""Reading the files a user hands Orrery: one place that refuses what is not a small regular
file before reading it (camera paths, caches), so a FIFO never blocks the reader, ``/dev/zero``
is never read without end, and a file too large for what it claims to be is refused by its size
instead of read whole; and, for recordings and snapshots, a notice that a read is still waiting
on a slow or stalled file system, and an end to one that stalls for good."""

from __future__ import annotations

import contextlib
import faulthandler
import math
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from .errors import InvalidInputError

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def not_a_regular_file(path) -> str | None:
    """What ``path`` is if it exists and is not a regular file ("a FIFO (named pipe)", ...),
    looked up without opening it (opening a FIFO blocks until a writer comes); else None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_small_text(path, *, what: str, limit: int) -> str:
    """The UTF-8 text of ``path`` if it is a regular file of at most ``limit`` bytes; else
    :class:`InvalidInputError` naming it as ``what`` (``"camera path"``, say). The file is
    opened without blocking and looked at before anything is read."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise InvalidInputError(f"{what} {path}: {error.strerror or error}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise InvalidInputError(f"{what} {path} is {kind}, not a file")
        data = bytearray()
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError as error:
        raise InvalidInputError(f"{what} {path}: {error.strerror or error}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InvalidInputError(f"{what} {path} is larger than {limit:,} bytes: not a {what}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInputError(f"{what} {path} is not UTF-8 text ({error.reason} at byte "
                                f"{error.start})") from None


# How long a read may wait before Orrery says so, and again each time as long passes; and how
# long before it gives up and ends the process (STALL_VARIABLE overrides it): a file on a
# stalled network file system blocks in the kernel, where nothing can abandon the read.
SLOW_READ_SECONDS = 10.0
STALL_SECONDS = 120.0
STALL_VARIABLE = "ORRERY_READ_STALL_SECONDS"


class _Watched(threading.local):
    active = False  # whether this thread's read is watched already (a read inside another)


_watched = _Watched()
_deadline = threading.Lock()  # held by the one read faulthandler's single timer watches


def stall_seconds() -> float:
    """How long a read may wait before Orrery gives up: STALL_VARIABLE if set, else
    STALL_SECONDS; :class:`InvalidInputError` if the variable is not a positive number."""
    text = os.environ.get(STALL_VARIABLE)
    if text is None:
        return STALL_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds < math.inf):
        raise InvalidInputError(f"{STALL_VARIABLE}={text!r}: expected a number of seconds above "
                                "0 (how long a read may wait before Orrery gives up)")
    return seconds


@contextlib.contextmanager
def reading(path, what: str):
    """Within this block, each :data:`SLOW_READ_SECONDS` that passes before it ends puts one
    line on stderr saying that reading ``what`` ``path`` is still waiting, and for how long, so
    a read never blocks without a word; after :func:`stall_seconds` the process ends with exit
    code 1 (:func:`_given_up_after`). A block inside another on the same thread adds none."""
    if _watched.active:
        yield
        return
    with _given_up_after(stall_seconds(), path, what), _noticed(path, what):
        yield


@contextlib.contextmanager
def _noticed(path, what: str):
    """One line on stderr each SLOW_READ_SECONDS until the block ends."""
    done, started = threading.Event(), time.monotonic()

    def watch():
        while not done.wait(SLOW_READ_SECONDS):
            try:
                print(f"orrery: still reading {what} {path} after "
                      f"{time.monotonic() - started:.0f} s (a slow or stalled file system?)",
                      file=sys.stderr, flush=True)
            except (OSError, ValueError):  # stderr closed: nobody to tell
                return

    _watched.active = True
    threading.Thread(target=watch, name="slow-read notice", daemon=True).start()
    try:
        yield
    finally:
        done.set()
        _watched.active = False


@contextlib.contextmanager
def _given_up_after(seconds: float, path, what: str):
    """End the process with exit code 1 and one line on stderr if the block lasts ``seconds``.
    A read stalled in the kernel cannot be abandoned, and h5py holds the GIL while HDF5 waits
    in one, so no Python thread can act then: faulthandler's timer (a thread of C) ends the
    process, writing its dump into a pipe whose one reader, a shell, prints the line instead.
    One read at a time is watched (faulthandler has one timer); not on Windows (no shell)."""
    if os.name != "posix" or not _deadline.acquire(blocking=False):
        yield
        return
    message = (f"orrery: gave up reading {what} {path} after {seconds:g} s: the file system "
               f"does not answer (a stalled network file system?); {STALL_VARIABLE} sets how "
               "long to wait")
    try:
        read_end, write_end = os.pipe()
        try:
            shell = subprocess.Popen(["/bin/sh", "-c", 'read -r dump && printf "%s\\n" "$1" >&2',
                                      "sh", message], stdin=read_end, stdout=subprocess.DEVNULL)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        faulthandler.dump_traceback_later(seconds, exit=True, file=write_end)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()
            os.close(write_end)  # the shell reads no line and ends quietly
            shell.wait()
    finally:
        _deadline.release()
