"""The MPI world a distributed run spans: rank, size, the rank's index on its node (which picks
its GPU), the few collectives Orrery uses, and ending every rank when one fails."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback

import numpy as np

from .._optional import MissingPackageError, require
from ..errors import OrreryError

# Environment variables MPI launchers set in the processes they start (MPICH/Hydra and Intel
# MPI, Open MPI, PMIx-based launchers such as srun).
_LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK",
                       "MPI_LOCALNRANKS")
# Exit code of a run ended because a rank failed.
FAILED = 2
# Seconds a failing rank waits between writing its error and aborting: the launcher forwards a
# rank's output from a pipe it reads on its own schedule, and an abort that reaches it first
# drops what is still in the pipe (seen in CI, two ranks under load: both reports lost).
ABORT_GRACE_SECONDS = 0.5
# A rank waiting in one collective for longer than this (or than STALL_FACTOR times its longest
# wait so far, if that is longer) takes another rank to have stopped (SIGSTOP, a hung device) or
# died without MPI noticing, and ends every rank (:func:`guard`). ORRERY_MPI_STALL_SECONDS
# changes it (the tests use a few seconds).
STALL_SECONDS = 120.0
STALL_FACTOR = 20.0


class DistributedError(OrreryError):
    """A distributed run cannot start or go on (no mpi4py, an unsupported solver, ...)."""


def launched_under_mpi() -> bool:
    """Whether an MPI launcher (mpirun, mpiexec, srun ...) started this process."""
    return any(name in os.environ for name in _LAUNCHER_VARIABLES)


class World:
    """``comm``: an mpi4py communicator (default: COMM_WORLD)."""

    def __init__(self, comm=None):
        MPI = _mpi()
        self.comm = comm if comm is not None else MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = node.Get_rank()
        node.Free()
        self.waiting_since: float | None = None  # when the collective now under way began
        self.longest_wait = 0.0
        self._depth = 0

    @contextlib.contextmanager
    def _collective(self):
        """Time a collective call (the outermost, when one calls another) for the watchdog."""
        self._depth += 1
        if self._depth == 1:
            self.waiting_since = time.monotonic()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.longest_wait = max(self.longest_wait, time.monotonic() - self.waiting_since)
                self.waiting_since = None

    def stall_limit(self) -> float:
        """Seconds one collective may wait before the run is taken to be stuck."""
        try:
            floor = float(os.environ.get("ORRERY_MPI_STALL_SECONDS", STALL_SECONDS))
        except ValueError:
            floor = STALL_SECONDS
        return max(floor, STALL_FACTOR * self.longest_wait)

    def allgather_arrays(self, array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every rank's ``array`` (same trailing shape and dtype) joined in rank order, and the
        row count each rank gave."""
        with self._collective():
            MPI = _mpi()
            array = np.ascontiguousarray(array)
            rows = np.array(self.comm.allgather(len(array)), dtype=np.int64)
            width = int(np.prod(array.shape[1:], dtype=np.int64))
            out = np.empty((int(rows.sum()), *array.shape[1:]), dtype=array.dtype)
            counts = rows * width
            displacements = np.concatenate([[0], np.cumsum(counts)[:-1]])
            self.comm.Allgatherv(array.reshape(-1), [out.reshape(-1), counts, displacements,
                                                     MPI._typedict[array.dtype.char]])
            return out, rows

    def exchange(self, array: np.ndarray, destination: np.ndarray) -> np.ndarray:
        """Send row i of ``array`` to rank ``destination[i]``; returns the rows this rank
        received, in sender order (within a sender, in the sender's order)."""
        with self._collective():
            MPI = _mpi()
            array = np.ascontiguousarray(array)
            order = np.argsort(destination, kind="stable")
            outgoing = np.ascontiguousarray(array[order])
            width = int(np.prod(array.shape[1:], dtype=np.int64))
            send_rows = np.bincount(destination, minlength=self.size).astype(np.int64)
            receive_rows = np.empty(self.size, dtype=np.int64)
            self.comm.Alltoall(send_rows, receive_rows)
            incoming = np.empty((int(receive_rows.sum()), *array.shape[1:]), dtype=array.dtype)
            kind = MPI._typedict[array.dtype.char]
            send, receive = send_rows * width, receive_rows * width
            self.comm.Alltoallv(
                [outgoing.reshape(-1), send, np.concatenate([[0], np.cumsum(send)[:-1]]), kind],
                [incoming.reshape(-1), receive, np.concatenate([[0], np.cumsum(receive)[:-1]]),
                 kind])
            return incoming

    def send_each(self, parts: list[np.ndarray]) -> list[np.ndarray]:
        """Send ``parts[r]`` to rank r (same trailing shape and dtype); returns what each rank
        sent this one, by rank."""
        with self._collective():
            destination = np.concatenate([np.full(len(p), r, np.int64)
                                          for r, p in enumerate(parts)])
            joined = np.concatenate(parts) if parts else np.empty(0)
            received = self.exchange(joined, destination)
            sizes = self.comm.alltoall([len(p) for p in parts])
            return np.split(received, np.cumsum(sizes)[:-1])

    def allreduce_min(self, value: np.ndarray) -> np.ndarray:
        return self._allreduce(value, _mpi().MIN)

    def allreduce_max(self, value: np.ndarray) -> np.ndarray:
        return self._allreduce(value, _mpi().MAX)

    def _allreduce(self, value: np.ndarray, op) -> np.ndarray:
        """``value`` reduced element-wise with ``op`` over every rank, on every rank."""
        with self._collective():
            out = np.empty_like(value)
            self.comm.Allreduce(np.ascontiguousarray(value), out, op=op)
            return out

    def abort(self, code: int = FAILED) -> None:
        self.comm.Abort(code)


