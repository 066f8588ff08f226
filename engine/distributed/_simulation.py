"""A Simulation spread over the ranks of an MPI world: each rank advances its own particles with
an ordinary :class:`~orrery.engine.Simulation` whose solver brings in the other ranks' fields.

Every rank builds (or loads) the same initial conditions and keeps its share, so nothing is
scattered at the start. Which particles a rank owns:

1. direct summation: a contiguous block of particle indices, equal in size (the work per particle
   is the same), fixed for the whole run;
2. trees: a range of Morton keys of the global bounding cube; the ranges are re-chosen every
   ``rebalance_every`` steps so that every rank's measured work (the tree walk's interaction
   counts, else its seconds) is the same share, and the particles move to their new owners.

Diagnostics and frames are gathered in particle-index order, so a run's energies and recordings
do not depend on how many ranks computed them.
"""

from __future__ import annotations

import numpy as np

from .. import frame_encoding
from ..compute import HostSnapshot
from ..diagnostics import Diagnostics, measure
from ..errors import InvalidInputError
from ..particles import Particles
from ..live.simulation import Simulation, solver_attributes
from ..solvers import Solver
from ._let import morton_keys
from ._solver import DistributedSolver, kind_of
from ._world import World

DEFAULT_REBALANCE_EVERY = 25
# Key samples each rank contributes when ranges are re-chosen.
_SAMPLES_PER_RANK = 512


