"""The VJP of a direct force evaluation against central finite differences of the solvers' own
accelerations and potentials (float64)."""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, ics, make_solver
from orrery.engine.cpu_features import available_simd_levels
from orrery.engine.force_vjp import direct_vjp, direct_vjp_numpy, force_and_vjp, force_vjp

from .differences import central_differences


def _loss(solver, pos, mass, acc_bar, pot_bar):
    acc, pot = solver.accelerations(pos, mass, potential=True)
    return float(np.sum(acc * acc_bar) + np.sum(pot * pot_bar))


def _relative_error(got, expected):
    return np.linalg.norm(got - expected) / np.linalg.norm(expected)


@pytest.mark.parametrize("name", ["cpu-direct", "reference"])
@pytest.mark.parametrize("softening", [0.05, 0.0])
@pytest.mark.parametrize("with_potential", [False, True])
def test_vjp_matches_central_differences(name, softening, with_potential):
    p = ics.plummer(12, seed=3)
    rng = np.random.default_rng(1)
    acc_bar = rng.normal(size=(12, 3))
    pot_bar = rng.normal(size=12) if with_potential else np.zeros(12)
    solver = make_solver(name, precision="f64", softening=softening)
    pos_bar, mass_bar = force_vjp(solver, p.pos, p.mass, acc_bar,
                                  pot_bar if with_potential else None)
    pos_fd, mass_fd = central_differences(
        lambda pos, mass: _loss(solver, pos, mass, acc_bar, pot_bar), (p.pos, p.mass),
        relative=(1,), h=1e-5)
    assert _relative_error(pos_bar, pos_fd) < 1e-7
    assert _relative_error(mass_bar, mass_fd) < 1e-7


@pytest.mark.parametrize("softening", [0.05, 0.0])
@pytest.mark.parametrize("with_potential", [False, True])
def test_native_vjp_at_every_simd_level_matches_numpy(softening, with_potential):
    n = 45  # not a whole number of any level's blocks
    p = ics.plummer(n, seed=8)
    rng = np.random.default_rng(2)
    acc_bar = rng.normal(size=(n, 3))
    pot_bar = rng.normal(size=n) if with_potential else None
    expected = direct_vjp_numpy(p.pos, p.mass, softening, acc_bar, pot_bar)
    for level in available_simd_levels():
        got = direct_vjp(p.pos, p.mass, softening, acc_bar, pot_bar, simd=level)
        for a, b in zip(got, expected):
            assert _relative_error(a, b) < 1e-14


def test_native_vjp_is_the_same_bits_for_any_thread_count():
    p = ics.plummer(300, seed=8)
    acc_bar = np.random.default_rng(3).normal(size=(300, 3))
    one = direct_vjp(p.pos, p.mass, 0.01, acc_bar, threads=1)
    two = direct_vjp(p.pos, p.mass, 0.01, acc_bar, threads=2)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


@pytest.mark.parametrize("threads", [1, 2])
def test_fused_forces_are_cpu_directs_bits_at_every_level(threads):
    p = ics.plummer(77, seed=6)
    acc_bar = np.random.default_rng(4).normal(size=(77, 3))
    for level in available_simd_levels():
        solver = make_solver("cpu-direct", precision="f64", softening=0.02, threads=threads,
                             simd=level)
        acc, pos_bar, mass_bar = force_and_vjp(solver, p.pos, p.mass, acc_bar)
        np.testing.assert_array_equal(acc, solver.accelerations(p.pos, p.mass))
        # The fused pass takes z^3 and M from the accelerations' weights (ADR-0222):
        # round-off apart.
        expected = force_vjp(solver, p.pos, p.mass, acc_bar)
        assert _relative_error(pos_bar, expected[0]) < 1e-14
        assert _relative_error(mass_bar, expected[1]) < 1e-14


def test_fused_vjp_with_a_massless_particle_matches_the_unfused_one():
    # A massless source's z^3 cannot come from its weight: the fused pass refines z instead.
    p = ics.plummer(77, seed=6)
    mass = p.mass.copy()
    mass[[5, 40]] = 0
    acc_bar = np.random.default_rng(4).normal(size=(77, 3))
    for level in available_simd_levels():
        solver = make_solver("cpu-direct", precision="f64", softening=0.02, simd=level)
        acc, pos_bar, mass_bar = force_and_vjp(solver, p.pos, mass, acc_bar)
        np.testing.assert_array_equal(acc, solver.accelerations(p.pos, mass))
        expected = direct_vjp_numpy(p.pos, mass, 0.02, acc_bar)
        assert _relative_error(pos_bar, expected[0]) < 1e-14
        assert _relative_error(mass_bar, expected[1]) < 1e-14


def test_fused_vjp_is_the_same_bits_for_any_thread_count():
    p = ics.plummer(300, seed=8)
    acc_bar = np.random.default_rng(3).normal(size=(300, 3))
    one, two = (force_and_vjp(make_solver("cpu-direct", precision="f64", softening=0.01,
                                          threads=threads), p.pos, p.mass, acc_bar)
                for threads in (1, 2))
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_numpy_vjp_does_not_depend_on_the_block_size(monkeypatch):
    from orrery.engine import force_vjp as module

    p = ics.plummer(50, seed=8)
    acc_bar = np.random.default_rng(2).normal(size=(50, 3))
    whole = direct_vjp_numpy(p.pos, p.mass, 0.01, acc_bar)
    monkeypatch.setattr(module, "_BLOCK_PAIRS", 50 * 7)
    blocked = direct_vjp_numpy(p.pos, p.mass, 0.01, acc_bar)
    np.testing.assert_array_equal(whole[0], blocked[0])
    np.testing.assert_array_equal(whole[1], blocked[1])


def test_coincident_particles_without_softening_are_refused():
    pos = np.array([[0.0, 0, 0], [1.0, 0, 0], [1.0, 0, 0]])
    solver = make_solver("cpu-direct", precision="f64", softening=0.0)
    with pytest.raises(InvalidInputError, match="coincide"):
        force_and_vjp(solver, pos, np.ones(3), np.zeros((3, 3)))


def test_solvers_without_a_vjp_say_so():
    p = ics.plummer(16)
    with pytest.raises(InvalidInputError, match="no force VJP for solver 'auto'"):
        force_vjp(make_solver("auto"), p.pos, p.mass, np.zeros((16, 3)))
    with pytest.raises(InvalidInputError, match="no force VJP for cpu-tree's quadrupole cells"):
        force_vjp(make_solver("cpu-tree", quadrupole=True), p.pos, p.mass, np.zeros((16, 3)))


def test_cotangents_of_the_wrong_shape_are_refused():
    p = ics.plummer(16)
    with pytest.raises(InvalidInputError, match=r"acc_bar must have shape \(16, 3\)"):
        direct_vjp(p.pos, p.mass, 0.01, np.zeros((15, 3)))
    with pytest.raises(InvalidInputError, match=r"pot_bar must have shape \(16,\)"):
        direct_vjp_numpy(p.pos, p.mass, 0.01, np.zeros((16, 3)), np.zeros(3))
