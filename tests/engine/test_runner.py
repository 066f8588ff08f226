"""The solver thread: frames are whole steps, controls apply between steps, failures are kept."""

import time

import numpy as np
import pytest

from orrery.engine.errors import InvalidInputError
from orrery.engine.runner import RunSettings, SimulationRunner
from orrery.engine.solvers import HostState, Solver

SMALL = RunSettings(scenario="plummer", n=64, seed=1, solver="cpu-direct", dt=1e-3)


class _StepNumberState(HostState):
    """Each drift writes the new step number into every position, in two halves with a pause
    between, so a frame taken during a step would show two different numbers."""

    def __init__(self, solver, particles):
        super().__init__(solver, particles)
        self.drifts = 0

    def drift(self, dt):
        self.drifts += 1
        half = self.n // 2
        self.pos[:half] = self.drifts
        time.sleep(0.0005)
        self.pos[half:] = self.drifts


class _StepNumberSolver(Solver):
    name = "step-number"

    def __init__(self, *, fail_after: int | None = None, **_options):
        super().__init__(precision="f64", softening=0.01)
        self.calls = 0
        self.fail_after = fail_after

    def _compute(self, pos, mass, potential):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise RuntimeError("solver exploded on purpose")
        return np.zeros_like(pos), (np.zeros(len(mass)) if potential else None)

    def bind(self, particles):
        return _StepNumberState(self, particles)


def _wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def test_frames_never_mix_two_steps():
    runner = SimulationRunner(SMALL, energy_every=1000,
                              solver_factory=lambda name, **options: _StepNumberSolver())
    try:
        seen = set()
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            frame = runner.latest()
            if frame.step == 0:  # the initial conditions, before any drift
                continue
            values = np.unique(frame.positions)
            assert values.size == 1 and values[0] == frame.step, (
                f"frame of step {frame.step} holds positions {values[:4]}")
            seen.add(frame.step)
        assert len(seen) > 5, "the solver thread should have published several steps"
        assert not frame.positions.flags.writeable
    finally:
        runner.close()
    assert not runner.is_alive


def test_pause_single_step_and_resume():
    runner = SimulationRunner(SMALL)
    try:
        assert _wait_until(lambda: runner.latest().step >= 3)
        runner.pause()
        assert _wait_until(lambda: runner.latest().stats["paused"])
        frozen = runner.latest().step
        time.sleep(0.1)
        assert runner.latest().step == frozen
        runner.step(2)
        assert _wait_until(lambda: runner.latest().step == frozen + 2)
        time.sleep(0.05)
        assert runner.latest().step == frozen + 2 and runner.paused
        runner.resume()
        assert _wait_until(lambda: runner.latest().step > frozen + 4)
    finally:
        runner.close()
    assert not runner.is_alive


def test_parameter_changes_apply_between_steps_and_reset_restarts():
    runner = SimulationRunner(SMALL, energy_every=2)
    try:
        assert _wait_until(lambda: runner.latest().step >= 4)
        runner.update(dt=2e-3, softening=0.05)
        assert _wait_until(lambda: runner.latest().stats["dt"] == 2e-3)
        assert "softening=0.05" in runner.solver_description
        times, errors = runner.energy_history()
        assert times.size == errors.size and np.all(np.abs(errors) < 1e-2)
        runner.update(n=96)
        assert _wait_until(lambda: runner.latest().positions.shape == (96, 3))
        assert runner.population.shape == (96,)
        frame = runner.latest()
        assert frame.stats["n"] == 96 and frame.stats["steps_per_second"] >= 0
    finally:
        runner.close()


def test_solver_exception_is_reported_and_stops_the_simulation():
    runner = SimulationRunner(
        SMALL, solver_factory=lambda name, **options: _StepNumberSolver(fail_after=6))
    try:
        assert _wait_until(lambda: runner.error is not None)
        assert "solver exploded on purpose" in runner.error
        assert _wait_until(lambda: runner.latest().stats["error"] is not None)
        stopped = runner.latest().step
        time.sleep(0.1)
        assert runner.latest().step == stopped and runner.is_alive
    finally:
        runner.close()
    assert not runner.is_alive


def test_bad_scenario_change_is_reported_not_raised():
    runner = SimulationRunner(SMALL, paused=True)
    try:
        runner.update(solver="no-such-solver")
        assert _wait_until(lambda: runner.error is not None)
        assert "no-such-solver" in runner.error
        runner.update(solver="cpu-direct")
        assert _wait_until(lambda: runner.error is None)
    finally:
        runner.close()


def test_invalid_time_step_is_refused_at_once():
    runner = SimulationRunner(SMALL, paused=True)
    try:
        with pytest.raises(InvalidInputError, match="dt must be positive"):
            runner.update(dt=0.0)
        with pytest.raises(InvalidInputError, match="unknown run settings"):
            runner.update(gravity=2.0)
    finally:
        assert runner.close(timeout=10)


def test_auto_says_which_solver_it_chose_and_why():
    runner = SimulationRunner(RunSettings(scenario="plummer", n=64, solver="auto"))
    try:
        assert runner.solver_name == "auto"
        assert runner.solver_description.startswith("auto: cpu-direct")
        assert "not calibrated" in runner.solver_description or "calibrated on" in runner.solver_description
    finally:
        assert runner.close(timeout=10)


def test_recording_from_the_runner_holds_every_kth_step_and_ends_with_a_restart(tmp_path):
    from orrery.engine.recording import RecordingFile

    path = tmp_path / "live.h5"
    runner = SimulationRunner(SMALL, paused=True)
    try:
        runner.start_recording(path, every=2, precision="f32")
        runner.step(6)
        assert _wait_until(lambda: runner.latest().step == 6)
        assert runner.latest().stats["recording"] == (str(path), 4)
        runner.update(n=32)  # a restart finishes the file
        assert _wait_until(lambda: runner.latest().stats["n"] == 32)
        assert runner.latest().stats["recording"] is None
    finally:
        assert runner.close(timeout=10)
    with RecordingFile(path) as recording:
        assert recording.frame_count == 4 and recording.steps.tolist() == [0, 2, 4, 6]
        assert recording.n == 64
    with pytest.raises(InvalidInputError, match="every"):
        runner.start_recording(path, every=0)
