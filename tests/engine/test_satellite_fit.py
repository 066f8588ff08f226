"""The satellite fit: L-BFGS on whole-run gradients recovers a satellite's initial position and
velocity from its particles at the end of the run, starting from a guess several percent off."""

import numpy as np
import pytest

from orrery.engine import make_solver
from orrery.engine.gradients import ReversibleRun
from orrery.engine.satellite_fit import fit, make_system

DT, STEPS = 0.01, 80


def test_the_fit_recovers_the_satellites_initial_offset():
    system = make_system(48, 8, satellite_mass=0.05, seed=3)
    solver = make_solver("cpu-direct", precision="f64", softening=0.05, threads=1)
    truth = np.array([1.2, 0.0, 0.1, 0.0, 0.7, 0.05])
    target = ReversibleRun(system.particles(truth), solver, dt=DT, steps=STEPS)
    start = truth + np.array([0.08, -0.06, 0.05, -0.05, 0.04, 0.03])
    satellite = system.satellite_slice
    result = fit(system, solver, dt=DT, steps=STEPS, start=start,
                 target_positions=target.positions[satellite],
                 target_velocities=target.velocities[satellite])
    assert result.converged, result.message
    # From 0.08 off to within 1e-8 of the truth, in position and velocity alike.
    np.testing.assert_allclose(result.offset, truth, rtol=0, atol=1e-8)
    assert result.loss < 1e-20 and result.evaluations < 50


def test_the_satellite_carries_its_offset():
    system = make_system(8, 4, seed=1)
    offset = np.array([1.0, 2.0, 3.0, 0.1, 0.2, 0.3])
    particles = system.particles(offset)
    satellite = system.satellite_slice
    np.testing.assert_allclose(particles.pos[satellite], system.satellite.pos + offset[:3])
    np.testing.assert_allclose(particles.vel[satellite], system.satellite.vel + offset[3:])
    np.testing.assert_array_equal(particles.pos[:8], system.host.pos)
    assert particles.mass[satellite].sum() == pytest.approx(0.02)


def test_a_recording_needs_frames_at_least_a_step_apart(tmp_path):
    from orrery.engine import InvalidInputError
    from orrery.engine.satellite_fit import record_run

    system = make_system(8, 4, seed=1)
    solver = make_solver("cpu-direct", precision="f64", softening=0.05, threads=1)
    with pytest.raises(InvalidInputError, match="every must be a whole number of at least 1"):
        record_run(tmp_path / "run.h5", system, solver, np.zeros(6), dt=DT, steps=4, every=0,
                   label="target")
    assert not (tmp_path / "run.h5").exists()


def test_the_fit_counts_the_steps_of_each_run_and_backward_pass(tmp_path):
    from orrery.engine.satellite_fit import record_run

    system = make_system(8, 4, seed=1)
    solver = make_solver("cpu-direct", precision="f64", softening=0.05, threads=1)
    truth = np.array([1.2, 0.0, 0.1, 0.0, 0.7, 0.05])
    target = ReversibleRun(system.particles(truth), solver, dt=DT, steps=6)
    steps = []
    result = fit(system, solver, dt=DT, steps=6, start=truth + 0.01, max_iterations=2,
                 target_positions=target.positions[system.satellite_slice],
                 target_velocities=target.velocities[system.satellite_slice],
                 on_step=lambda *step: steps.append(step))
    # Each run evaluated: its six steps forward, then its six back.
    assert steps == [(run, direction, done, 6) for run in range(1, result.evaluations + 1)
                     for direction in ("forward", "backward") for done in range(1, 7)]
    frames = []
    record_run(tmp_path / "run.h5", system, solver, truth, dt=DT, steps=6, every=4,
               label="target", progress=lambda done, total: frames.append((done, total)))
    assert frames == [(4, 6), (6, 6)]
