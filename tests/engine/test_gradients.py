"""Gradients of whole reversible runs against central finite differences (float64, cpu-direct).

What is compared: the gradient (the adjoint of the drift-kick-drift leapfrog in exact
arithmetic, carried back along the lattice run) with central differences of the lattice run
itself, every perturbed run on the same lattice, and with central differences of the plain
floating-point leapfrog (``integrator="dkd"``). The default lattice is finer than float64 at the
state's scale, so both differences are smooth at steps of 1e-5.
"""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Particles, Simulation, ics, make_solver
from orrery.engine.gradients import ReversibleRun, run_gradient
from orrery.engine.lattice import Lattice

from .differences import central_differences, relative_error

N, STEPS, DT, SOFTENING = 8, 12, 0.02, 0.1


def _weights(n):
    rng = np.random.default_rng(7)
    return rng.normal(size=(n, 3)), rng.normal(size=(n, 3))


def _loss_grad(pos, vel, mass):
    c, u = _weights(len(pos))
    loss = np.sum(c * pos) + np.sum(u * vel) + 0.5 * np.sum(pos * pos)
    return loss, c + pos, u


def _lattice_loss(solver, lattice, pos, vel, mass):
    run = ReversibleRun(Particles(pos, vel, mass), solver, dt=DT, steps=STEPS, lattice=lattice)
    return _loss_grad(run.positions, run.velocities, mass)[0]


def _float_loss(solver, pos, vel, mass):
    sim = Simulation(Particles(pos, vel, mass), solver, dt=DT, integrator="dkd")
    sim.step(STEPS)
    final = sim.particles
    return _loss_grad(final.pos, final.vel, mass)[0]


@pytest.fixture(scope="module")
def case():
    p = ics.plummer(N, seed=12)
    solver = make_solver("cpu-direct", precision="f64", softening=SOFTENING)
    lattice = Lattice.for_state(p.pos, p.vel, p.mass, SOFTENING)
    gradient = run_gradient(p, solver, dt=DT, steps=STEPS, loss_grad=_loss_grad, lattice=lattice)
    return p, solver, lattice, gradient


def test_the_backward_pass_reconstructs_the_run_bit_for_bit(case):
    assert case[3].reversible


def test_gradient_matches_differences_of_the_lattice_run(case):
    p, solver, lattice, gradient = case
    expected = central_differences(lambda *s: _lattice_loss(solver, lattice, *s),
                                   (p.pos, p.vel, p.mass), relative=(2,), h=1e-5)
    for got, fd in zip((gradient.pos, gradient.vel, gradient.mass), expected):
        assert relative_error(got, fd) <= 1e-6


def test_gradient_matches_differences_of_the_floating_point_leapfrog(case):
    p, solver, _, gradient = case
    expected = central_differences(lambda *s: _float_loss(solver, *s), (p.pos, p.vel, p.mass),
                                   relative=(2,), h=1e-5)
    for got, fd in zip((gradient.pos, gradient.vel, gradient.mass), expected):
        assert relative_error(got, fd) <= 1e-6


def test_the_loss_is_that_of_the_final_state(case):
    p, solver, lattice, gradient = case
    assert gradient.loss == _lattice_loss(solver, lattice, p.pos, p.vel, p.mass)


