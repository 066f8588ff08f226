"""Running fuzz cases of the command line, each in a child under a time and memory limit, for the
fuzz tests (test_cli_fuzz.py, test_snapshot_fuzz.py, test_recording_fuzz.py).

The children are forked from a fork server, never from pytest itself: by the time the fuzz runs,
earlier tests have started thread pools in the pytest process (Mesa's llvmpipe behind an EGL
context, the OpenCL CPU runtime's TBB workers), and a child forked from it inherits those pools
without their threads, so its first draw or kernel waits for ever. The server is a fresh
interpreter with the command line imported; each child takes the test's environment with it,
since the server's own was fixed when it started.

A case is ``(arguments, note)``: ``main(arguments)`` of the ``orrery`` command line (or of
another entry point given to :func:`run_cases`), and what the case holds, for the report. The
child exits with main's code, or :data:`TRACEBACK` after printing what main() let through; a
case fails on a traceback, a crash, a hang past :data:`CASE_SECONDS`, running out of
:data:`CASE_MEMORY` (an input Orrery should have refused by what it declares instead of
allocating for it: the child exits :data:`OUT_OF_MEMORY` when main() reports it) or an exit
code other than :data:`CLEAN_CODES`."""

from __future__ import annotations

import faulthandler
import io
import multiprocessing
import os
import resource
import signal
import sys
import threading
import time
import traceback
import warnings

_CONTEXT = multiprocessing.get_context("forkserver")
# Imported once in the server, so that a case starts in milliseconds, not the import's second.
_CONTEXT.set_forkserver_preload(["orrery.app.cli", "orrery.app.viewer"])

CASE_SECONDS = 30
CASE_MEMORY = 3 << 30  # bytes a case may add to the parent's address space
TRACEBACK = 99  # a child's exit code for an exception main() let through
OUT_OF_MEMORY = 98  # and for main() reporting that it ran out of memory
# Success, a failure mid-run (what was kept is kept), and a refusal.
CLEAN_CODES = (0, 1, 2)


def _child(main, arguments, folder, environment, sender, stop_after):
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(folder)
    # A case that hangs shows where: every thread's stack on stderr before the parent kills it.
    faulthandler.dump_traceback_later(CASE_SECONDS - 3, file=sys.__stderr__)
    if stop_after is not None:
        stop = threading.Timer(stop_after, os.kill, (os.getpid(), signal.SIGTERM))
        stop.daemon = True
        stop.start()
    warnings.resetwarnings()  # as a user's `orrery` runs: warnings are printed, not raised
    warnings.simplefilter("default")
    if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize"))
        resource.setrlimit(resource.RLIMIT_AS, (size + CASE_MEMORY, resource.RLIM_INFINITY))
    sys.stdout = sys.stderr = output = io.StringIO()
    try:
        code = main(arguments)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 2
    except BaseException:  # noqa: BLE001 - what the fuzz looks for
        sys.__stderr__.write(traceback.format_exc())
        os._exit(TRACEBACK)
    sender.send(output.getvalue())
    if ": error: out of memory" in output.getvalue():
        os._exit(OUT_OF_MEMORY)
    os._exit(code or 0)


def run_case(arguments, folder, main=None, refusal=None, stop_after=None) -> str | None:
    """Run one case in a child of the fork server; what went wrong, or None if it ended cleanly.
    ``refusal(output)``, if given, judges what a case refused with (exit code 2): what is wrong
    with it, or None. With ``stop_after``, the child is sent SIGTERM that many seconds after it
    starts (a server that would serve for ever), and ending by it (128 + SIGTERM) is clean."""
    if main is None:
        from orrery.app.cli import main
    receiver, sender = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_child, args=(main, arguments, str(folder), dict(os.environ),
                                                  sender, stop_after))
    child.start()
    sender.close()
    deadline = time.monotonic() + CASE_SECONDS
    output = None
    if receiver.poll(CASE_SECONDS):
        try:
            output = receiver.recv()
        except EOFError:  # the child ended without a word: its exit code says how
            pass
    receiver.close()
    child.join(max(1.0, deadline - time.monotonic()))
    if child.is_alive():
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        return "hang"
    if child.exitcode == TRACEBACK:
        return "traceback"
    if child.exitcode == OUT_OF_MEMORY:
        return "runaway memory"
    if child.exitcode < 0:
        return f"crash (signal {-child.exitcode})"
    stopped = () if stop_after is None else (128 + signal.SIGTERM,)
    if child.exitcode not in (*CLEAN_CODES, *stopped):
        return f"exit code {child.exitcode}"
    if child.exitcode == 2 and refusal is not None:
        return refusal(output)
    return None


def run_cases(cases, folder, main=None, refusal=None) -> list[str]:
    """Every case run; a line for each that failed."""
    failures = []
    for arguments, note in cases:
        failure = run_case(arguments, folder, main, refusal)
        if failure is not None:
            failures.append(f"{failure}: orrery {' '.join(arguments)}  [{note}]")
    return failures
