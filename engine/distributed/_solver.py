"""Forces on one rank's particles from every rank's: the solver a distributed Simulation uses."""

from __future__ import annotations

import time

import numpy as np

from ... import _native
from ..errors import InvalidInputError
from ..solvers import Solver
from ._let import domain_boxes, essential_sources
from ._world import DistributedError, World

# How each solver distributes: "direct" gathers every source in index order, "tree" imports
# locally essential sources from the other ranks.
_KINDS = {"cpu-direct": "direct", "cpu-tree": "tree", "gpu-tree": "tree"}


def supported_solvers() -> tuple[str, ...]:
    return tuple(sorted(_KINDS))


def kind_of(name: str) -> str:
    if name not in _KINDS:
        raise DistributedError(f"solver {name!r} does not run distributed; choose one of "
                               f"{list(supported_solvers())}")
    return _KINDS[name]


class DistributedSolver(Solver):
    """Wraps the solver each rank runs (``local``) so that ``accelerations`` of this rank's
    particles include every other rank's.

    Direct: this rank's particles must be the contiguous index block ``first .. first + n`` of
    the run, in order (:class:`DistributedSimulation` keeps them so).
    """

    def __init__(self, world: World, local: Solver):
        if local.accuracy_check is not None:
            # A rank's evaluation sums its locally essential tree, not every body.
            raise InvalidInputError("check_accuracy checks a run on one process: run without "
                                    "mpiexec, or leave check_accuracy out")
        super().__init__(precision=local.precision, softening=local.softening)
        self.world = world
        self.local = local
        self.kind = kind_of(local.name)
        self.name = local.name
        self.params = dict(local.params)
        self.first = 0  # direct: index of this rank's first particle
        self.cost = 0.0  # seconds of the last evaluation on this rank (for load balancing)

    def _compute(self, pos, mass, potential):
        start = time.perf_counter()
        if self.kind == "direct":
            result = self._direct(pos, mass, potential)
        else:
            result = self._tree(pos, mass, potential)
        self.cost = time.perf_counter() - start
        return result

    def _extra_stats(self) -> dict:
        return {"rank": self.world.rank, "ranks": self.world.size, "rank_seconds": self.cost,
                **self.local.last_stats}

    def _direct(self, pos, mass, potential):
        all_pos, counts = self.world.allgather_arrays(pos)
        all_mass, _ = self.world.allgather_arrays(mass)
        self.first = int(counts[:self.world.rank].sum())
        kernel = (_native.direct_accelerations_f32 if self.dtype == np.float32
                  else _native.direct_accelerations_f64)
        params = self.local.params
        return kernel(all_pos, all_mass, self.softening, threads=params.get("threads") or 0,
                      potential=potential, simd=params.get("simd") or "", first=self.first,
                      count=len(pos))

    def _tree(self, pos, mass, potential):
        world = self.world
        low = world.allreduce_min(pos.min(axis=0).astype(np.float64))
        high = world.allreduce_max(pos.max(axis=0).astype(np.float64))
        side = float(np.max(high - low)) * (1.0 + 1e-6) or 1.0
        boxes, box_counts = world.allgather_arrays(domain_boxes(pos, low, side))
        boxes = np.split(boxes, np.cumsum(box_counts)[:-1])
        theta = float(self.local.params.get("theta") or 0.5)
        leaf = int(self.local.params.get("leaf_capacity") or 16)
        parts_pos, parts_mass = [], []
        for rank in range(world.size):
            if rank == world.rank:
                parts_pos.append(pos[:0])
                parts_mass.append(mass[:0])
                continue
            p, m = essential_sources(pos, mass, boxes[rank], low=low, side=side, theta=theta,
                                     leaf_capacity=leaf)
            parts_pos.append(p)
            parts_mass.append(m)
        imported_pos = np.concatenate(world.send_each(parts_pos))
        imported_mass = np.concatenate(world.send_each(parts_mass))
        self.last_imported = len(imported_pos)
        union_pos = np.concatenate([pos, imported_pos.astype(pos.dtype)])
        union_mass = np.concatenate([mass, imported_mass.astype(mass.dtype)])
        result = self.local.accelerations(union_pos, union_mass, potential=potential)
        if potential:
            acc, pot = result
            return acc[:len(pos)], pot[:len(pos)]
        return result[:len(pos)], None
