"""The one place the command lines turn an error into an exit code: Orrery's own errors
(:mod:`orrery.engine.errors`) and running out of memory are one line on stderr and exit code 2;
anything else is a bug and keeps its traceback."""

from __future__ import annotations

import sys

from ...engine.errors import OrreryError

# What a top-level ``except`` hands to :func:`report`.
REPORTED = (OrreryError, MemoryError, KeyboardInterrupt, BrokenPipeError)


def report(prog: str, error: BaseException) -> int:
    """Print ``error`` as one line after ``prog`` and return the exit code."""
    if isinstance(error, KeyboardInterrupt):
        print(f"{prog}: interrupted", file=sys.stderr)
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
