"""Every operating-system call Orrery makes that only some systems have, each with the fallback
used where it is missing, chosen once when this module is imported.

Linux gives Orrery positional reads into a buffer (``preadv``), open-file-description locks,
early write-back (``sync_file_range``), per-thread niceness, ``/proc`` (the loaded libraries, the
CPU's name, free memory) and headless OpenGL through EGL. macOS and Windows lack some of these;
the rest of Orrery calls the functions below and never asks which system it runs on.

``ORRERY_PORTABLE=1`` in the environment takes every fallback even where the native call exists,
so that the paths other systems take are tested here; :data:`CHOSEN` says which path each
feature took. What each fallback costs is in docs/platforms.md.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import shutil
import signal
import struct
import sys
import threading

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

FORCE_FALLBACKS = "ORRERY_PORTABLE"
_forced = os.environ.get(FORCE_FALLBACKS, "") not in ("", "0")


def _native(available: bool) -> bool:
    return available and not _forced


# -- positional reads -----------------------------------------------------------------------------

# A seek followed by a read is one positional read only while no other thread moves the offset
# between them.
_seek_and_read = threading.Lock()


_POSITIONAL_READS = _native(hasattr(os, "preadv"))


def read_into(fd: int, buffer: memoryview, offset: int) -> int:
    """Read into ``buffer`` the bytes of ``fd`` from byte ``offset`` on, as far as they go; return
    how many arrived (0 at the end of the file). ``preadv`` reads straight into the buffer with
    the GIL released; the fallback reads a copy under a lock that keeps this module's other
    readers from moving the offset."""
    if _POSITIONAL_READS:
        return os.preadv(fd, [buffer], offset)
    with _seek_and_read:
        os.lseek(fd, offset, os.SEEK_SET)
        data = os.read(fd, len(buffer))
    buffer[:len(data)] = data
    return len(data)


def read_at(fd: int, size: int, offset: int) -> bytes:
    """At most ``size`` bytes of ``fd`` from byte ``offset``, without moving a shared offset
    under another thread."""
    buffer = bytearray(size)
    got = read_into(fd, memoryview(buffer), offset)
    return bytes(buffer[:got])


# -- locks ----------------------------------------------------------------------------------------

# fcntl's and os's constants are looked up by name: a platform has only the ones it has.
_OFD = hasattr(fcntl, "F_OFD_SETLK")
_RECORD_LOCKS = ("F_OFD_SETLK", "F_OFD_GETLK") if _OFD else ("F_SETLK", "F_GETLK")
_LOCKS = _native(fcntl is not None)


def _flock_struct(kind: int, offset: int) -> bytes:
    # struct flock {short l_type; short l_whence; off_t l_start; off_t l_len; pid_t l_pid;}:
    # OFD locks need l_pid = 0.
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, offset, 1, 0)


def lock_byte(fd: int, offset: int) -> bool:
    """Take a write lock on byte ``offset`` of ``fd``, held until ``fd`` is closed; False if
    another holder has it. True also where there are no locks (no ``fcntl``, or a file system
    that refuses them): the caller then goes on unguarded."""
    if not _LOCKS:
        return True
    try:
        fcntl.fcntl(fd, getattr(fcntl, _RECORD_LOCKS[0]), _flock_struct(fcntl.F_WRLCK, offset))
    except OSError as error:
        return error.errno not in (errno.EAGAIN, errno.EACCES)
    return True


def byte_locked(path, offset: int) -> bool | None:
    """Whether another open file holds the write lock of :func:`lock_byte` on ``path``'s byte
    ``offset`` (False also where the file cannot be opened or its file system has no locks);
    None where there are no locks at all, so the caller must find out another way."""
    if not _LOCKS:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        answer = fcntl.fcntl(fd, getattr(fcntl, _RECORD_LOCKS[1]),
                             _flock_struct(fcntl.F_WRLCK, offset))
        return struct.unpack("hhqqi4x", answer)[0] != fcntl.F_UNLCK
    except OSError:
        return False
    finally:
        os.close(fd)


def lock_whole_file(fd: int, *, shared: bool) -> bool | None:
    """Take a ``flock`` on the whole file (the kind HDF5 takes): True when taken, False when
    another holder's lock is in the way, None where ``flock`` is missing or refused."""
    if not _LOCKS:
        return None
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True