class DistributedSimulation:
    """``particles``: the whole run's initial conditions (the same on every rank). Every
    member that reads the state is a collective call: every rank makes it, in the same order."""

    model = "gravity"
    tracks_energy = True

    def __init__(self, world: World, particles: Particles, solver: Solver, *, dt: float,
                 integrator: str = "kdk", rebalance_every: int = DEFAULT_REBALANCE_EVERY):
        if particles.n < world.size:
            raise InvalidInputError(f"{particles.n} particles cannot be shared by "
                                    f"{world.size} ranks")
        if rebalance_every < 1:
            raise InvalidInputError(f"rebalance_every must be at least 1, got {rebalance_every}")
        self.world = world
        self.kind = kind_of(solver.name)
        self.solver = DistributedSolver(world, solver)
        self.n = particles.n
        self.dt, self.integrator = float(dt), integrator
        self.rebalance_every = int(rebalance_every)
        self.rebalances = 0
        ids = np.arange(particles.n)
        if self.kind == "direct":
            owner = np.repeat(np.arange(world.size), _block_sizes(particles.n, world.size))
        else:
            keys = morton_keys(particles.pos.astype(np.float64), *_cube(particles.pos))
            owner = _owners_by_rank(keys, np.ones(particles.n), world.size)
        mine = owner == world.rank
        self._names = particles.population_names
        self._ids = ids[mine]
        self._sim = Simulation(_subset(particles, mine), self.solver, dt=dt, integrator=integrator)
        self.initial = self.diagnostics()

    # -- what the run is --------------------------------------------------------------------------

    @property
    def time(self) -> float:
        return self._sim.time

    @property
    def steps(self) -> int:
        return self._sim.steps

    @property
    def local_count(self) -> int:
        return self._sim.n

    @property
    def work(self) -> float:
        """This rank's work in its last force evaluation: tree interactions, else seconds."""
        stats = self.solver.local.last_stats
        if "particle_particle" in stats:
            return float(stats["particle_particle"] + stats.get("particle_cell", 0))
        return float(self.solver.cost)

    def step(self, count: int = 1) -> None:
        """Advance ``count`` steps on every rank (a collective call)."""
        done = 0
        while done < count:
            todo = count - done
            if self.kind == "tree":
                todo = min(todo, self.rebalance_every - self.steps % self.rebalance_every)
            self._sim.step(todo)
            done += todo
            if self.kind == "tree" and self.steps % self.rebalance_every == 0:
                self.rebalance()

    def rebalance(self) -> None:
        """Re-choose every rank's key range from the measured work and move the particles."""
        world, local = self.world, self._sim.particles
        low, side = _global_cube(world, local.pos)
        keys = morton_keys(local.pos.astype(np.float64), low, side)
        weight = self.work / max(local.n, 1) or 1.0
        samples = _weighted_samples(keys, weight)
        all_samples, _ = world.allgather_arrays(samples)
        splitters = _splitters(all_samples, world.size)
        owner = np.searchsorted(splitters, keys, side="right")
        moved = [world.exchange(array, owner) for array in
                 (local.pos, local.vel, local.mass, local.population, self._ids)]
        pos, vel, mass, population, ids = moved
        order = np.argsort(ids, kind="stable")  # index order within a rank: reproducible
        time, steps = self._sim.time, self._sim.steps
        self._ids = ids[order]
        self._sim = Simulation(Particles(pos[order], vel[order], mass[order], population[order],
                                         self._names), self.solver, dt=self.dt,
                               integrator=self.integrator)
        self._sim.time, self._sim.steps = time, steps
        self.rebalances += 1

    # -- the whole run, gathered ---------------------------------------------------------------

    def gathered(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """Each rank's rows of ``arrays`` (one row per own particle) joined in particle-index
        order, on every rank."""
        ids, _ = self.world.allgather_arrays(self._ids)
        order = np.argsort(ids, kind="stable")
        return [self.world.allgather_arrays(array)[0][order] for array in arrays]

    def positions(self) -> np.ndarray:
        """Every particle's position, in index order (on every rank)."""
        return self.gathered(self._sim.positions())[0]

    def stage_positions(self) -> HostSnapshot:
        """Every particle's position as a float32 snapshot (a frame), on every rank."""
        return HostSnapshot(np.array(self.positions(), np.float32))

    def stage_frame(self, encoding: str) -> HostSnapshot:
        """Every particle's position as a recorded frame in ``encoding``, on every rank."""
        return HostSnapshot(frame_encoding.encode_on_host(self.positions(), encoding))

    def stage_state(self) -> tuple[HostSnapshot, HostSnapshot]:
        """(positions, velocities) of every particle (a keyframe), on every rank."""
        particles = self.particles
        return HostSnapshot(particles.pos), HostSnapshot(particles.vel)

    def prepare_frames(self) -> None:
        """Nothing to build: frames are gathered and encoded on the host."""

    def describe(self) -> str:
        return f"{self.solver.local.describe()} over {self.world.size} MPI ranks"

    def theta_in_use(self) -> float | None:
        return self.solver.local.theta_in_use(self.n)

    def run_attributes(self) -> dict:
        """What a recording stores about the run (as for one process: the same file)."""
        return {"dt": self.dt, "integrator": self.integrator, "n": self.n,
                **solver_attributes(self.solver, self.n)}

    @property
    def particles(self) -> Particles:
        local = self._sim.particles
        pos, vel, mass, population = self.gathered(local.pos, local.vel, local.mass,
                                                   local.population)
        return Particles(pos, vel, mass, population, self._names)

    def diagnostics(self) -> Diagnostics:
        """Energies and momenta of the whole run, summed in index order (the same numbers for
        any number of ranks when the forces are)."""
        local = self._sim.particles
        potentials = self._sim._state.potentials()
        pos, vel, mass, pot = self.gathered(local.pos, local.vel, local.mass, potentials)
        return measure(pos, vel, mass, pot)

    def energy_error(self, diagnostics: Diagnostics | None = None) -> float:
        now = diagnostics or self.diagnostics()
        change = now.total - self.initial.total
        return change / abs(self.initial.total) if self.initial.total != 0 else change


def _block_sizes(n: int, ranks: int) -> np.ndarray:
    return np.array([n // ranks + (1 if r < n % ranks else 0) for r in range(ranks)])


def _subset(particles: Particles, mine: np.ndarray) -> Particles:
    return Particles(particles.pos[mine], particles.vel[mine], particles.mass[mine],
                     particles.population[mine], particles.population_names)


def _cube(pos: np.ndarray) -> tuple[np.ndarray, float]:
    low, high = pos.min(axis=0).astype(np.float64), pos.max(axis=0).astype(np.float64)
    return low, float(np.max(high - low)) * (1.0 + 1e-6) or 1.0


def _global_cube(world: World, pos: np.ndarray) -> tuple[np.ndarray, float]:
    low = world.allreduce_min(pos.min(axis=0).astype(np.float64))
    high = world.allreduce_max(pos.max(axis=0).astype(np.float64))
    return low, float(np.max(high - low)) * (1.0 + 1e-6) or 1.0


def _owners_by_rank(keys: np.ndarray, weights: np.ndarray, ranks: int) -> np.ndarray:
    """Owner of each key when every rank gets an equal share of the total weight."""
    order = np.argsort(keys, kind="stable")
    cumulative = np.cumsum(weights[order])
    share = np.minimum((cumulative - 0.5 * weights[order]) * ranks / cumulative[-1],
                       ranks - 1).astype(np.int64)
    owner = np.empty(len(keys), np.int64)
    owner[order] = share
    return owner


def _weighted_samples(keys: np.ndarray, weight: float) -> np.ndarray:
    """(key, weight) samples of this rank's sorted keys: each stands for an equal part of its
    work."""
    if len(keys) == 0:
        return np.empty((0, 2), np.float64)
    ordered = np.sort(keys)
    count = min(_SAMPLES_PER_RANK, len(ordered))
    picks = ordered[(np.arange(count) * len(ordered)) // count]
    # keys go as float64 pairs (high and low 32 bits) so one array carries key and weight
    return np.column_stack([(picks >> np.uint64(32)).astype(np.float64),
                            (picks & np.uint64(0xFFFFFFFF)).astype(np.float64),
                            np.full(count, weight * len(ordered) / count)])


def _splitters(samples: np.ndarray, ranks: int) -> np.ndarray:
    """The ranks - 1 keys that cut the sampled work into equal shares."""
    keys = (samples[:, 0].astype(np.uint64) << np.uint64(32)) | samples[:, 1].astype(np.uint64)
    order = np.argsort(keys, kind="stable")
    keys, weights = keys[order], samples[order, 2]
    cumulative = np.cumsum(weights)
    cuts = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, ranks) / ranks)
    return keys[np.minimum(cuts, len(keys) - 1)]
