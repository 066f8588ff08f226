"""The one place the command lines turn an error into an exit code: Orrery's own errors
(:mod:`orrery.engine.errors`) and running out of memory are one line on stderr and exit code 2;
Ctrl-C, SIGTERM, SIGHUP and SIGQUIT end a command the same way, closing what it writes
(:func:`stop_on_signals`); anything else is a bug and keeps its traceback."""

from __future__ import annotations

import contextlib
import signal
import sys

from ...engine.errors import OrreryError

# What a top-level ``except`` hands to :func:`report`.
REPORTED = (OrreryError, MemoryError, KeyboardInterrupt, BrokenPipeError)

# Signals asking a command to end (kill, a closed terminal, Ctrl-\): each ends it as Ctrl-C
# does, so every file being written is closed the same way.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGQUIT")
                     if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """One of :data:`STOP_SIGNALS` arrived: a ``KeyboardInterrupt``, so whatever closes files
    cleanly on Ctrl-C closes them on these too."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)


# A loop that polls (stops_at_safe_points) has this long to reach raise_if_stopped() after a
# stop signal before it is interrupted wherever it is.
STOP_GRACE_SECONDS = 5.0
_deferring = 0
_pending: int | None = None


@contextlib.contextmanager
def stop_on_signals():
    """Within this block :data:`STOP_SIGNALS` raise :class:`Stopped` in the main thread (inside
    :func:`stops_at_safe_points`, at the loop's next :func:`raise_if_stopped`); the first one
    also ignores the rest until the block has closed its files. Outside the main thread (where
    Python cannot handle signals) it changes nothing."""
    global _pending

    def stop(signum, frame):
        global _pending
        for other in STOP_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        if not _deferring:
            raise Stopped(signum)
        _pending = signum
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, STOP_GRACE_SECONDS)

    def overdue(signum, frame):
        if _pending is not None:
            raise Stopped(_pending)

    previous = {}
    try:
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, stop)
        if hasattr(signal, "SIGALRM"):
            previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, overdue)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        if hasattr(signal, "setitimer") and signal.SIGALRM in previous:
            signal.setitimer(signal.ITIMER_REAL, 0)
        _pending = None
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def stops_at_safe_points():
    """Within this block a stop signal is noted, and raised by the next
    :func:`raise_if_stopped` (or after :data:`STOP_GRACE_SECONDS`), not wherever the main
    thread happens to be: a ``KeyboardInterrupt`` inside ``queue.put`` can leave the queue's
    lock held, and closing the recording behind it would then wait forever."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1


def raise_if_stopped() -> None:
    """Raise :class:`Stopped` if a stop signal arrived (a safe point of a polling loop)."""
    global _pending
    if _pending is not None:
        signum, _pending = _pending, None
        if hasattr(signal, "setitimer"):
            signal.setitimer(signal.ITIMER_REAL, 0)
        raise Stopped(signum)


def report(prog: str, error: BaseException) -> int:
    """Print ``error`` as one line after ``prog`` and return the exit code (128 + the signal's
    number for a stop signal, as a shell reports a command a signal ended)."""
    if isinstance(error, Stopped):
        _say(f"{prog}: stopped by {error}")
        return 128 + error.signum
    if isinstance(error, KeyboardInterrupt):
        _say(f"{prog}: interrupted")
        return 130
    if isinstance(error, BrokenPipeError):
        # the reader went away (`orrery info x.h5 | head`): stop quietly, as Unix tools do; point
        # stdout at nothing so the interpreter's final flush does not fail again
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    if isinstance(error, MemoryError):
        print(f"{prog}: error: out of memory ({error or 'no detail'})", file=sys.stderr)
    else:
        print(f"{prog}: error: {error}", file=sys.stderr)
    return 2


def _say(line: str) -> None:
    """``line`` on stderr, unless stderr is gone (the terminal closed: SIGHUP)."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass
