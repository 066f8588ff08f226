"""The JAX adapters (engine/autodiff.py): a whole run and one force evaluation as
``jax.custom_vjp`` functions, checked with ``jax.grad`` against ``run_gradient`` and against
central differences (float64, cpu-direct), under ``jax.jit`` and ``jax.vmap`` too."""

import numpy as np
import pytest

from orrery.engine import ics, make_solver
from orrery.engine.autodiff import jax_accelerations, jax_run
from orrery.engine.gradients import run_gradient

from .differences import central_differences, relative_error

jax = pytest.importorskip("jax", reason="JAX is not installed (pip install "
                                        "'orrery[frameworks]'); CI does not install it")
jnp = pytest.importorskip("jax.numpy", reason="JAX is not installed")

N, STEPS, DT, SOFTENING = 6, 5, 0.02, 0.1


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


@pytest.fixture(scope="module")
def particles():
    return ics.plummer(N, seed=22)


@pytest.fixture(scope="module")
def solver():
    return make_solver("cpu-direct", precision="f64", softening=SOFTENING)


def _arrays(particles, dtype=np.float64):
    return tuple(jnp.asarray(np.asarray(a, dtype)) for a in
                 (particles.pos, particles.vel, particles.mass))


def _run_loss(solver):
    def loss(pos, vel, mass):
        final_pos, final_vel = jax_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS)
        return 0.5 * jnp.sum(final_pos ** 2) + jnp.sum(final_pos * final_vel) + jnp.sum(mass)
    return loss


def _loss_grad(pos, vel, mass):
    """_run_loss's loss and its gradient at the final state, for run_gradient."""
    return 0.5 * np.sum(pos * pos) + np.sum(pos * vel) + mass.sum(), pos + vel, pos, np.ones_like(mass)


def test_jax_grad_gives_run_gradients_result_eager_and_jitted(particles, solver):
    expected = run_gradient(particles, solver, dt=DT, steps=STEPS, loss_grad=_loss_grad)
    grad = jax.grad(_run_loss(solver), argnums=(0, 1, 2))
    for grads in (grad(*_arrays(particles)), jax.jit(grad)(*_arrays(particles))):
        # the same backward pass from cotangents that JAX rounds its own way
        for got, want in zip(grads, (expected.pos, expected.vel, expected.mass)):
            np.testing.assert_allclose(np.asarray(got), want, rtol=0,
                                       atol=1e-13 * np.abs(want).max())


def test_jax_grad_of_a_run_matches_central_differences(particles, solver):
    loss = _run_loss(solver)
    arrays = _arrays(particles)
    grads = jax.grad(loss, argnums=(0, 1, 2))(*arrays)
    for got, fd in zip(grads, central_differences(loss, arrays, relative=(2,), h=1e-5)):
        assert relative_error(got, fd) <= 1e-6


def test_jax_grad_of_accelerations_and_potentials_matches_central_differences(particles,
                                                                              solver):
    def loss(pos, mass):
        acc, pot = jax_accelerations(pos, mass, solver=solver, potential=True)
        return jnp.sum(acc * jnp.arange(3.0)) + jnp.sum(pot * mass) + jnp.sum(acc ** 2)

    arrays = _arrays(particles)[::2]
    grads = jax.grad(loss, argnums=(0, 1))(*arrays)
    for got, fd in zip(grads, central_differences(loss, arrays, h=1e-5)):
        assert relative_error(got, fd) <= 1e-6


def test_the_forward_values_are_the_solvers(particles, solver):
    pos, _, mass = _arrays(particles)
    acc = jax_accelerations(pos, mass, solver=solver)
    np.testing.assert_array_equal(np.asarray(acc), solver.accelerations(particles.pos,
                                                                        particles.mass))


def test_vmap_over_initial_states_gives_each_ones_gradient(particles, solver):
    pos, vel, mass = _arrays(particles)
    batch = (jnp.stack([pos, pos * 1.1]), jnp.stack([vel, -vel]), jnp.stack([mass, mass]))
    grad = jax.grad(_run_loss(solver), argnums=(0, 1, 2))
    batched = jax.vmap(grad)(*batch)
    for member in range(2):
        one = grad(*(b[member] for b in batch))
        for got, want in zip(batched, one):
            np.testing.assert_array_equal(np.asarray(got[member]), np.asarray(want))


def test_float32_arrays_without_x64_come_back_float32(particles, solver):
    with jax.enable_x64(False):
        arrays = _arrays(particles, np.float32)
        final_pos, _ = jax_run(*arrays, solver=solver, dt=DT, steps=STEPS)
        grads = jax.grad(_run_loss(solver), argnums=(0, 1, 2))(*arrays)
    assert final_pos.dtype == jnp.float32
    assert all(g.dtype == jnp.float32 and bool(jnp.isfinite(g).all()) for g in grads)
