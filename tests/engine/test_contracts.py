"""Every implementation named in ``engine/contracts.py`` keeps its contract: it has every member,
so no caller needs to probe for one (the device state: tests/engine/gpu/test_gpu_frames.py; the
distributed simulation: tests/engine/test_distributed.py; the snapshot series:
tests/engine/test_snapshots.py)."""

import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver
from orrery.engine.contracts import (AccuracyCalibrated, GravitySimulation, Playback,
                                     SimulationRecorder, SimulationState, SteppedSimulation,
                                     StoredFrames)
from orrery.engine.flock import FlockParameters, FlockSimulation
from orrery.engine.lattice import LatticeState
from orrery.engine.recording import Player, Recorder, RecordingFile
from orrery.engine.solvers import solver_specs
from orrery.engine.tuning import accuracy_table


@pytest.fixture
def particles():
    return ics.plummer(64, seed=3)


@pytest.fixture
def solver():
    return make_solver("cpu-direct", softening=0.05, threads=1)


def test_the_host_states_keep_the_state_contract(particles, solver):
    assert isinstance(solver.bind(particles), SimulationState)
    assert isinstance(LatticeState(solver, particles), SimulationState)


@pytest.mark.parametrize("integrator", ["kdk", "reversible"])
def test_a_gravity_simulation_keeps_its_contract(particles, solver, integrator):
    simulation = Simulation(particles, solver, dt=1e-3, integrator=integrator)
    assert isinstance(simulation, GravitySimulation)
    assert simulation.tracks_energy


def test_a_flock_is_a_stepped_simulation_without_an_energy(particles):
    flock = FlockSimulation(particles, FlockParameters(), dt=0.1)
    assert isinstance(flock, SteppedSimulation)
    assert not isinstance(flock, GravitySimulation) and not flock.tracks_energy
    assert flock.theta_in_use() is None


def test_a_host_state_stages_the_frames_a_recording_stores(particles, solver):
    """The host's frames are the ones the Recorder writes: float16 values narrowed from the
    positions, and a keyframe of the state exactly."""
    state = solver.bind(particles)
    np.testing.assert_array_equal(state.stage_frame("float16").host(),
                                  state.positions().astype(np.float16))
    pos, vel = (snapshot.host() for snapshot in state.stage_state())
    np.testing.assert_array_equal(pos, state.pos)
    np.testing.assert_array_equal(vel, state.vel)
    assert state.device_arrays() is None


def test_a_recorder_its_file_and_its_player_keep_their_contracts(tmp_path, particles, solver):
    simulation = Simulation(particles, solver, dt=1e-3)
    with Recorder.for_simulation(tmp_path / "run.h5", simulation, scenario="plummer") as recorder:
        assert isinstance(recorder, SimulationRecorder)
        recorder.append_simulation(simulation)
    with RecordingFile(tmp_path / "run.h5") as recording:
        assert isinstance(recording, StoredFrames)
        assert recording.frame_count == 1 and not recording.being_written
    with Player(tmp_path / "run.h5") as player:
        assert isinstance(player, Playback)
        assert player.frame_count == 1 and not player.live and player.energy_history() is None


def test_every_solver_with_an_accuracy_option_declares_what_the_accuracy_table_measures():
    calibrated = {name: spec.factory for name, spec in solver_specs().items() if name != "auto"
                  and any(option.name == "accuracy" for option in spec.options)}
    assert sorted(calibrated) == ["cpu-fmm", "cpu-tree", "gpu-fmm", "gpu-tree"]
    for name, factory in calibrated.items():
        assert isinstance(factory, AccuracyCalibrated), name
        assert factory.accuracy_variants, name
        assert all(factory.accuracy_thetas(variant) for variant in factory.accuracy_variants), name
    cpu_tree = solver_specs()["cpu-tree"].factory
    assert cpu_tree.accuracy_thetas({"quadrupole": True}) == accuracy_table.DEFAULT_THETAS
