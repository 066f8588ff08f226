"""cpu-fmm's VJP with its tree and lists held fixed (float64): the lists and the algebra are the
ones cpu-fmm evaluated, the VJP matches central differences of that fixed-list evaluation, it
approaches the direct sum's VJP as the order grows, and a whole reversible run under cpu-fmm has
a gradient."""

import numpy as np
import pytest

from orrery import _native
from orrery.engine import Particles, ics, make_solver
from orrery.engine.fmm_vjp import fixed_fmm_forces, fmm_lists, fmm_vjp
from orrery.engine.force_vjp import direct_vjp, force_and_vjp, force_vjp
from orrery.engine.gradients import ReversibleRun, run_gradient
from orrery.engine.lattice import Lattice

from .differences import central_difference, central_differences, relative_error

SOFTENING = 0.05


@pytest.mark.parametrize("theta, order, leaf_capacity, heavy_share",
                         [(0.6, 3, 8, 0.0), (0.5, 7, 16, 0.0), (0.8, 5, 4, 0.02)])
def test_the_lists_and_expansions_are_the_ones_cpu_fmm_evaluated(theta, order, leaf_capacity,
                                                                 heavy_share):
    p = ics.plummer(600, seed=3)
    acc, pot = _native.FmmF64().evaluate(p.pos, p.mass, SOFTENING, theta, order, leaf_capacity,
                                         threads=1, potential=True, heavy_share=heavy_share)
    lists = fmm_lists(p.pos, p.mass, theta=theta, order=order, leaf_capacity=leaf_capacity,
                      heavy_share=heavy_share)
    direct = make_solver("cpu-direct", precision="f64", softening=SOFTENING)
    # The approximation is in play (far from the direct sum), and the lists give it to round-off.
    assert relative_error(acc, direct.accelerations(p.pos, p.mass)) > 1e-7
    assert len(lists.m2l_target) > 0
    fixed_acc, fixed_pot = fixed_fmm_forces(p.pos, p.mass, SOFTENING, lists)
    assert relative_error(fixed_acc, acc) < 1e-13
    assert relative_error(fixed_pot, pot) < 1e-13


@pytest.mark.parametrize("expansions", ["f32", "f64"])
def test_a_float32_fmms_lists_are_the_ones_it_evaluated(expansions):
    p = ics.plummer(400, seed=4)
    pos, mass = p.pos.astype(np.float32), p.mass.astype(np.float32)
    acc, _ = _native.FmmF32().evaluate(pos, mass, SOFTENING, 0.6, 4, 8, threads=1,
                                       expansions=expansions)
    lists = fmm_lists(pos, mass, theta=0.6, order=4, leaf_capacity=8, precision="f32")
    # float64 sums over float32's lists: float32's round-off apart, not an expansion's worth.
    assert relative_error(fixed_fmm_forces(pos, mass, SOFTENING, lists)[0], acc) < 1e-5


def test_vjp_matches_central_differences_of_the_fixed_list_evaluation():
    # Leaves of 4 and theta 0.7: every stage (P2M, M2M, M2L, L2L, L2P, P2P) is met.
    n = 48
    p = ics.plummer(n, seed=5)
    lists = fmm_lists(p.pos, p.mass, theta=0.7, order=4, leaf_capacity=4)
    assert len(lists.m2l_target) > 0 and len(lists.levels) > 3
    rng = np.random.default_rng(1)
    acc_bar, pot_bar = rng.normal(size=(n, 3)), rng.normal(size=n)
    pos_bar, mass_bar = fmm_vjp(p.pos, p.mass, SOFTENING, acc_bar, lists, pot_bar)

    def loss(pos, mass):
        acc, pot = fixed_fmm_forces(pos, mass, SOFTENING, lists)
        return float(np.sum(acc_bar * acc) + pot_bar @ pot)

    pos_fd, mass_fd = central_differences(loss, (p.pos, p.mass), relative=(1,))
    # The cube's extreme particles carry every centre with them: held fixed, their
    # derivatives would be 3e-4 off.
    assert relative_error(pos_bar, pos_fd) < 1e-7
    assert relative_error(mass_bar, mass_fd) < 1e-7


