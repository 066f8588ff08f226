import numpy as np
import pytest

from orrery.engine import InvalidInputError, ics, make_solver
from orrery.engine.diagnostics import measure


@pytest.mark.parametrize("name", ["plummer", "hernquist"])
def test_equilibrium_spheres_are_virialised(name):
    p = ics.make(name, 8192, seed=3)
    _, pot = make_solver("cpu-direct", precision="f64", softening=0.0).accelerations(
        p.pos, p.mass, potential=True)
    ratio = measure(p.pos, p.vel, p.mass, pot).virial_ratio
    assert abs(ratio - 1.0) <= 0.05, ratio


@pytest.mark.parametrize("name", sorted(ics.GENERATORS))
def test_seeded_and_centred(name):
    a, b, c = ics.make(name, 500, seed=1), ics.make(name, 500, seed=1), ics.make(name, 500, seed=2)
    assert np.array_equal(a.pos, b.pos) and np.array_equal(a.vel, b.vel)
    assert not np.array_equal(a.pos, c.pos)
    assert np.isclose(a.mass.sum(), 1.0)
    assert np.allclose(a.pos.mean(axis=0), 0.0, atol=1e-12)
    assert np.allclose(a.vel.mean(axis=0), 0.0, atol=1e-12)


def test_plummer_half_mass_radius():
    # Plummer half-mass radius is 1.305 a; in Hénon units a = 3 pi / 16.
    r = np.linalg.norm(ics.plummer(20000, seed=5).pos, axis=1)
    assert np.median(r) == pytest.approx(1.305 * 3 * np.pi / 16, rel=0.03)


def test_bad_counts():
    with pytest.raises(InvalidInputError):
        ics.plummer(0)
    with pytest.raises(InvalidInputError, match="unknown initial conditions"):
        ics.make("torus", 10)
