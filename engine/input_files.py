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
# long the process may go without reading or computing anything inside a read before it gives
# up and ends (STALL_VARIABLE overrides it): a read stalled on a network file system blocks in
# the kernel, where nothing can abandon it.
SLOW_READ_SECONDS = 10.0
STALL_SECONDS = 120.0
STALL_VARIABLE = "ORRERY_READ_STALL_SECONDS"
# How often the watcher looks whether the process has worked since it last looked, and the CPU
# time that counts as work (the watcher's own look takes about a thousandth of it).
PROGRESS_SECONDS = 1.0
WORK_CPU_SECONDS = 0.01


class _Watched(threading.local):
    active = False  # whether this thread's read is watched already (a read inside another)


_watched = _Watched()
_deadline = threading.Lock()  # held by the one read faulthandler's single timer watches


def stall_seconds() -> float:
    """How long a read may go without progress before Orrery gives up: STALL_VARIABLE if set,
    else STALL_SECONDS; :class:`InvalidInputError` if the variable is not a positive number."""
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
    a read never blocks without a word; once the process has neither read nor computed anything
    for :func:`stall_seconds`, it ends with exit code 1 and one line (:class:`_Deadline`). A
    block inside another on the same thread adds nothing."""
    if _watched.active:
        yield
        return
    deadline = _Deadline.start(stall_seconds(), path, what)
    done, started = threading.Event(), time.monotonic()

    def watch():
        progress, noticed = _Progress(), started
        while not done.wait(min(PROGRESS_SECONDS, SLOW_READ_SECONDS)):
            if deadline is not None and progress.made():
                deadline.extend()
            if time.monotonic() - noticed < SLOW_READ_SECONDS:
                continue
            noticed = time.monotonic()
            try:
                print(f"orrery: still reading {what} {path} after {noticed - started:.0f} s "
                      "(a slow or stalled file system?)", file=sys.stderr, flush=True)
            except (OSError, ValueError):  # stderr closed: nobody to tell
                pass

    _watched.active = True
    threading.Thread(target=watch, name="slow-read watcher", daemon=True).start()
    try:
        yield
    finally:
        done.set()
        _watched.active = False
        if deadline is not None:
            deadline.cancel()


class _Deadline:
    """Ends the process with exit code 1 and one line on stderr unless :meth:`extend` or
    :meth:`cancel` comes within ``seconds``. A read stalled in the kernel cannot be abandoned,
    and h5py holds the GIL while HDF5 waits in one, so no Python thread can act then:
    faulthandler's timer (a thread of C) ends the process, writing its dump into a pipe whose
    one reader, a shell, prints the line instead. One read at a time is watched (faulthandler
    has one timer); not on Windows (no shell)."""

    @classmethod
    def start(cls, seconds: float, path, what: str) -> _Deadline | None:
        """The deadline of this read, or None where another read holds faulthandler's timer
        or there is no shell."""
        if os.name != "posix" or not _deadline.acquire(blocking=False):
            return None
        try:
            return cls(seconds, f"orrery: gave up reading {what} {path}: nothing was read or "
                                f"computed for {seconds:g} s (a stalled file system?); "
                                f"{STALL_VARIABLE} sets how long to wait")
        except BaseException:
            _deadline.release()
            raise

    def __init__(self, seconds: float, message: str):
        self.seconds = seconds
        self._lock = threading.Lock()  # an extend never re-arms a cancelled timer
        read_end, self._write_end = os.pipe()
        try:
            self._shell = subprocess.Popen(
                ["/bin/sh", "-c", 'read -r dump && printf "%s\\n" "$1" >&2', "sh", message],
                stdin=read_end, stdout=subprocess.DEVNULL)
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)
        self.extend()

    def extend(self) -> None:
        """Start the wait afresh (the process made progress)."""
        with self._lock:
            if self._write_end >= 0:
                faulthandler.dump_traceback_later(self.seconds, exit=True, file=self._write_end)

    def cancel(self) -> None:
        with self._lock:
            faulthandler.cancel_dump_traceback_later()
            os.close(self._write_end)  # the shell reads no line and ends quietly
            self._write_end = -1
        self._shell.wait()
        _deadline.release()


class _Progress:
    """Whether the process has worked since the last look: used CPU time (any thread), or read
    bytes (Linux's /proc/self/io, less what reading that file itself counts). A read stalled on
    a file system does neither."""

    def __init__(self):
        self._own_bytes = 0
        self._last = self._look()

    def made(self) -> bool:
        now = self._look()
        worked = now[0] - self._last[0] > WORK_CPU_SECONDS or now[1] > self._last[1]
        self._last = now
        return worked

    def _look(self) -> tuple[float, int]:
        cpu = time.process_time()
        try:
            fd = os.open("/proc/self/io", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            try:
                text = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            return cpu, 0  # not Linux: CPU time alone tells work from a stall
        read = int(text.split(b"\n", 1)[0].split()[1]) - self._own_bytes  # "rchar: N"
        self._own_bytes += len(text)
        return cpu, read
