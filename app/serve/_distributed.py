"""A run over MPI ranks, served from rank 0 (``mpiexec -n K orrery serve ...``).

Every rank holds its share of a :class:`~orrery.engine.distributed.DistributedSimulation`, whose
steps are collective. Rank 0's :class:`DistributedRun` decides on its own thread when the next
step is made (the clients' pause and step controls) and broadcasts each decision; every other
rank :func:`follow`\\ s: it waits for the decision, makes the same step and joins the gather of
the positions rank 0 publishes. A decision is one small broadcast a step, so the ranks never
disagree about what to do next. The other ranks wait for rank 0 outside the stall watchdog's
collectives: a paused run is not a stuck one.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from ...engine.frames import Frame, FrameStats, PublishedFrames

STEP, STOP = "step", "stop"


class DistributedRun(PublishedFrames):
    """Rank 0's side: ``simulation`` stepped on a thread, controlled like a live run's pause and
    step, published as frames of every rank's particles (``particles``: the run gathered)."""

    def __init__(self, world, simulation, particles, *, scenario: str, solver: str,
                 paused: bool = False):
        super().__init__()
        self.world = world
        self.simulation = simulation
        # ``particles``: the whole run now, gathered (with every rank) by the caller; its labels
        # and masses do not change
        self._label(particles)
        self.scenario, self.solver_name = scenario, solver
        self._paused = paused
        self._steps_left = 0
        self._stop = False
        self._seconds_per_step = 0.0
        self._rate = 0.0
        self._publish(particles.pos)
        self._thread = threading.Thread(target=self._loop, name="orrery-mpi-root", daemon=True)
        self._thread.start()

    @property
    def paused(self) -> bool:
        return self._paused

    def _stopping(self) -> bool:
        return self._stop

    def pause(self) -> None:
        with self._condition:
            self._paused, self._steps_left = True, 0
            self._condition.notify_all()

    def resume(self) -> None:
        with self._condition:
            self._paused = False
            self._condition.notify_all()

    def step(self, count: int = 1) -> None:
        with self._condition:
            self._paused = True
            self._steps_left += int(count)
            self._condition.notify_all()

    def close(self) -> None:
        with self._condition:
            self._stop = True
            self._condition.notify_all()
        self._thread.join()

    def _loop(self) -> None:
        comm, sim = self.world.comm, self.simulation
        last = None
        while True:
            with self._condition:
                self._condition.wait_for(lambda: self._stop or not self._paused or
                                         self._steps_left > 0)
                if self._stop:
                    break
                if self._paused:
                    self._steps_left -= 1
            comm.bcast(STEP, root=0)
            start = time.perf_counter()
            sim.step(1)
            positions = sim.positions()  # a gather every rank joins
            end = time.perf_counter()
            self._seconds_per_step = end - start
            self._rate = 1.0 / (end - last) if last is not None and end > last else 0.0
            last = end if not self._paused else None
            self._publish(positions)
        comm.bcast(STOP, root=0)

    def _publish(self, positions) -> None:
        sim = self.simulation
        stats = FrameStats(n=sim.n, dt=sim.dt, paused=self._paused,
                           solver=f"{self.solver_name} over {self.world.size} MPI ranks",
                           steps_per_second=0.0 if self._paused else self._rate,
                           solver_seconds_per_step=self._seconds_per_step)
        self._publish_frame(lambda sequence: Frame(np.asarray(positions, np.float32), sim.time,
                                                   sim.steps, sequence, stats))


def follow(world, simulation) -> None:
    """Another rank's side: make each step rank 0 decides on, until it says stop."""
    comm = world.comm
    while comm.bcast(None, root=0) == STEP:
        simulation.step(1)
        simulation.positions()
