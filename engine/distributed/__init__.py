"""One simulation over several processes through MPI (mpi4py, the optional ``mpi`` extra).

``mpirun -n K orrery run ...`` runs the same command on K ranks; each rank owns a share of the
particles, advances it with the ordinary :class:`~orrery.engine.Simulation`, and a
:class:`DistributedSolver` brings in what the other ranks' particles contribute to its forces.
Without an MPI launcher nothing here is imported by the rest of Orrery.

- Direct summation (``cpu-direct``): rank r owns a contiguous block of particle indices; every
  rank gathers all sources in index order and sums them for its own block only, so every
  particle's acceleration is the same bits for any number of ranks (and as in one process).
- Trees (``cpu-tree``, ``gpu-tree``): rank r owns a range of Morton keys of the global bounding
  cube, chosen so the ranks' measured costs balance, and re-chosen every ``rebalance_every``
  steps; every other rank sends it its *locally essential* sources: the cells of its own
  particles that pass the opening test against r's whole domain, as monopole pseudo-particles,
  and the particles of the cells that do not. Results agree with one process to the solver's
  own accuracy (the cells a rank receives are opened against its whole domain, never less
  accurately than its own walk would).
"""

from ._let import essential_sources
from ._simulation import DistributedSimulation
from ._solver import DistributedSolver, supported_solvers
from ._world import DistributedError, World, guard, launched_under_mpi, rank_device, world

__all__ = ["DistributedError", "DistributedSimulation", "DistributedSolver", "World",
           "essential_sources", "guard", "launched_under_mpi", "rank_device", "supported_solvers",
           "world"]
