"""Claiming a recording path for one writer: path checks, exclusive creation and a lock that
tells other writers (and readers) that a live Recorder owns the file.

The lock is an open-file-description (OFD) write lock on one byte far past any data, held on a
descriptor the Recorder keeps open until it closes; the kernel drops it when the process dies,
however it dies. OFD locks do not interact with the ``flock`` locks HDF5 takes itself (which a
SWMR writer gives up anyway), and unlike POSIX ``lockf`` locks they are not lost when the same
process closes another descriptor of the file. Where OFD locks do not exist (not Linux) a POSIX
lock stands in; on a file system that refuses locks, or without ``fcntl`` (Windows), the
Recorder writes unguarded, and without ``fcntl`` a reader takes a file whose HDF5 superblock is
still marked open for writing as live. ``engine.portable`` chooses among these.

Another program can still open the file for writing behind the lock's back (HDF5 itself empties
a file before it looks at locks). While the Recorder writes, the file's write permission is
withheld (its own descriptors, opened before, keep writing), so that an unprivileged program's
open for writing fails before anything is emptied; a shared ``flock`` makes HDF5 writers fail;
and the Recorder checks at every commit that the file is still the one it wrote, which is what
is left against a privileged user, whom no permission stops (ADRs 0200, 0203).
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import portable
from ..errors import RecordingError
from ._hdf5 import marked_open_for_writing

_LOCK_BYTE = 2**62
# HDF5's version 2 and 3 superblock: signature, versions, flags, base, extension, end-of-file
# and root addresses, checksum.
_FINGERPRINT_BYTES = 48
# os's constants are looked up by name here and below, since a platform has only the ones it
# has (O_CLOEXEC).


class WriterLock:
    """The claim on one recording path: ``fd`` holds the lock until :meth:`release`."""

    def __init__(self, path: Path, fd: int, created: bool):
        self.path, self.fd, self.created = path, fd, created
        self._mode: int | None = None  # the file's mode while its write permission is withheld

    def free_bytes(self) -> int:
        """Bytes the file's file system can still take (for an unprivileged writer)."""
        return portable.free_bytes(self.fd, self.path.parent)

    def keep_other_writers_out(self) -> None:
        """Hold a shared ``flock`` on the file, as an HDF5 reader does: another program opening
        it for writing through HDF5 then fails, where it would otherwise succeed (a SWMR writer
        gives up HDF5's own lock) and overwrite the recording. Call it once HDF5 has let go
        of its own exclusive lock (after SWMR writing starts). HDF5 truncates before it
        locks, so the file's write permission is also withheld until :meth:`release`: an
        unprivileged program cannot open it for writing at all, and what a privileged one
        does, :meth:`changed` tells the writer."""
        # without flock (another platform, or file system) the checks of changed() still hold
        portable.lock_whole_file(self.fd, shared=True)
        # HDF5's "w" opens with O_TRUNC: refused for want of permission, the file is kept
        self._mode = portable.withhold_write_permission(self.fd)

    def fingerprint(self) -> bytes:
        """The file's first bytes (HDF5's superblock), which its writer rewrites only when it
        flushes: compared by :meth:`changed` at the next flush."""
        return portable.read_at(self.fd, _FINGERPRINT_BYTES, 0)

    def changed(self, fingerprint: bytes) -> str | None:
        """Why the file is no longer what its writer left at its last flush (``fingerprint``):
        the path names another file or none, or another program emptied or rewrote it; None
        while it is unchanged."""
        try:
            if not os.path.samestat(os.fstat(self.fd), os.stat(self.path)):
                return "the path now names another file (it was replaced or moved)"
        except FileNotFoundError:
            return "it was removed"
        except OSError as error:
            return f"it cannot be looked up ({_reason(error)})"
        if self.fingerprint() != fingerprint:
            return "another program emptied or rewrote it"
        return None

    def release(self, *, remove: bool = False) -> None:
        """Drop the lock; with ``remove``, also delete the file if this claim created it (a
        recording that never started must not block the next attempt)."""
        if self.fd < 0:
            return
        portable.restore_mode(self.fd, self._mode)
        if remove and self.created:
            try:
                if os.path.samestat(os.fstat(self.fd), os.stat(self.path)):
                    os.unlink(self.path)
            except OSError:
                pass  # already gone or replaced by someone else: not ours to remove
        os.close(self.fd)
        self.fd = -1


