"""The validation layer at the engine's boundary (issue 18): solver options, Particles,
particle counts, time steps and the environment refuse what cannot be simulated, with an
:class:`InvalidInputError` that names it, instead of NaN, silent wrapping or a raw traceback."""

import math
import os

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Particles, Simulation, ics, make_solver
from orrery.engine.cpu_features import build_info, simd_level
from orrery.engine.particles import check_count
from orrery.engine.solvers import solver_specs
from orrery.engine.options import MAX_SOFTENING, MAX_THREADS

WITH_SOFTENING = [name for name, spec in solver_specs().items()
                  if any(option.name == "softening" for option in spec.options)]
WITH_THETA = [name for name, spec in solver_specs().items()
              if any(option.name == "theta" for option in spec.options)]


@pytest.mark.parametrize("solver", WITH_SOFTENING)
@pytest.mark.parametrize("softening", [math.nan, math.inf, -math.inf, 1e200])
def test_softening_must_be_finite_and_sensible_for_every_solver(solver, softening):
    with pytest.raises(InvalidInputError, match="softening must be"):
        make_solver(solver, softening=softening)


@pytest.mark.parametrize("solver", WITH_THETA)
def test_theta_nan_is_refused_by_every_tree(solver):
    with pytest.raises(InvalidInputError, match="theta must be a finite number"):
        make_solver(solver, theta=math.nan)


@pytest.mark.parametrize("threads", [0, MAX_THREADS + 1, 10 ** 6, 4294967296])
@pytest.mark.parametrize("solver", ["cpu-direct", "cpu-tree", "reference", "auto"])
def test_thread_counts_beyond_the_bound_are_refused_before_any_thread_starts(solver, threads):
    with pytest.raises(InvalidInputError, match="threads must be"):
        make_solver(solver, threads=threads)


@pytest.mark.parametrize("threads", [2.5, True, "many", math.inf])
def test_threads_must_be_an_integer(threads):
    with pytest.raises(InvalidInputError, match="threads must be an integer"):
        make_solver("cpu-direct", threads=threads)


def test_integral_values_of_other_types_are_accepted():
    assert make_solver("cpu-direct", threads=2.0).threads == 2
    assert make_solver("cpu-direct", threads=np.int64(3)).threads == 3
    assert make_solver("cpu-direct", softening=MAX_SOFTENING).softening == MAX_SOFTENING


def _plummer64(n=32, scale=1.0):
    p = ics.plummer(n, seed=1)
    return Particles(p.pos * scale, p.vel, p.mass)


def test_float64_positions_beyond_the_float32_range_are_refused_by_f32_solvers():
    particles = _plummer64(scale=1e39)
    for solver in ("cpu-direct", "cpu-tree"):
        f32 = make_solver(solver, precision="f32")
        with pytest.raises(InvalidInputError, match="too large for float32"):
            Simulation(particles, f32, dt=1e-3)
        with pytest.raises(InvalidInputError, match="too large for float32"):
            f32.accelerations(particles.pos, particles.mass)
    # float64 holds them, and the forces are finite
    acc = make_solver("cpu-direct", precision="f64").accelerations(particles.pos, particles.mass)
    assert np.isfinite(acc).all()


def test_positions_whose_squared_distances_overflow_are_refused():
    # 1e20 fits in float32, but (2e20)^2 does not: the force would silently be zero.
    with pytest.raises(InvalidInputError, match="too large for float32"):
        make_solver("cpu-direct").accelerations(np.array([[1e20, 0, 0], [-1e20, 0, 0]], np.float32),
                                                np.ones(2, np.float32))


def test_float64_velocities_beyond_the_float32_range_are_refused():
    p = _plummer64()
    fast = Particles(p.pos, p.vel * 1e300, p.mass)
    with pytest.raises(InvalidInputError, match="velocity of particle 0 .* too large for float32"):
        Simulation(fast, make_solver("cpu-direct", precision="f32"), dt=1e-3)
    with pytest.raises(InvalidInputError, match="velocity .* too large for float32"):
        Particles(p.pos.astype(np.float32), p.vel * 1e300, p.mass)


@pytest.mark.parametrize("labels, message", [
    ([0, 0, 300], "label 300 of particle 2 is outside 0..1"),
    ([0, -1, 1], "label -1 of particle 1"),
    ([0, 2, 1], "label 2 of particle 1"),
    ([0, 0.5, 1], "must be integers"),
    (["a", "b", "c"], "must be integers"),
])
def test_population_labels_outside_their_names_are_refused_not_wrapped(labels, message):
    p = _plummer64(3)
    with pytest.raises(InvalidInputError, match=message):
        Particles(p.pos, p.vel, p.mass, np.array(labels), ("a", "b"))


def test_population_names_are_checked():
    p = _plummer64(3)
    for names, message in [((), "0 population names"), (tuple(map(str, range(257))), "257"),
                           ("ab", "sequence of strings"), (("a", 2), "sequence of strings")]:
        with pytest.raises(InvalidInputError, match=message):
            Particles(p.pos, p.vel, p.mass, None, names)
    kept = Particles(p.pos, p.vel, p.mass, np.array([0.0, 1.0, 255.0]), tuple(map(str, range(256))))
    assert kept.population.dtype == np.uint8 and kept.population.tolist() == [0, 1, 255]


def test_a_particle_count_too_large_for_memory_says_what_it_would_need():
    with pytest.raises(InvalidInputError, match=r"1,000,000,000,000 particles need at least 51.8 TiB"):
        ics.plummer(10 ** 12)
    with pytest.raises(InvalidInputError, match="positive integer"):
        check_count(2.5)
    assert check_count(7.0) == 7


@pytest.mark.parametrize("dt", [math.inf, math.nan, 0.0, -1e-3, "0.1"])
def test_the_time_step_must_be_positive_and_finite(dt):
    with pytest.raises(InvalidInputError, match="time step dt"):
        Simulation(_plummer64(), make_solver("cpu-direct"), dt=dt)


@pytest.mark.parametrize("solver", ["reference", "cpu-direct", "cpu-tree", "auto"])
def test_one_particle_has_zero_energy_error_not_a_division_by_zero(solver):
    sim = Simulation(ics.plummer(1), make_solver(solver), dt=1e-3)
    sim.step(3)
    assert sim.initial.total == 0 and sim.energy_error() == 0.0


def test_a_state_that_overflows_stops_the_cpu_run_with_an_error():
    sim = Simulation(_plummer64(), make_solver("cpu-direct"), dt=1e30)
    with pytest.raises(InvalidInputError, match="not finite"), np.errstate(over="ignore"):
        sim.step(3)


@pytest.fixture
def undecodable_simd(monkeypatch):
    monkeypatch.setitem(os.environb, b"ORRERY_SIMD", b"avx\xff")


def test_an_orrery_simd_that_is_not_text_is_a_clear_error(undecodable_simd):
    for call in (build_info, simd_level, lambda: make_solver("cpu-direct")):
        with pytest.raises(InvalidInputError, match=r"ORRERY_SIMD must be scalar, avx2, avx512, neon or sve, got b'avx\\xff'"):
            call()


def test_float32_arrays_go_to_a_float64_solver_without_warnings():
    import warnings

    from orrery.engine import ics, make_solver

    particles = ics.plummer(256, seed=1).astype("f32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acc = make_solver("cpu-direct", precision="f64").accelerations(particles.pos,
                                                                       particles.mass)
    assert acc.dtype.name == "float64"
