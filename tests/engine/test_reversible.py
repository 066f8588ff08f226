"""The reversible integrator: K steps forward then K back return the start bit for bit with every
solver, and a run leaving its lattice stops with an error instead of wrapping."""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Particles, Simulation, ics, make_solver
from orrery.engine.lattice import LATTICE_LIMIT, Lattice


def _lattice_state(sim):
    state = sim._state
    return state.qpos.copy(), state.qvel.copy()


def _round_trip(solver, particles, *, steps=12, dt=2e-3):
    sim = Simulation(particles, solver, dt=dt, integrator="reversible")
    start = _lattice_state(sim)
    sim.step(steps)
    moved = _lattice_state(sim)
    sim.step_back(steps)
    return sim, start, moved, _lattice_state(sim)


CPU_SOLVERS = [("cpu-direct", {}), ("cpu-tree", {"theta": 0.6}), ("cpu-fmm", {}),
               ("reference", {})]


@pytest.mark.parametrize("threads", [1, 2, 7])
@pytest.mark.parametrize("name, options", CPU_SOLVERS)
def test_steps_back_return_every_cpu_solver_to_the_start_bit_for_bit(name, options, threads):
    precisions = ["f64"] if name == "reference" else ["f32", "f64"]
    for precision in precisions:
        solver = make_solver(name, precision=precision, softening=0.05, threads=threads, **options)
        sim, start, moved, back = _round_trip(solver, ics.plummer(300, seed=4))
        assert not np.array_equal(start[0], moved[0]) and not np.array_equal(start[1], moved[1])
        np.testing.assert_array_equal(back[0], start[0])
        np.testing.assert_array_equal(back[1], start[1])
        assert sim.steps == 0


def test_steps_back_past_the_start_run_backward_in_time():
    solver = make_solver("cpu-direct", precision="f64", softening=0.05)
    particles = ics.plummer(64, seed=2)
    sim = Simulation(particles, solver, dt=1e-3, integrator="reversible")
    start = _lattice_state(sim)
    sim.step_back(5)
    assert sim.steps == -5
    sim.step(5)
    np.testing.assert_array_equal(_lattice_state(sim)[0], start[0])
    np.testing.assert_array_equal(_lattice_state(sim)[1], start[1])


def test_reversible_run_follows_the_floating_point_leapfrog():
    particles = ics.plummer(128, seed=5)
    solver = make_solver("cpu-direct", precision="f64", softening=0.05)
    lattice_run = Simulation(particles, solver, dt=1e-3, integrator="reversible")
    float_run = Simulation(particles, solver, dt=1e-3, integrator="dkd")
    lattice_run.step(50)
    float_run.step(50)
    np.testing.assert_allclose(lattice_run.particles.pos, float_run.particles.pos, atol=1e-12)
    np.testing.assert_allclose(lattice_run.particles.vel, float_run.particles.vel, atol=1e-11)
    assert abs(lattice_run.energy_error()) < 1e-4


def test_the_default_lattice_covers_the_state_with_headroom():
    particles = ics.plummer(100, seed=1)
    lattice = Lattice.for_state(particles.pos, particles.vel, particles.mass, 0.01)
    largest = np.abs(particles.pos).max()
    assert 64 * largest <= lattice.position_range <= 128 * largest
    assert lattice.velocity_range >= 64 * np.sqrt(2 / 0.01)
    # Powers of two: the step factors are exact and odd in dt.
    for unit in (lattice.position_unit, lattice.velocity_unit):
        assert np.frexp(unit)[0] == 0.5
    # Finer than float64 at the state's own scale.
    assert lattice.position_unit < np.spacing(largest)


def test_a_run_leaving_the_lattice_stops_with_an_error_and_keeps_its_last_state():
    # Two bodies flying apart, on a lattice barely wider than their start.
    pos = np.array([[-1.0, 0, 0], [1.0, 0, 0]])
    vel = np.array([[-1.0, 0, 0], [1.0, 0, 0]])
    particles = Particles(pos, vel, np.array([1e-6, 1e-6]))
    lattice = Lattice.covering(1.5, 4.0)
    sim = Simulation(particles, make_solver("cpu-direct", precision="f64", softening=0.1), dt=0.1,
                     integrator="reversible", lattice=lattice)
    with pytest.raises(InvalidInputError, match="left the reversible integrator's lattice"):
        sim.step(100)
    assert 0 < sim.steps < 100
    qpos = sim._state.qpos
    assert np.abs(qpos).max() <= LATTICE_LIMIT
    # The state is that of the last whole step: still reversible to the start.
    sim.step_back(sim.steps)
    np.testing.assert_array_equal(sim._state.qpos, lattice.quantize_positions(pos))


def test_a_state_outside_the_lattice_is_refused():
    particles = Particles(np.array([[0.0, 0, 0], [10.0, 0, 0]]), np.zeros((2, 3)), np.ones(2))
    with pytest.raises(InvalidInputError, match="particle 1 left"):
        Simulation(particles, make_solver("cpu-direct"), dt=0.1, integrator="reversible",
                   lattice=Lattice.covering(5.0, 1.0))


def test_step_back_needs_the_reversible_integrator():
    sim = Simulation(ics.plummer(8), make_solver("cpu-direct"), dt=0.1)
    with pytest.raises(InvalidInputError, match="reversible"):
        sim.step_back()



def test_a_step_larger_than_the_lattice_is_refused_before_it_can_wrap():
    from orrery.engine.lattice import _advance

    q = np.array([[LATTICE_LIMIT, 0, 0]], dtype=np.int64)
    with pytest.raises(InvalidInputError, match="one step would change the position of particle 0"):
        _advance(q, np.array([[float(LATTICE_LIMIT), 0.0, 0.0]]), "position", 1.0)
    with pytest.raises(InvalidInputError, match="particle 0"):
        _advance(q, np.array([[np.nan, 0.0, 0.0]]), "position", 1.0)
    with pytest.raises(InvalidInputError, match="left the reversible integrator's lattice"):
        _advance(q, np.array([[1.0, 0.0, 0.0]]), "position", 1.0)
    assert q[0, 0] == LATTICE_LIMIT  # untouched by the refused steps
