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


@contextlib.contextmanager
def stop_on_signals():
    """Within this block :data:`STOP_SIGNALS` raise :class:`Stopped` in the main thread; the
    first one also ignores the rest until the block has closed its files. Outside the main
    thread (where Python cannot handle signals) it changes nothing."""
    def stop(signum, frame):
        for other in STOP_SIGNALS:
            signal.signal(other, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {}
    try:
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, stop)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


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