def unlock_whole_file(fd: int) -> None:
    """Drop the ``flock`` :func:`lock_whole_file` took."""
    if _LOCKS:
        fcntl.flock(fd, fcntl.LOCK_UN)


# -- write permission -----------------------------------------------------------------------------

# A descriptor's own mode bits: a file's owner can change them while writing through a
# descriptor opened before (permissions are checked when a file is opened, not when written).
_FILE_MODES = _native(hasattr(os, "fchmod"))


def withhold_write_permission(fd: int) -> int | None:
    """Take the write bits off the open file ``fd`` (owned by this process's user), so that
    nobody but a privileged user can open it for writing, or truncating, any more while this
    descriptor and those opened before keep writing. Returns the mode to give back with
    :func:`restore_mode`, or None where modes cannot be set (another platform, a file system
    that refuses, another owner)."""
    if not _FILE_MODES:
        return None
    try:
        mode = os.fstat(fd).st_mode & 0o7777
        os.fchmod(fd, mode & ~0o222)
    except OSError:
        return None
    return mode


def give_owner_write_permission(path) -> bool:
    """Give the file at ``path`` its owner's write bit back, where this process's user owns it
    and it lacks the bit (a recording whose writer was killed while its write permission was
    withheld); whether it was given."""
    if not _FILE_MODES:
        return False
    try:
        status = os.stat(path)
        if status.st_uid != os.geteuid() or status.st_mode & 0o200:
            return False
        os.chmod(path, (status.st_mode & 0o7777) | 0o200)
    except OSError:
        return False
    return True


def restore_mode(fd: int, mode: int | None) -> None:
    """Give ``fd`` back the mode :func:`withhold_write_permission` returned (nothing for None)."""
    if mode is not None:
        try:
            os.fchmod(fd, mode)
        except OSError:
            pass  # the file is still whole; only its mode stays read-only


# -- write-back -----------------------------------------------------------------------------------

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


_SYNC_FILE_RANGE = _sync_file_range() if not _forced else None


def start_writeback(fd: int) -> bool:
    """Ask the OS to start writing every dirty page of the open file ``fd`` to the disk now,
    without waiting for the disk (Linux's ``sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)``;
    the GIL is released during the call).

    A recorder writes faster than Linux starts writing back on its own (it waits until a tenth
    of the memory is dirty, or 30 s): a minute of float16 frames of a million particles piles up
    gigabytes in the page cache, and the disk then takes that whole pile at once, at the close or
    under the next program's feet. Started as the frames arrive, the write-back runs beside the
    simulation at the disk's rate. It promises nothing about durability (that is ``fsync``'s
    job). False where the OS has no such call or the file system refused it: nothing is lost,
    the OS writes back when it chooses."""
    return _SYNC_FILE_RANGE is not None and _SYNC_FILE_RANGE(fd, 0, 0, _SYNC_FILE_RANGE_WRITE) == 0


# -- free space ----------------------------------------------------------------------------------

_FILE_SYSTEM_STATS = _native(hasattr(os, "fstatvfs"))


def free_bytes(fd: int, folder) -> int:
    """Bytes an unprivileged writer can still add to the file system holding the open file
    ``fd``: ``fstatvfs`` of the descriptor, else ``shutil.disk_usage`` of ``folder``, the file's
    folder (the file system its path names now)."""
    if not _FILE_SYSTEM_STATS:
        return shutil.disk_usage(folder).free
    stats = os.fstatvfs(fd)
    return stats.f_bavail * stats.f_frsize


# -- threads and cores ----------------------------------------------------------------------------

# Only Linux gives each thread its own niceness; elsewhere setpriority changes the whole process.
_THREAD_NICENESS = _native(sys.platform.startswith("linux") and hasattr(os, "setpriority"))


def lower_thread_priority(steps: int) -> None:
    """Make the calling thread ``steps`` nicer than it is (at most 19) where threads have a
    niceness of their own; elsewhere it keeps the process's priority."""
    if not _THREAD_NICENESS:
        return
    thread = threading.get_native_id()
    try:
        niceness = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, niceness + steps))
    except OSError:  # a sandbox may refuse it: the work is the same, only less polite
        pass


