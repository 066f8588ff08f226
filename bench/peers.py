"""Peer direct-summation codes timed beside Orrery's in the same run (``orrery bench direct
--peers``). Each is optional (the ``bench`` extra installs them); a missing one is skipped with
the reason. A peer is a callable that evaluates every particle's acceleration once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..engine._optional import missing


@dataclass(frozen=True)
class Peer:
    name: str
    precision: str
    threads: int
    note: str
    evaluate: Callable[[], object]


def make_peers(pos: np.ndarray, mass: np.ndarray, softening: float, threads: int,
               report=print) -> list[Peer]:
    """The peers installed here, set up on these particles (float64); ``report`` gets one line
    per peer that is skipped."""
    peers = []
    for factory in (_pytreegrav, _rebound):
        peer = factory(pos, mass, softening, threads)
        if isinstance(peer, str):
            report(peer)
        else:
            peers.append(peer)
    return peers


def _pytreegrav(pos, mass, softening, threads) -> Peer | str:
    if why := missing("pytreegrav", "numba"):
        return f"peer pytreegrav skipped: {why}"
    import numba
    import pytreegrav

    threads = min(threads, numba.config.NUMBA_NUM_THREADS)
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    mass = np.ascontiguousarray(mass, dtype=np.float64)
    # pytreegrav softens with a cubic-spline kernel of support radius h, not Plummer; the cost of
    # an interaction is what is compared here.
    h = np.full(len(mass), softening)

    def evaluate():
        numba.set_num_threads(threads)
        return pytreegrav.Accel(pos, mass, softening=h, method="bruteforce", parallel=True)

    return Peer("pytreegrav-bruteforce", "f64", threads, "numba", evaluate)


def _rebound(pos, mass, softening, threads) -> Peer | str:
    if why := missing("rebound"):
        return f"peer rebound skipped: {why}"
    import rebound

    sim = rebound.Simulation()
    sim.gravity = "basic"
    sim.integrator = "leapfrog"
    sim.softening = softening
    sim.dt = 1e-9  # a step is one force evaluation plus O(N) updates; positions barely move
    for (x, y, z), m in zip(np.asarray(pos, dtype=np.float64), np.asarray(mass, dtype=np.float64)):
        sim.add(m=float(m), x=float(x), y=float(y), z=float(z))
    # One leapfrog step on one thread (the wheel is built without OpenMP).
    return Peer("rebound-basic", "f64", 1, "C",
                lambda: sim.steps(1))
