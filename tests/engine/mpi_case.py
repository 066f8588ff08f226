"""A distributed run for the MPI tests, started by ``mpiexec -n K python mpi_case.py CASE OUT``.

Cases: ``forces SOLVER`` (accelerations and potentials of every particle, gathered), ``run
SOLVER`` (energies and positions after 50 steps), ``balance`` (each rank's work after
re-balancing a clustered start), ``fail`` (rank 1 raises while the others wait in a collective),
``contracts`` (whether the simulation keeps ``contracts.GravitySimulation``). Rank 0 writes OUT
(.npz).
"""

import sys

import numpy as np

from orrery.engine import Particles, ics, make_solver
from orrery.engine.contracts import GravitySimulation
from orrery.engine.distributed import DistributedSimulation, guard, world


def _plummer():
    return ics.plummer(1500, seed=4)


def _clustered():
    dense = ics.hernquist(3000, seed=1, scale=0.1)
    wide = ics.hernquist(3000, seed=2, scale=1.0)
    wide.pos[:] += np.array([4.0, 0.0, 0.0], dtype=wide.pos.dtype)
    return Particles.concatenate([dense, wide])


def _solver(name):
    options = {"theta": 0.6} if name == "cpu-tree" else {}
    return make_solver(name, precision="f64" if name == "cpu-direct" else "f32",
                       softening=0.02, threads=1, **options)


def main(case, out, *rest):
    mpi = world()
    with guard(mpi):
        if case == "fail":
            if mpi.rank == 1:
                raise RuntimeError("rank 1 fails on purpose")
            mpi.comm.Barrier()
            return
        if case == "balance":
            sim = DistributedSimulation(mpi, _clustered(), _solver("cpu-tree"), dt=1e-3,
                                        rebalance_every=2)
            sim.step(6)
            work = np.array(mpi.comm.gather(sim.work))
            counts = np.array(mpi.comm.gather(sim.local_count))
            if mpi.rank == 0:
                np.savez(out, work=work, counts=counts, rebalances=sim.rebalances)
            return
        solver = rest[0]
        sim = DistributedSimulation(mpi, _plummer(), _solver(solver), dt=2e-3, rebalance_every=10)
        if case == "contracts":
            kept = isinstance(sim, GravitySimulation)
            if mpi.rank == 0:
                np.savez(out, kept=kept)
            return
        if case == "forces":
            local = sim._sim.particles
            acc, pot = sim.solver.accelerations(local.pos, local.mass, potential=True)
            acc, pot = sim.gathered(acc, pot)
            if mpi.rank == 0:
                np.savez(out, acc=acc, pot=pot)
            return
        sim.step(50)
        energy = sim.diagnostics()
        positions = sim.positions()
        if mpi.rank == 0:
            np.savez(out, positions=positions, kinetic=energy.kinetic, potential=energy.potential,
                     error=sim.energy_error(energy), rebalances=sim.rebalances)


if __name__ == "__main__":
    main(*sys.argv[1:])
