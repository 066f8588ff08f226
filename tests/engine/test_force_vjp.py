"""The VJP of a direct force evaluation against central finite differences of the solvers' own
accelerations and potentials (float64)."""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, ics, make_solver
from orrery.engine.force_vjp import direct_vjp, force_vjp


def _loss(solver, pos, mass, acc_bar, pot_bar):
    acc, pot = solver.accelerations(pos, mass, potential=True)
    return float(np.sum(acc * acc_bar) + np.sum(pot * pot_bar))


def _central_differences(solver, pos, mass, acc_bar, pot_bar, h=1e-5):
    pos_fd, mass_fd = np.zeros_like(pos), np.zeros_like(mass)
    for index in np.ndindex(pos.shape):
        up, down = pos.copy(), pos.copy()
        up[index] += h
        down[index] -= h
        pos_fd[index] = (_loss(solver, up, mass, acc_bar, pot_bar)
                         - _loss(solver, down, mass, acc_bar, pot_bar)) / (2 * h)
    for k in range(len(mass)):
        up, down = mass.copy(), mass.copy()
        step = h * mass[k]
        up[k] += step
        down[k] -= step
        mass_fd[k] = (_loss(solver, pos, up, acc_bar, pot_bar)
                      - _loss(solver, pos, down, acc_bar, pot_bar)) / (2 * step)
    return pos_fd, mass_fd


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
    pos_fd, mass_fd = _central_differences(solver, p.pos, p.mass, acc_bar, pot_bar)
    assert _relative_error(pos_bar, pos_fd) < 1e-7
    assert _relative_error(mass_bar, mass_fd) < 1e-7


def test_vjp_does_not_depend_on_the_block_size(monkeypatch):
    from orrery.engine import force_vjp as module

    p = ics.plummer(50, seed=8)
    acc_bar = np.random.default_rng(2).normal(size=(50, 3))
    whole = direct_vjp(p.pos, p.mass, 0.01, acc_bar)
    monkeypatch.setattr(module, "_BLOCK_PAIRS", 50 * 7)
    blocked = direct_vjp(p.pos, p.mass, 0.01, acc_bar)
    np.testing.assert_array_equal(whole[0], blocked[0])
    np.testing.assert_array_equal(whole[1], blocked[1])


def test_solvers_without_a_vjp_say_so():
    p = ics.plummer(16)
    with pytest.raises(InvalidInputError, match="no force VJP for solver 'cpu-tree'"):
        force_vjp(make_solver("cpu-tree"), p.pos, p.mass, np.zeros((16, 3)))


def test_cotangents_of_the_wrong_shape_are_refused():
    p = ics.plummer(16)
    with pytest.raises(InvalidInputError, match=r"acc_bar must have shape \(16, 3\)"):
        direct_vjp(p.pos, p.mass, 0.01, np.zeros((15, 3)))
