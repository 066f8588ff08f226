import numpy as np
import pytest

from orrery.engine import InvalidInputError, Simulation, ics, make_solver


def test_plummer_conserves_energy_over_2000_steps():
    p = ics.plummer(1024, seed=11)
    sim = Simulation(p, make_solver("cpu-direct", precision="f64", softening=0.01), dt=1e-3)
    sim.step(2000)
    assert sim.steps == 2000 and sim.time == pytest.approx(2.0)
    assert abs(sim.energy_error()) <= 1e-4


@pytest.mark.parametrize("integrator", ["kdk", "dkd"])
def test_two_body_circular_orbit_returns(integrator):
    # Equal masses 0.5 at separation 1: circular speed of each is 0.5, period 2*pi*0.5/0.5.
    pos = np.array([[-0.5, 0, 0], [0.5, 0, 0]], float)
    vel = np.array([[0, -0.5, 0], [0, 0.5, 0]], float)
    from orrery.engine import Particles
    p = Particles(pos, vel, np.array([0.5, 0.5]))
    period = 2 * np.pi
    sim = Simulation(p, make_solver("cpu-direct", precision="f64", softening=0.0),
                     dt=period / 2000, integrator=integrator)
    sim.step(2000)
    assert np.allclose(sim.particles.pos, pos, atol=1e-4)
    d = sim.diagnostics()
    assert np.allclose(d.momentum, 0, atol=1e-14)
    assert np.allclose(d.angular_momentum, sim.initial.angular_momentum, rtol=1e-12)


def test_bad_time_step():
    with pytest.raises(InvalidInputError, match="dt"):
        Simulation(ics.plummer(8), make_solver("cpu-direct"), dt=0)
