"""``orrery run`` and ``orrery serve`` under an MPI launcher: every rank must run the same command. Each rank's
command line is digested and the digests compared across the ranks before any work (and before
a rank whose command line argparse refused exits), so ranks started with different options end
together with one message from rank 0 instead of hanging in a collective or failing in one
("Message truncated"); then the command runs on every rank under the world's guard
(:func:`on_every_rank`)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable


# The commands whose ranks work together on one run.
DISTRIBUTED_COMMANDS = ("run", "serve")


def ranks_agree(argv: list[str], *, parsed: bool) -> bool:
    """Whether every rank of an MPI-launched ``orrery run`` or ``serve`` was given the same
    ``argv`` and parsed it (``parsed``); True without a launcher and for other commands. A
    disagreement is printed by rank 0 alone; every rank gets False."""
    if not argv or argv[0] not in DISTRIBUTED_COMMANDS:
        return True
    from ...engine.distributed import World, launched_under_mpi  # run imports it anyway

    if not launched_under_mpi():
        return True
    world = World()
    digest = hashlib.sha256("\0".join(argv).encode("utf-8", "surrogatepass")).hexdigest() \
        if parsed else None
    digests = world.comm.allgather(digest)
    if digests[0] is not None and all(each == digests[0] for each in digests):
        return True
    if world.rank == 0:
        unparsed = [rank for rank, each in enumerate(digests) if each is None]
        differing = [rank for rank, each in enumerate(digests)
                     if each is not None and each != digests[0]]
        said = []
        if unparsed:
            said.append(f"rank(s) {', '.join(map(str, unparsed))} could not parse their options")
        if differing:
            said.append(f"rank(s) {', '.join(map(str, differing))} were given other options "
                        "than rank 0")
        print(f"orrery {argv[0]}: error: every rank must run the same command: "
              f"{'; '.join(said)}", file=sys.stderr)
    return False


def on_every_rank(command: Callable[[argparse.Namespace, object], int],
                  args: argparse.Namespace) -> int:
    """``command(args, mpi)``: with ``mpi`` None on one process, else on every rank of the MPI
    world (``engine.distributed.World``) under its guard, so that one rank failing ends every
    rank, with its error."""
    from ...engine import distributed

    mpi = distributed.world()
    if mpi is None:
        return command(args, None)
    with distributed.guard(mpi):
        return command(args, mpi)