def claim(path, *, overwrite: bool) -> WriterLock:
    """Check ``path`` and take it for writing, or raise :class:`RecordingError` saying why not.
    Creates the file (empty) and its folder. An existing file (``overwrite``) is emptied here,
    once the lock is held and no other program has it open through HDF5: HDF5's own create
    would empty it before finding out that it is in use."""
    path = _checked_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RecordingError(f"cannot record to {path}: cannot create its folder "
                             f"{path.parent} ({_reason(error)})") from error
    flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
    try:
        fd, created = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError:
        if path.is_symlink() and not path.exists():
            raise RecordingError(f"cannot record to {path}: it is a symbolic link to "
                                 f"{os.readlink(path)}, which does not exist") from None
        if not overwrite:
            raise RecordingError(f"{path} already exists; remove it or choose another "
                                 "name") from None
        fd, created = _open_to_overwrite(path, flags), False
    except OSError as error:
        raise RecordingError(f"cannot record to {path}: {_reason(error)}") from error
    lock = WriterLock(path, fd, created)
    # Without locks (some network file systems, other platforms) it records unguarded rather
    # than not at all.
    if not portable.lock_byte(fd, _LOCK_BYTE):
        lock.release()
        raise RecordingError(f"{path} is being recorded by another Recorder (in this or "
                             "another process); it was left untouched")
    if not created:
        _empty_unless_in_use(lock)
    return lock


def _empty_unless_in_use(lock: WriterLock) -> None:
    """Truncate the claimed file, unless another program holds it open through HDF5 (which
    keeps a ``flock`` on every file it has open, unless its file locking is turned off)."""
    try:
        # None: no flock here, so nobody can be told apart
        locked = portable.lock_whole_file(lock.fd, shared=False)
        if locked is False:
            raise in_use_error(lock.path)
        os.ftruncate(lock.fd, 0)
        if locked:
            portable.unlock_whole_file(lock.fd)  # HDF5 takes its own when it opens the file
    except OSError as error:
        lock.release()
        raise RecordingError(f"cannot overwrite {lock.path}: {_reason(error)}") from error
    except RecordingError:
        lock.release()
        raise


def in_use_error(path) -> RecordingError:
    """The error for a file another HDF5 user holds open (HDF5's ``flock`` says so)."""
    return RecordingError(f"{path} is open elsewhere, in this or another program (HDF5 holds a "
                          "lock on it); close it there or choose another name")


def writer_is_active(path) -> bool:
    """Whether a live Recorder holds ``path`` (False on a file system that refuses locks).
    Where there are no locks, a superblock still marked open for writing stands for the lock:
    it also marks a writer that was killed, whose file then reads as live."""
    locked = portable.byte_locked(path, _LOCK_BYTE)
    return marked_open_for_writing(path) if locked is None else locked


def _checked_path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise RecordingError(f"a recording path must be a string or a path, got {path!r:.80}")
    text = os.fspath(path)
    if isinstance(text, bytes) or not text.strip():
        raise RecordingError(f"a recording needs a file name, got {text!r}")
    if text.endswith(("/", os.sep)):  # Path() would drop the slash and make a file of the folder
        raise RecordingError(f"cannot record to {text}: it names a folder; name a file in it")
    path = Path(text)
    try:
        if path.is_dir():
            raise RecordingError(f"cannot record to {path}: it is a folder; name a file in it")
        for parent in path.parents:
            if parent.exists() and not parent.is_dir():
                raise RecordingError(f"cannot record to {path}: {parent} is a file, not a "
                                     "folder")
    except OSError as error:  # a name too long, a loop of links, ...
        raise RecordingError(f"cannot record to {path}: {_reason(error)}") from error
    return path


def _open_to_overwrite(path: Path, flags: int) -> int:
    """Open an existing file to overwrite it. One of the user's own that has no write permission
    for its owner gets it back first: a recording whose writer was killed keeps the read-only
    mode it was written under (ADR 0203), and overwriting was asked for."""
    try:
        try:
            return os.open(path, flags)
        except PermissionError:
            if not portable.give_owner_write_permission(path):
                raise
            return os.open(path, flags)
    except OSError as error:
        raise RecordingError(f"cannot record to {path}: {_reason(error)}") from error


def _reason(error: OSError) -> str:
    return error.strerror or str(error)