def test_force_and_vjp_give_cpu_fmms_own_accelerations_and_its_vjp():
    p = ics.plummer(200, seed=2)
    solver = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, theta=0.6, order=4,
                         leaf_capacity=8)
    acc_bar = np.random.default_rng(3).normal(size=(200, 3))
    acc, pos_bar, mass_bar = force_and_vjp(solver, p.pos, p.mass, acc_bar)
    np.testing.assert_array_equal(acc, solver.accelerations(p.pos, p.mass))
    lists = fmm_lists(p.pos, p.mass, theta=0.6, order=4, leaf_capacity=8)
    expected = fmm_vjp(p.pos, p.mass, SOFTENING, acc_bar, lists)
    np.testing.assert_array_equal(pos_bar, expected[0])
    np.testing.assert_array_equal(mass_bar, expected[1])
    pot_bar = np.random.default_rng(4).normal(size=200)
    with_potentials = force_vjp(solver, p.pos, p.mass, acc_bar, pot_bar)
    expected = fmm_vjp(p.pos, p.mass, SOFTENING, acc_bar, lists, pot_bar)
    np.testing.assert_array_equal(with_potentials[0], expected[0])


def test_the_fmm_vjp_approaches_the_direct_vjp_as_the_order_grows():
    p = ics.plummer(1000, seed=6)
    rng = np.random.default_rng(5)
    acc_bar, pot_bar = rng.normal(size=(1000, 3)), rng.normal(size=1000)
    exact = direct_vjp(p.pos, p.mass, SOFTENING, acc_bar, pot_bar)
    errors = []
    for order in (1, 3, 5, 7):
        solver = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, theta=0.5,
                             order=order, leaf_capacity=16)
        pos_bar, mass_bar = force_vjp(solver, p.pos, p.mass, acc_bar, pot_bar)
        errors.append(max(relative_error(pos_bar, exact[0]), relative_error(mass_bar, exact[1])))
    assert all(later < earlier / 3 for earlier, later in zip(errors, errors[1:])), errors
    assert errors[-1] < 1e-2


def test_a_reversible_run_under_cpu_fmm_has_the_gradient_of_its_runs_fixed_lists(monkeypatch):
    # cpu-fmm's own evaluation jumps wherever a particle's key changes (its leaf's box centre
    # moves by half a finest cell), so a run's differences are those of each step's lists held
    # as the run met them: replayed here through the numpy evaluation.
    p = ics.plummer(40, seed=12)
    setting = {"theta": 0.6, "order": 4, "leaf_capacity": 2}
    solver = make_solver("cpu-fmm", precision="f64", softening=0.1, **setting)
    lattice = Lattice.for_state(p.pos, p.vel, p.mass, 0.1)
    weights = np.random.default_rng(7).normal(size=(2, 40, 3))

    def loss_grad(pos, vel, mass):
        return float(np.sum(weights[0] * pos) + np.sum(weights[1] * vel)), weights[0], weights[1]

    gradient = run_gradient(p, solver, dt=0.02, steps=6, loss_grad=loss_grad, lattice=lattice)
    assert gradient.reversible
    assert solver.last_stats["m2l_interactions"] > 0
    met = []
    evaluate = solver.accelerations

    def recording(pos, mass):
        met.append(fmm_lists(pos, mass, **setting))
        return evaluate(pos, mass)

    monkeypatch.setattr(solver, "accelerations", recording)
    ReversibleRun(p, solver, dt=0.02, steps=6, lattice=lattice)
    assert len(met) == 6

    def loss(pos, vel, mass):
        replayed = iter(met)
        monkeypatch.setattr(solver, "accelerations", lambda pos, mass: fixed_fmm_forces(
            pos, mass, 0.1, next(replayed))[0])
        run = ReversibleRun(Particles(pos, vel, mass), solver, dt=0.02, steps=6, lattice=lattice)
        return loss_grad(run.positions, run.velocities, mass)[0]

    for which, grad in enumerate((gradient.pos, gradient.vel, gradient.mass)):
        for index in [(0, 0), (17, 2), (39, 1)] if which < 2 else [(3,), (25,)]:
            difference = central_difference(loss, (p.pos, p.vel, p.mass), which, index,
                                            relative=(2,), h=1e-5)
            assert abs(grad[index] - difference) < 1e-6 * np.abs(grad).max()