_AFFINITY = _native(hasattr(os, "sched_getaffinity"))


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one, else every
    core the OS counts)."""
    if _AFFINITY:
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


# -- what the process and the machine are (/proc) -------------------------------------------------

_PROC = _native(os.path.isdir("/proc/self"))


def _proc_lines(name: str):
    try:
        with open(f"/proc/{name}") as lines:
            return lines.read().splitlines()
    except OSError:
        return []


def loaded_libraries() -> list[str]:
    """Paths of the shared libraries mapped into this process (``/proc/self/maps``); empty
    where the OS does not list them, so callers keep other places to look."""
    if not _PROC:
        return []
    # address, permissions, offset, device, inode, path (absent for anonymous memory)
    fields = (line.split(maxsplit=5) for line in _proc_lines("self/maps"))
    return list(dict.fromkeys(parts[5] for parts in fields
                              if len(parts) == 6 and parts[5].startswith("/")))


def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo``), else what Python's platform module says."""
    if _PROC:
        for line in _proc_lines("cpuinfo"):
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _proc_kib(name: str, field: str) -> int | None:
    for line in _proc_lines(name):
        if line.startswith(field):
            try:
                return int(line.split()[1]) * 1024
            except (IndexError, ValueError):
                return None
    return None


def memory_limits() -> list[int]:
    """Bytes this process may still allocate, by each limit the OS states: the memory the
    system has free (``MemAvailable``), the address space left under ``ulimit -v`` and the
    cgroup's limit less its use. Empty where the OS states none of these."""
    if not _PROC:
        return []
    limits = []
    free = _proc_kib("meminfo", "MemAvailable:")
    if free is not None:
        limits.append(free)
    import resource  # POSIX: present wherever /proc is

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        limits.append(max(0, soft - (_proc_kib("self/status", "VmSize:") or 0)))
    try:
        with open("/sys/fs/cgroup/memory.max") as limit, \
                open("/sys/fs/cgroup/memory.current") as current:
            text = limit.read().strip()
            if text != "max":
                limits.append(max(0, int(text) - int(current.read().strip())))
    except (OSError, ValueError):
        pass
    return limits


# -- signals --------------------------------------------------------------------------------------

# Signals asking a command to end (kill, a closed terminal, Ctrl-\). Windows has only SIGTERM.
STOP_SIGNALS = (signal.SIGTERM,) + tuple(
    getattr(signal, name) for name in ("SIGHUP", "SIGQUIT") if _native(hasattr(signal, name)))
# A timer that interrupts the main thread (setitimer and SIGALRM; not on Windows).
ALARM = _native(hasattr(signal, "setitimer") and hasattr(signal, "SIGALRM"))


def set_alarm(seconds: float) -> None:
    """Deliver SIGALRM after ``seconds`` (0 cancels it); nothing where there is no such timer."""
    if ALARM:
        signal.setitimer(signal.ITIMER_REAL, seconds)


# -- OpenGL without a window ----------------------------------------------------------------------

# moderngl's standalone backend: EGL needs no display server (Linux's drivers and Mesa have it);
# None is the platform's own (CGL on macOS, WGL on Windows, GLX on Linux, which needs a display).
HEADLESS_GL_BACKEND = "egl" if _native(sys.platform.startswith("linux")) else None


def opengl_platform(*, display: bool) -> str | None:
    """What PyOpenGL (the panel's drawing) must use to talk to the same GL as pyglet's window:
    GLX on an X display, else EGL, on Linux; None elsewhere (PyOpenGL's own choice)."""
    if not _native(sys.platform.startswith("linux")):
        return None
    return "glx" if display else "egl"


# -- the choice -----------------------------------------------------------------------------------

CHOSEN = {
    "forced": str(_forced).lower(),
    "positional reads": "preadv" if _POSITIONAL_READS else "seek and read",
    "file locks": ("none" if not _LOCKS else "open file description" if _OFD
                   else "POSIX record"),
    "write-back": "sync_file_range" if _SYNC_FILE_RANGE is not None else "the OS's own",
    "free space": "fstatvfs" if _FILE_SYSTEM_STATS else "disk_usage",
    "write permission": "fchmod" if _FILE_MODES else "unchanged",
    "thread niceness": "per thread" if _THREAD_NICENESS else "unchanged",
    "usable cores": "affinity" if _AFFINITY else "cpu_count",
    "process information": "/proc" if _PROC else "none",
    "stop signals": " ".join(signal.Signals(number).name for number in STOP_SIGNALS),
    "alarm": "setitimer" if ALARM else "none",
    "headless OpenGL": HEADLESS_GL_BACKEND or "platform default",
}
