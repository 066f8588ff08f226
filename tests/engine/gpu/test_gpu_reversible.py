"""The reversible integrator with GPU solvers (their forces through the host interface): K steps
back return the start bit for bit."""

import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver


# float64 for gpu-direct only: each solver's float64 kernels take seconds more to build on the
# OpenCL CPU device, and the reversal does not depend on the precision of the forces.
@pytest.mark.parametrize("name, precision", [("gpu-direct", "f32"), ("gpu-direct", "f64"),
                                             ("gpu-tree", "f32"), ("gpu-fmm", "f32")])
def test_gpu_solvers_reverse_bit_for_bit(device, name, precision):
    solver = make_solver(name, precision=precision, softening=0.05, device=device)
    sim = Simulation(ics.plummer(256, seed=9), solver, dt=2e-3, integrator="reversible")
    start = sim._state.qpos.copy(), sim._state.qvel.copy()
    sim.step(6)
    assert not np.array_equal(sim._state.qpos, start[0])
    sim.step_back(6)
    np.testing.assert_array_equal(sim._state.qpos, start[0])
    np.testing.assert_array_equal(sim._state.qvel, start[1])


def test_gpu_direct_gradients_agree_with_cpu_direct(device):
    from orrery.engine.gradients import run_gradient

    particles = ics.plummer(64, seed=3)
    weights = np.random.default_rng(5).normal(size=(2, 64, 3))

    def loss_grad(pos, vel, mass):
        return float(np.sum(weights[0] * pos) + np.sum(weights[1] * vel)), weights[0], weights[1]

    gradients = [run_gradient(particles, make_solver(name, precision="f64", softening=0.05,
                                                     **options),
                              dt=2e-3, steps=5, loss_grad=loss_grad)
                 for name, options in (("cpu-direct", {}), ("gpu-direct", {"device": device}))]
    assert all(g.reversible for g in gradients)
    for a, b in zip(*((g.pos, g.vel, g.mass) for g in gradients)):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
