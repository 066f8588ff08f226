"""cpu-tree's VJP with its tree held fixed (float64): the lists are the ones cpu-tree evaluated,
the VJP matches central differences of that fixed-tree evaluation, and a whole reversible run
under cpu-tree has a gradient."""

import numpy as np
import pytest

from orrery import _native
from orrery.engine import InvalidInputError, Particles, ics, make_solver
from orrery.engine.force_vjp import force_and_vjp, force_vjp
from orrery.engine.gradients import ReversibleRun, run_gradient
from orrery.engine.lattice import Lattice
from orrery.engine.tree_vjp import fixed_tree_accelerations, tree_lists, tree_vjp

from .differences import central_difference, central_differences, relative_error

SOFTENING = 0.05


@pytest.mark.parametrize("theta, leaf_capacity, group_capacity",
                         [(0.5, 8, 256), (0.7, 16, 32), (0.3, 4, 64)])
def test_the_lists_are_the_ones_cpu_tree_evaluated(theta, leaf_capacity, group_capacity):
    p = ics.plummer(300, seed=3)
    acc, _ = _native.TreeF64().evaluate(p.pos, p.mass, SOFTENING, theta, False, leaf_capacity,
                                        group_capacity=group_capacity, threads=1)
    lists = tree_lists(p.pos, p.mass, theta=theta, leaf_capacity=leaf_capacity,
                       group_capacity=group_capacity)
    direct = make_solver("cpu-direct", precision="f64", softening=SOFTENING)
    # The approximation is in play (far from the direct sum), and the lists give it to round-off.
    assert relative_error(acc, direct.accelerations(p.pos, p.mass)) > 1e-5
    assert relative_error(fixed_tree_accelerations(p.pos, p.mass, SOFTENING, lists), acc) < 1e-14


def test_a_float32_trees_lists_are_the_ones_it_evaluated():
    p = ics.plummer(300, seed=4)
    pos, mass = p.pos.astype(np.float32), p.mass.astype(np.float32)
    acc, _ = _native.TreeF32().evaluate(pos, mass, SOFTENING, 0.5, False, 8, group_capacity=32,
                                        threads=1)
    lists = tree_lists(pos, mass, theta=0.5, leaf_capacity=8, group_capacity=32,
                       precision="f32")
    # float64 sums over float32's lists: float32's round-off apart, not a cell's worth.
    assert relative_error(fixed_tree_accelerations(pos, mass, SOFTENING, lists), acc) < 1e-5


def test_vjp_matches_central_differences_of_the_fixed_tree_evaluation():
    p = ics.plummer(90, seed=5)
    lists = tree_lists(p.pos, p.mass, theta=0.6, leaf_capacity=4, group_capacity=16)
    acc_bar = np.random.default_rng(1).normal(size=(90, 3))
    pos_bar, mass_bar = tree_vjp(p.pos, p.mass, SOFTENING, acc_bar, lists)

    def loss(pos, mass):
        return float(np.sum(acc_bar * fixed_tree_accelerations(pos, mass, SOFTENING, lists)))

    pos_fd, mass_fd = central_differences(loss, (p.pos, p.mass), relative=(1,))
    assert relative_error(pos_bar, pos_fd) < 1e-7
    assert relative_error(mass_bar, mass_fd) < 1e-7


def test_force_and_vjp_give_cpu_trees_own_accelerations_and_its_vjp():
    p = ics.plummer(120, seed=2)
    solver = make_solver("cpu-tree", precision="f64", softening=SOFTENING, theta=0.6,
                         leaf_capacity=4)
    acc_bar = np.random.default_rng(3).normal(size=(120, 3))
    acc, pos_bar, mass_bar = force_and_vjp(solver, p.pos, p.mass, acc_bar)
    np.testing.assert_array_equal(acc, solver.accelerations(p.pos, p.mass))
    lists = tree_lists(p.pos, p.mass, theta=0.6, leaf_capacity=4,
                       group_capacity=solver.group_capacity)
    expected = tree_vjp(p.pos, p.mass, SOFTENING, acc_bar, lists)
    np.testing.assert_array_equal(pos_bar, expected[0])
    np.testing.assert_array_equal(mass_bar, expected[1])


def test_a_reversible_run_under_cpu_tree_has_the_gradient_of_its_fixed_trees():
    # Small groups, so that 40 particles meet cells; differences of 1e-5 move no cell across
    # its opening test here, so the run's own differences are those of its fixed trees.
    p = ics.plummer(40, seed=12)
    solver = make_solver("cpu-tree", precision="f64", softening=0.1, theta=0.6, leaf_capacity=2)
    solver.group_capacity = 4
    lattice = Lattice.for_state(p.pos, p.vel, p.mass, 0.1)
    weights = np.random.default_rng(7).normal(size=(2, 40, 3))

    def loss_grad(pos, vel, mass):
        return float(np.sum(weights[0] * pos) + np.sum(weights[1] * vel)), weights[0], weights[1]

    def loss(pos, vel, mass):
        run = ReversibleRun(Particles(pos, vel, mass), solver, dt=0.02, steps=6, lattice=lattice)
        return loss_grad(run.positions, run.velocities, mass)[0]

    gradient = run_gradient(p, solver, dt=0.02, steps=6, loss_grad=loss_grad, lattice=lattice)
    assert gradient.reversible
    assert solver.last_stats["particle_cell"] > 0
    for which, grad in enumerate((gradient.pos, gradient.vel, gradient.mass)):
        for index in [(0, 0), (17, 2), (39, 1)] if which < 2 else [(3,), (25,)]:
            difference = central_difference(loss, (p.pos, p.vel, p.mass), which, index,
                                            relative=(2,), h=1e-5)
            assert abs(grad[index] - difference) < 1e-6 * np.abs(grad).max()


def test_cpu_trees_vjp_refuses_potentials_and_massless_particles():
    p = ics.plummer(16)
    solver = make_solver("cpu-tree", precision="f64")
    with pytest.raises(InvalidInputError, match="cotangents only, not the potentials'"):
        force_vjp(solver, p.pos, p.mass, np.zeros((16, 3)), np.zeros(16))
    mass = p.mass.copy()
    mass[3] = 0
    with pytest.raises(InvalidInputError, match="needs positive masses"):
        force_vjp(solver, p.pos, mass, np.zeros((16, 3)))
