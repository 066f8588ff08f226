"""The PyTorch adapters (engine/autodiff.py): a whole run and one force evaluation as
``torch.autograd.Function``s, checked by ``torch.autograd.gradcheck`` (float64, cpu-direct) and
against ``run_gradient`` itself."""

import itertools

import numpy as np
import pytest

from orrery.engine import InvalidInputError, ics, make_solver
from orrery.engine.autodiff import NotReversibleError, torch_accelerations, torch_run
from orrery.engine.gradients import ReversibleRun, run_gradient
from orrery.engine.lattice import Lattice

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                                            "'orrery[frameworks]'); CI does not install it")

N, STEPS, DT, SOFTENING = 5, 4, 0.02, 0.1


@pytest.fixture(scope="module")
def particles():
    return ics.plummer(N, seed=21)


@pytest.fixture(scope="module")
def solver():
    return make_solver("cpu-direct", precision="f64", softening=SOFTENING)


def _tensors(particles, dtype=torch.float64):
    return [torch.tensor(np.asarray(a, np.float64), dtype=dtype, requires_grad=True)
            for a in (particles.pos, particles.vel, particles.mass)]


def _loss_grad(pos, vel, mass):
    """0.5 |x|^2 + x . v + sum m: its value and gradient at the final state, for run_gradient."""
    return 0.5 * np.sum(pos * pos) + np.sum(pos * vel) + mass.sum(), pos + vel, pos, np.ones_like(mass)


def test_loss_backward_gives_run_gradients_result(particles, solver):
    pos, vel, mass = _tensors(particles)
    final_pos, final_vel = torch_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS)
    loss = 0.5 * (final_pos * final_pos).sum() + (final_pos * final_vel).sum() + mass.sum()
    loss.backward()
    expected = run_gradient(particles, solver, dt=DT, steps=STEPS, loss_grad=_loss_grad)
    assert loss.item() == pytest.approx(expected.loss, rel=1e-15)
    # the same backward pass from cotangents that the framework rounds its own way
    for got, want in ((pos.grad, expected.pos), (vel.grad, expected.vel),
                      (mass.grad, expected.mass)):
        np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=1e-13 * np.abs(want).max())


def test_gradcheck_passes_for_a_whole_run(particles, solver):
    lattice = Lattice.for_state(particles.pos, particles.vel, particles.mass, SOFTENING)

    def run(pos, vel, mass):
        return torch_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS, lattice=lattice)

    assert torch.autograd.gradcheck(run, _tensors(particles), eps=1e-6, atol=1e-7, rtol=1e-6)


def test_gradcheck_passes_for_accelerations_and_potentials(particles, solver):
    pos, _, mass = _tensors(particles)
    assert torch.autograd.gradcheck(
        lambda p, m: torch_accelerations(p, m, solver=solver, potential=True), (pos, mass),
        eps=1e-6, atol=1e-7, rtol=1e-6)
    assert torch.autograd.gradcheck(
        lambda p, m: torch_accelerations(p, m, solver=solver), (pos, mass),
        eps=1e-6, atol=1e-7, rtol=1e-6)


def test_the_forward_values_are_the_solvers_and_the_runs(particles, solver):
    pos, vel, mass = _tensors(particles)
    acc, pot = torch_accelerations(pos, mass, solver=solver, potential=True)
    expected_acc, expected_pot = solver.accelerations(particles.pos, particles.mass, potential=True)
    np.testing.assert_array_equal(acc.detach().numpy(), expected_acc)
    np.testing.assert_array_equal(pot.detach().numpy(), expected_pot)
    final_pos, final_vel = torch_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS)
    run = ReversibleRun(particles, solver, dt=DT, steps=STEPS)
    np.testing.assert_array_equal(final_pos.detach().numpy(), run.positions)
    np.testing.assert_array_equal(final_vel.detach().numpy(), run.velocities)


def test_float32_tensors_come_back_float32_with_float32_gradients(particles, solver):
    pos, vel, mass = _tensors(particles, torch.float32)
    final_pos, final_vel = torch_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS)
    assert final_pos.dtype == final_vel.dtype == torch.float32
    (final_pos.sum() + final_vel.sum()).backward()
    assert pos.grad.dtype == vel.grad.dtype == mass.grad.dtype == torch.float32
    assert torch.isfinite(pos.grad).all() and torch.isfinite(mass.grad).all()


def test_an_unused_output_counts_as_a_zero_cotangent(particles, solver):
    pos, vel, mass = _tensors(particles)
    final_pos, _ = torch_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS)
    final_pos.sum().backward()
    expected = run_gradient(particles, solver, dt=DT, steps=STEPS,
                            loss_grad=lambda x, v, m: (x.sum(), np.ones_like(x), np.zeros_like(v)))
    np.testing.assert_array_equal(vel.grad.numpy(), expected.vel)


def test_a_solver_without_a_vjp_is_refused_when_called(particles):
    auto = make_solver("auto", precision="f64", softening=SOFTENING)
    pos, _, mass = _tensors(particles)
    with pytest.raises(InvalidInputError, match="no force VJP for solver 'auto'"):
        torch_accelerations(pos, mass, solver=auto)


def test_a_backward_pass_that_does_not_come_back_raises(particles):
    solver = make_solver("reference", precision="f64", softening=SOFTENING)
    evaluate, calls = solver.accelerations, itertools.count(1)
    # forces that change a little at every evaluation, so the backward pass cannot retrace
    solver.accelerations = lambda pos, mass: evaluate(pos, mass) * (1 + 1e-6 * next(calls))
    pos, vel, mass = _tensors(particles)
    final_pos, _ = torch_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS)
    with pytest.raises(NotReversibleError, match="did not come back to the initial state"):
        final_pos.sum().backward()


def test_cpu_tensors_are_read_in_place():
    from orrery.engine.autodiff import _torch_host

    tensor = torch.arange(6.0, dtype=torch.float64, requires_grad=True)
    assert np.shares_memory(_torch_host(tensor), tensor.detach().numpy())
