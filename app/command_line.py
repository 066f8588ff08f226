"""Argument types and error reporting of Orrery's command lines (``orrery``, ``orrery-viewer``)
and its benchmarks, in one place.

Argument types: each refuses what cannot be meant (a negative count, NaN, a 0x0 window, a folder
where a file goes) with argparse's one-line usage error, before any work starts.

Errors: the one place a command turns an error into an exit code: Orrery's own errors
(:mod:`orrery.engine.errors`) and running out of memory are one line on stderr and exit code 2;
Ctrl-C, SIGTERM, SIGHUP and SIGQUIT end a command the same way, closing what it writes
(:func:`stop_on_signals`); anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
from pathlib import Path

from ..engine import portable
from ..engine.errors import InvalidInputError, OrreryError
from ..engine.options import Option

# -- argument types ------------------------------------------------------------------------------

# Larger than any display or GL framebuffer we know of (GL_MAX_TEXTURE_SIZE is 16384 on Mesa
# and NVIDIA; one RGBA32F accumulation target of 8192 x 8192 is already 1 GiB).
MAX_WINDOW_SIDE = 8192


def integer(*, minimum: int, maximum: int | None = None):
    """An integer >= ``minimum`` (and <= ``maximum``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:,}, got {value}")
        return value
    return parse


def number(*, above: float | None = None, at_least: float | None = None,
           at_most: float | None = None):
    """A finite number ``> above`` or ``>= at_least``, and ``<= at_most``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"must be > {above:g}, got {text}")
        if at_least is not None and not value >= at_least:
            raise argparse.ArgumentTypeError(f"must be >= {at_least:g}, got {text}")
        if at_most is not None and not value <= at_most:
            raise argparse.ArgumentTypeError(f"must be <= {at_most:g}, got {text}")
        return value
    return parse


def window_size(text: str) -> tuple[int, int]:
    """``WxH`` in pixels, each side 1 to :data:`MAX_WINDOW_SIDE`."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like 1280x720, got {text!r}") from None
    if not (1 <= width <= MAX_WINDOW_SIDE and 1 <= height <= MAX_WINDOW_SIDE):
        raise argparse.ArgumentTypeError(
            f"each side must be 1 to {MAX_WINDOW_SIDE} pixels, got {text!r}")
    return width, height


def output_file(text: str) -> str:
    """A file to write: not a folder or a device, in a folder that exists and can be written."""
    path = Path(text)
    try:
        if not text or path.is_dir() or text.endswith(("/", os.sep)):
            raise argparse.ArgumentTypeError(f"must name a file, not a folder: {text!r}")
        if path.exists() and not path.is_file():
            raise argparse.ArgumentTypeError(f"must name a regular file, not a device, FIFO or "
                                             f"socket: {text!r}")
        folder = path.parent
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK):
            raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} cannot be written")
    except OSError as error:  # a name too long, a loop of links, ...
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: "
                                         f"{error.strerror or error}") from None
    return text


def option_value(option: Option):
    """argparse's ``type`` for an options record (``engine/options.py``): the record's own
    conversion and checks of one value, so a bad value is a usage error with the rule and the
    message a call from Python gets."""
    def parse(text: str):
        try:
            return Option.coerce(option, text)
        except InvalidInputError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    parse.__name__ = option.type.__name__  # argparse names the type in its errors
    return parse


def add_option_flags(parser: argparse.ArgumentParser, options) -> None:
    """A flag for each options record (``--max-iterations`` for ``max_iterations``), its doc
    and default the help, its value checked by :func:`option_value`."""
    for option in options:
        flag = "--" + option.name.replace("_", "-")
        help_text = option.doc if option.default is None else \
            f"{option.doc} (default: {option.default})"
        if option.type is bool:
            parser.add_argument(flag, dest=option.name, default=option.default,
                                action=argparse.BooleanOptionalAction, help=help_text)
        else:
            metavar = "{" + ",".join(map(str, option.choices)) + "}" if option.choices else \
                option.name.upper()
            parser.add_argument(flag, dest=option.name, default=option.default,
                                type=option_value(option), metavar=metavar, help=help_text)


# Containers a movie can be written in (PyAV names the container by the extension).
VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv")


def video_file(text: str) -> str:
    """:func:`output_file` whose extension names a container for H.264 video."""
    text = output_file(text)
    if Path(text).suffix.lower() not in VIDEO_EXTENSIONS:
        raise argparse.ArgumentTypeError(f"must end in {', '.join(VIDEO_EXTENSIONS)} (the "
                                         f"container is named by it), got {text!r}")
    return text


# -- errors and stop signals ---------------------------------------------------------------------

# What a top-level ``except`` hands to :func:`report`.
REPORTED = (OrreryError, MemoryError, KeyboardInterrupt, BrokenPipeError)

# Signals asking a command to end (kill, a closed terminal, Ctrl-\): each ends it as Ctrl-C
# does, so every file being written is closed the same way. A platform has the signals and
# timers it has (Windows has SIGTERM only, and no SIGALRM): engine.portable says which.
STOP_SIGNALS = portable.STOP_SIGNALS


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
        portable.set_alarm(STOP_GRACE_SECONDS)

    def overdue(signum, frame):
        if _pending is not None:
            raise Stopped(_pending)

    previous = {}
    try:
        for signum in STOP_SIGNALS:
            previous[signum] = signal.signal(signum, stop)
        if portable.ALARM:
            previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, overdue)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        if portable.ALARM and signal.SIGALRM in previous:
            portable.set_alarm(0)
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
        portable.set_alarm(0)
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
