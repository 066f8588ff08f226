import numpy as np
import pytest

from orrery.engine import InvalidInputError, Particles, UnknownSolverError, make_solver


def test_particles_are_contiguous_in_one_dtype():
    p = Particles(np.zeros((4, 3), np.float32), np.zeros((4, 3)), np.ones(4))
    assert p.dtype == np.float32 and p.vel.dtype == np.float32 and p.mass.dtype == np.float32
    assert p.pos.flags.c_contiguous and p.n == 4


@pytest.mark.parametrize("pos, mass, message", [
    (np.zeros((3, 2)), np.ones(3), "shape"),
    (np.zeros((3, 3)), np.ones(4), "counts must match"),
    (np.zeros((0, 3)), np.ones(0), "N = 0"),
    (np.array([[0, 0, np.nan], [1, 0, 0]]), np.ones(2), "not finite"),
    (np.array([[0, 0, np.inf], [1, 0, 0]]), np.ones(2), "not finite"),
    (np.eye(3), np.array([1.0, -1.0, 1.0]), "negative"),
    (np.eye(3), np.zeros(3), "total mass"),
])
def test_bad_inputs_are_named(pos, mass, message):
    solver = make_solver("cpu-direct", softening=0.01)
    with pytest.raises(InvalidInputError, match=message):
        solver.accelerations(pos, mass)
    with pytest.raises(InvalidInputError, match=message):
        Particles(pos, np.zeros_like(pos), mass)


def test_coincident_particles_without_softening_are_refused():
    pos = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    with pytest.raises(InvalidInputError, match="coincide"):
        make_solver("cpu-direct", precision="f64", softening=0.0).accelerations(pos, np.ones(3))
    acc = make_solver("cpu-direct", precision="f64", softening=0.1).accelerations(pos, np.ones(3))
    assert np.isfinite(acc).all()


def test_unknown_solver_and_options_are_errors():
    with pytest.raises(UnknownSolverError, match="unknown solver"):
        make_solver("warp-drive")
    with pytest.raises(UnknownSolverError, match="no option"):
        make_solver("cpu-direct", theta=0.5)
    with pytest.raises(InvalidInputError, match="softening"):
        make_solver("cpu-direct", softening=-1.0)
    with pytest.raises(InvalidInputError, match="precision"):
        make_solver("cpu-direct", precision="f16")
