"""Gradients of the floating-point leapfrogs by checkpoints: the same final state as the
Simulation's, the same gradient as the reversible run's (dkd), and central differences (kdk)."""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Particles, Simulation, ics, make_solver
from orrery.engine.checkpointed import CheckpointedRun
from orrery.engine.gradients import run_gradient

from .differences import central_differences, relative_error

N, STEPS, DT, SOFTENING = 8, 12, 0.02, 0.1


def _loss_grad(pos, vel, mass):
    rng = np.random.default_rng(7)
    c, u = rng.normal(size=(len(pos), 3)), rng.normal(size=(len(pos), 3))
    return np.sum(c * pos) + np.sum(u * vel) + 0.5 * np.sum(pos * pos), c + pos, u


@pytest.fixture
def case():
    return ics.plummer(N, seed=12), make_solver("cpu-direct", precision="f64", softening=SOFTENING)


@pytest.mark.parametrize("integrator", ["kdk", "dkd"])
def test_the_final_state_is_the_simulations_bit_for_bit(case, integrator):
    p, solver = case
    run = CheckpointedRun(p, solver, dt=DT, steps=STEPS, integrator=integrator)
    sim = Simulation(p, solver, dt=DT, integrator=integrator)
    sim.step(STEPS)
    np.testing.assert_array_equal(run.positions, sim.particles.pos)
    np.testing.assert_array_equal(run.velocities, sim.particles.vel)


@pytest.mark.parametrize("interval", [None, 1, 5, 12, 40])
def test_dkd_gradient_is_the_reversible_runs_whatever_the_interval(case, interval):
    p, solver = case
    reversible = run_gradient(p, solver, dt=DT, steps=STEPS, loss_grad=_loss_grad)
    checkpointed = run_gradient(p, solver, dt=DT, steps=STEPS, loss_grad=_loss_grad,
                                integrator="dkd", interval=interval)
    assert checkpointed.reversible is None
    for a, b in zip((checkpointed.pos, checkpointed.vel, checkpointed.mass),
                    (reversible.pos, reversible.vel, reversible.mass)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_kdk_gradient_matches_central_differences(case):
    p, solver = case
    gradient = run_gradient(p, solver, dt=DT, steps=STEPS, loss_grad=_loss_grad,
                            integrator="kdk", interval=5)

    def loss(pos, vel, mass):
        run = CheckpointedRun(Particles(pos, vel, mass), solver, dt=DT, steps=STEPS)
        return _loss_grad(run.positions, run.velocities, mass)[0]

    expected = central_differences(loss, (p.pos, p.vel, p.mass), relative=(2,), h=1e-5)
    for got, fd in zip((gradient.pos, gradient.vel, gradient.mass), expected):
        assert relative_error(got, fd) <= 1e-6


def test_checkpoints_grow_as_the_square_root_of_the_steps(case):
    p, solver = case
    assert CheckpointedRun(p, solver, dt=1e-3, steps=100, integrator="dkd").checkpoints == 10
    assert CheckpointedRun(p, solver, dt=1e-3, steps=10, interval=3).checkpoints == 4


def test_bad_arguments_are_refused(case):
    p, solver = case
    with pytest.raises(InvalidInputError, match="integrator"):
        CheckpointedRun(p, solver, dt=0.1, steps=2, integrator="rk4")
    with pytest.raises(InvalidInputError, match="interval"):
        CheckpointedRun(p, solver, dt=0.1, steps=2, interval=0)
    with pytest.raises(InvalidInputError, match="keeps no checkpoints"):
        run_gradient(p, solver, dt=0.1, steps=2, loss_grad=_loss_grad, interval=3)
    with pytest.raises(InvalidInputError, match="runs in floating point"):
        run_gradient(p, solver, dt=0.1, steps=2, loss_grad=_loss_grad, integrator="kdk",
                     lattice=object())
