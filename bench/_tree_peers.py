"""Peer Barnes-Hut codes for ``orrery bench tree --peers``: pytreegrav's tree (numba, parallel)
and REBOUND's tree (C, one thread). Each peer returns accelerations and can measure its own
error against exact summation with its own softening kernel. Missing packages are reported, not
fatal."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..engine._optional import missing
from ..engine.accuracy import sampled_exact


@dataclass
class Peer:
    """``prepare(pos, mass)`` returns ``(evaluate, read)``: ``evaluate()`` is what gets timed (one
    force evaluation including the peer's own tree build), ``read()`` returns its accelerations.
    ``exact(pos, mass, targets)`` gives exact accelerations of a subset with the peer's kernel."""

    name: str
    threads: int
    prepare: Callable[[np.ndarray, np.ndarray], tuple[Callable[[], object], Callable[[], np.ndarray]]]
    exact: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    kernel: str


def available_peers(theta: float, softening: float, threads: int) -> tuple[list[Peer], list[str]]:
    """The peers installed here, and one message per missing peer."""
    peers, skipped = [], []
    for packages, make in ((("pytreegrav", "numba"), lambda: _pytreegrav_peer(theta, softening, threads)),
                           (("rebound",), lambda: _rebound_peer(theta, softening))):
        if why := missing(*packages):
            skipped.append(f"peer {packages[0]} skipped: {why}")
        else:
            peers.append(make())
    return peers, skipped


def _pytreegrav_peer(theta, softening, threads) -> Peer:
    import numba
    import pytreegrav

    threads = min(threads, numba.config.NUMBA_NUM_THREADS)

    def prepare(pos, mass):
        result = {}

        def evaluate():
            numba.set_num_threads(threads)
            result["acc"] = pytreegrav.Accel(pos, mass, softening=np.full(len(pos), softening), theta=theta,
                                             parallel=threads > 1, method="tree")

        return evaluate, lambda: result["acc"]

    def exact(pos, mass, targets):
        numba.set_num_threads(threads)
        return pytreegrav.AccelTarget(pos[targets], pos, mass, softening_target=np.full(len(targets), softening),
                                      softening_source=np.full(len(pos), softening), theta=theta,
                                      parallel=threads > 1, method="bruteforce")

    # Compile the numba kernels now, so the first timed call measures the code, not the compiler.
    small = np.random.default_rng(0).normal(size=(64, 3))
    prepare(small, np.full(64, 1 / 64))[0]()
    exact(small, np.full(64, 1 / 64), np.arange(4))
    return Peer("pytreegrav tree", threads, prepare, exact, "cubic spline (its own)")


def _rebound_peer(theta, softening) -> Peer:
    import rebound

    def prepare(pos, mass):
        # REBOUND builds its tree while particles are added; that Python loop is not timed.
        sim = rebound.Simulation()
        sim.gravity = "tree"
        sim.opening_angle2 = theta * theta
        sim.softening = softening
        sim.root_size = 2.0 * float(np.abs(pos).max()) * 1.001
        sim.N_root_x = sim.N_root_y = sim.N_root_z = 1
        for (x, y, z), m in zip(pos.tolist(), mass.tolist()):
            sim.add(m=m, x=x, y=y, z=z)

        def evaluate():
            rebound.clibrebound.reb_simulation_update_acceleration(ctypes.byref(sim))

        return evaluate, lambda: np.array([(p.ax, p.ay, p.az) for p in sim.particles])

    def exact(pos, mass, targets):
        return sampled_exact(pos, mass, targets, softening)

    return Peer("REBOUND tree", 1, prepare, exact, "Plummer")