def test_reference_and_cpu_direct_gradients_agree(case):
    p, _, lattice, gradient = case
    reference = make_solver("reference", softening=SOFTENING)
    other = run_gradient(p, reference, dt=DT, steps=STEPS, loss_grad=_loss_grad, lattice=lattice)
    assert other.reversible
    for a, b in zip((gradient.pos, gradient.vel, gradient.mass),
                    (other.pos, other.vel, other.mass)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_a_loss_of_the_masses_adds_its_own_gradient(case):
    p, solver, lattice, gradient = case
    extra = np.arange(N, dtype=float)

    def loss_grad(pos, vel, mass):
        loss, pos_bar, vel_bar = _loss_grad(pos, vel, mass)
        return loss + extra @ mass, pos_bar, vel_bar, extra

    with_mass = run_gradient(p, solver, dt=DT, steps=STEPS, loss_grad=loss_grad, lattice=lattice)
    np.testing.assert_allclose(with_mass.mass, gradient.mass + extra, rtol=1e-12)


def test_zero_steps_pass_the_final_gradient_through():
    p = ics.plummer(4, seed=1)
    solver = make_solver("cpu-direct", precision="f64")
    gradient = run_gradient(p, solver, dt=0.1, steps=0, loss_grad=_loss_grad)
    loss, pos_bar, vel_bar = _loss_grad(p.pos, p.vel, p.mass)
    np.testing.assert_allclose(gradient.pos, pos_bar, atol=1e-15)
    np.testing.assert_array_equal(gradient.mass, 0)


def test_bad_arguments_are_refused():
    p = ics.plummer(4, seed=1)
    solver = make_solver("cpu-direct", precision="f64")
    with pytest.raises(InvalidInputError, match="steps"):
        ReversibleRun(p, solver, dt=0.1, steps=-1)
    run = ReversibleRun(p, solver, dt=0.1, steps=1)
    with pytest.raises(InvalidInputError, match="vel_bar must have shape"):
        run.backward(np.zeros((4, 3)), np.zeros(4))
    with pytest.raises(InvalidInputError, match="loss_grad must return"):
        run_gradient(p, solver, dt=0.1, steps=1, loss_grad=lambda *s: (0.0,))


def test_memory_does_not_grow_with_the_number_of_steps():
    import tracemalloc

    p = ics.plummer(256, seed=2)
    solver = make_solver("cpu-direct", precision="f64", softening=SOFTENING)

    def peak(steps):
        tracemalloc.start()
        gradient = run_gradient(p, solver, dt=1e-3, steps=steps, loss_grad=_loss_grad)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert gradient.reversible
        return top

    few, many = peak(4), peak(64)
    # A stored trajectory would add 64 * 256 * 48 bytes (786 kB); a few arrays of the state
    # (256 * 48 bytes each) is all the difference allowed.
    assert many - few < 4 * 256 * 48


def test_a_float32_solvers_run_has_a_gradient_close_to_float64s():
    p = ics.plummer(64, seed=1)
    gradients = [run_gradient(p, make_solver("cpu-direct", precision=precision, softening=0.05),
                              dt=1e-3, steps=10, loss_grad=_loss_grad)
                 for precision in ("f32", "f64")]
    assert gradients[0].reversible
    for a, b in zip(*((g.pos, g.vel, g.mass) for g in gradients)):
        assert relative_error(a, b) < 1e-6


def test_a_run_given_its_own_end_state_gives_the_same_gradient_without_stepping(case):
    p, solver, lattice, gradient = case
    ran = ReversibleRun(p, solver, dt=DT, steps=STEPS, lattice=lattice)
    calls = []
    evaluate = solver.accelerations
    solver.accelerations = lambda pos, mass: calls.append(1) or evaluate(pos, mass)
    try:
        resumed = ReversibleRun(p, solver, dt=DT, steps=STEPS, lattice=lattice, end=ran.end)
    finally:
        del solver.accelerations
    assert calls == []
    np.testing.assert_array_equal(resumed.positions, ran.positions)
    bars = _loss_grad(ran.positions, ran.velocities, ran.mass)[1:]
    again = resumed.backward(*bars)
    assert again.reversible
    np.testing.assert_array_equal(again.pos, gradient.pos)
    np.testing.assert_array_equal(again.mass, gradient.mass)


def test_an_end_state_that_is_not_the_runs_shows_as_not_reversible(case):
    p, solver, lattice, _ = case
    qpos, qvel = ReversibleRun(p, solver, dt=DT, steps=STEPS, lattice=lattice).end
    qvel[0, 0] += 1
    run = ReversibleRun(p, solver, dt=DT, steps=STEPS, lattice=lattice, end=(qpos, qvel))
    assert not run.backward(np.zeros((N, 3)), np.zeros((N, 3))).reversible


def test_an_end_state_must_be_int64_lattice_points_of_the_runs_shape(case):
    p, solver, lattice, _ = case
    qpos, qvel = ReversibleRun(p, solver, dt=DT, steps=1, lattice=lattice).end
    with pytest.raises(InvalidInputError, match=r"end's qvel must be int64 of shape \(8, 3\)"):
        ReversibleRun(p, solver, dt=DT, steps=1, lattice=lattice, end=(qpos, qvel[:3]))
    with pytest.raises(InvalidInputError, match="end's qpos must be int64"):
        ReversibleRun(p, solver, dt=DT, steps=1, lattice=lattice, end=(qpos * 1.0, qvel))


def test_a_run_and_its_backward_pass_count_their_steps_as_they_take_them(case):
    p, solver, lattice, gradient = case
    forward, backward = [], []
    run = ReversibleRun(p, solver, dt=DT, steps=STEPS, lattice=lattice,
                        progress=lambda done, total: forward.append((done, total)))
    again = run.backward(*_loss_grad(run.positions, run.velocities, run.mass)[1:],
                         progress=lambda done, total: backward.append((done, total)))
    assert forward == backward == [(done, STEPS) for done in range(1, STEPS + 1)]
    np.testing.assert_array_equal(again.pos, gradient.pos)  # counting changes nothing
