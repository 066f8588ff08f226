"""The reversible integrator with GPU solvers (their forces through the host interface): K steps
back return the start bit for bit."""

import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver


@pytest.mark.parametrize("name", ["gpu-direct", "gpu-tree", "gpu-fmm"])
def test_gpu_solvers_reverse_bit_for_bit(device, name):
    solver = make_solver(name, precision="f32", softening=0.05, device=device)
    sim = Simulation(ics.plummer(256, seed=9), solver, dt=2e-3, integrator="reversible")
    start = sim._state.qpos.copy(), sim._state.qvel.copy()
    sim.step(6)
    assert not np.array_equal(sim._state.qpos, start[0])
    sim.step_back(6)
    np.testing.assert_array_equal(sim._state.qpos, start[0])
    np.testing.assert_array_equal(sim._state.qvel, start[1])
