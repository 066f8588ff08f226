"""Bad input to the Python API raises Orrery's own InvalidInputError (a ValueError), never a
raw NumPy or native error, and property setters check what the constructor checks (issue 42)."""

import math

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Simulation, ics, make_solver


@pytest.fixture
def simulation():
    return Simulation(ics.plummer(32, seed=1), make_solver("cpu-direct"), dt=1e-3)


def test_invalid_input_error_is_a_value_error():
    assert issubclass(InvalidInputError, ValueError)


@pytest.mark.parametrize("dt", [0, -1e-3, math.nan, math.inf, "0.1", None, True])
def test_the_dt_setter_refuses_what_the_constructor_refuses(simulation, dt):
    with pytest.raises(InvalidInputError, match="time step dt must be a positive finite"):
        Simulation(ics.plummer(8), make_solver("cpu-direct"), dt=dt)
    with pytest.raises(InvalidInputError, match="time step dt must be a positive finite"):
        simulation.dt = dt
    assert simulation.dt == 1e-3


def test_the_dt_setter_changes_the_steps_to_come(simulation):
    simulation.dt = 2e-3
    simulation.step(2)
    assert simulation.time == pytest.approx(4e-3)


@pytest.mark.parametrize("count", [math.nan, math.inf, -1, 2.5, "3", None])
def test_step_refuses_a_count_that_is_no_whole_number_of_steps(simulation, count):
    with pytest.raises(InvalidInputError, match="step count"):
        simulation.step(count)
    assert simulation.steps == 0


def test_step_takes_a_whole_float_count(simulation):
    simulation.step(2.0)
    assert simulation.steps == 2


@pytest.mark.parametrize("make, message", [
    (lambda: ics.uniform_cube(100, side=0), "side must be a positive"),
    (lambda: ics.uniform_cube(100, side=math.nan), "side must be a positive"),
    (lambda: ics.uniform_cube(100, virial_ratio=-1), "virial_ratio must be a non-negative"),
    (lambda: ics.gaussian_blob(100, sigma=-2), "sigma must be a positive"),
    (lambda: ics.hernquist(100, scale=math.inf), "scale must be a positive"),
    (lambda: ics.plummer(math.nan), "particle count must be a positive integer"),
    (lambda: ics.plummer(math.inf), "particle count must be a positive integer"),
    (lambda: ics.plummer(10, seed=-1), "seed must be an integer"),
    (lambda: ics.plummer(10, seed="x"), "seed must be an integer"),
])
def test_initial_conditions_refuse_bad_parameters(make, message):
    with pytest.raises(InvalidInputError, match=message):
        make()


@pytest.mark.parametrize("potential", ["yes", 1, None])
def test_accelerations_refuse_a_potential_flag_that_is_not_a_bool(potential):
    particles = ics.plummer(16)
    for name in ("cpu-direct", "auto"):
        with pytest.raises(InvalidInputError, match="potential must be True or False"):
            make_solver(name).accelerations(particles.pos, particles.mass, potential=potential)


def test_accelerations_of_more_particles_than_memory_holds_are_refused_before_any_check():
    import time

    n = 2**33  # a zero-stride view: no memory of its own, 2**34 * 3 / 2 elements to check
    pos = np.lib.stride_tricks.as_strided(np.zeros(3), shape=(n, 3), strides=(0, 8))
    mass = np.lib.stride_tricks.as_strided(np.ones(1), shape=(n,), strides=(0,))
    start = time.perf_counter()
    with pytest.raises(InvalidInputError, match=f"{n:,} particles need about 448 GiB for one "
                                                "float64 force evaluation"):
        make_solver("cpu-direct", precision="f64").accelerations(pos, mass)
    assert time.perf_counter() - start < 1.0