def rank_device(world: World) -> str | None:
    """The compute device this rank uses: GPUs of its node in turn by the rank's index on the
    node (None when the node has none, so the solver's default applies)."""
    from ..compute import list_devices

    gpus = [info.spec for info in list_devices().devices if info.kind == "gpu"]
    return gpus[world.local_rank % len(gpus)] if gpus else None


def _mpi():
    try:
        return require("mpi4py.MPI")
    except MissingPackageError as error:
        raise DistributedError(f"this process was started by an MPI launcher, but {error}") from None


def world() -> World | None:
    """The MPI world when an MPI launcher started this process (even with one rank), else None."""
    return World() if launched_under_mpi() else None


def _watch(world: World, done: threading.Event) -> None:
    """End every rank when this one has waited in a collective past ``world.stall_limit()``:
    another rank stopped, or died where MPI did not notice."""
    while not done.wait(1.0):
        since = world.waiting_since
        if since is None:
            continue
        waited, limit = time.monotonic() - since, world.stall_limit()
        if waited > limit:
            sys.stderr.write(f"orrery (rank {world.rank} of {world.size}): error: waited "
                             f"{waited:.0f} s for the other ranks (the limit is {limit:.0f} s): "
                             "one of them stopped or died; ending every rank\n")
            sys.stderr.flush()
            time.sleep(ABORT_GRACE_SECONDS)
            world.abort(FAILED)


@contextlib.contextmanager
def guard(world: World):
    """Run a block on every rank; if it raises on one, print the error with the rank's number and
    end every rank (MPI_Abort), so the others never wait for it in a collective. A rank stuck in
    a collective past its limit (:meth:`World.stall_limit`) ends every rank too."""
    done = threading.Event()
    watchdog = threading.Thread(target=_watch, args=(world, done), name="orrery-mpi-watchdog",
                                daemon=True)
    watchdog.start()
    try:
        yield
    except BaseException as error:  # noqa: BLE001 - any failure must end the whole run
        # One write, the error's own words first: the launcher may stop forwarding a rank's
        # output as soon as the abort reaches it, and a traceback printed line by line was seen
        # cut after its header.
        where = f"orrery (rank {world.rank} of {world.size})"
        if isinstance(error, OrreryError):
            report = f"{where}: error: {error}\n"
        elif isinstance(error, KeyboardInterrupt):  # Ctrl-C, or a stop signal (a subclass)
            report = f"{where}: {'stopped by ' + str(error) if str(error) else 'interrupted'}\n"
        else:
            report = (f"{where} failed: {type(error).__name__}: {error}\n"
                      + "".join(traceback.format_exception(error)))
        sys.stderr.write(report)
        sys.stderr.flush()
        time.sleep(ABORT_GRACE_SECONDS)
        world.abort(FAILED)
    finally:
        done.set()
