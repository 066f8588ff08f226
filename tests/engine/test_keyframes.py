"""Keyframes: the whole state stored exactly, committed like frames, read back by the rules of
the format; version-1 files still open."""

import h5py
import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver
from orrery.engine.errors import InvalidInputError, RecordingError
from orrery.engine.recording import Recorder, RecordingFile
from orrery.engine.resume import resume


def _simulation(n=32, solver="cpu-direct", **options):
    return Simulation(ics.make("plummer", n, seed=3), make_solver(solver, **options), dt=0.01)


def test_keyframes_hold_the_state_exactly_in_the_runs_precision(tmp_path):
    sim = _simulation(precision="f64")
    path = tmp_path / "run.h5"
    with Recorder.for_simulation(path, sim, scenario="plummer", dtype="f16",
                                 keyframe_every=2) as recorder:
        states = []
        for _ in range(5):
            recorder.append_simulation(sim)
            states.append(sim.particles)
            sim.step(3)
        recorder.append_last_keyframe(sim)
        recorder.append_last_keyframe(sim)  # the same step twice is stored once
        states.append(sim.particles)
    with RecordingFile(path) as recording:
        assert recording.keyframe_dtype == np.float64 and recording.dtype == np.float16
        assert recording.keyframe_steps.tolist() == [0, 6, 12, 15]
        for index, state in zip(range(4), (states[0], states[2], states[4], states[5])):
            pos, vel = recording.read_keyframe(index)
            assert pos.tobytes() == state.pos.tobytes() and vel.tobytes() == state.vel.tobytes()
        with pytest.raises(IndexError):
            recording.read_keyframe(4)
        assert recording.keyframe_before(3) == 1  # frame 3 is step 9: keyframe of step 6
        assert recording.keyframe_before() == 3


def test_a_keyframe_must_be_in_the_runs_precision_and_order(tmp_path):
    with Recorder(tmp_path / "a.h5", masses=np.ones(4), keyframe_dtype="float32") as recorder:
        with pytest.raises(InvalidInputError, match="float32 states"):
            recorder.append_keyframe(np.zeros((4, 3)), np.zeros((4, 3)), 0.0, 0)
        recorder.append_keyframe(np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32),
                                 1.0, 5)
        with pytest.raises(InvalidInputError, match="increasing step"):
            recorder.append_keyframe(np.zeros((4, 3), np.float32), np.zeros((4, 3), np.float32),
                                     2.0, 5)
    with Recorder(tmp_path / "b.h5", masses=np.ones(4)) as recorder:
        with pytest.raises(InvalidInputError, match="without keyframe_dtype"):
            recorder.append_keyframe(np.zeros((4, 3)), np.zeros((4, 3)), 0.0, 0)
    with pytest.raises(InvalidInputError, match="keyframe_every"):
        Recorder(tmp_path / "c.h5", masses=np.ones(4), keyframe_every=-1)


def test_uncommitted_keyframes_are_not_read(tmp_path):
    sim = _simulation()
    path = tmp_path / "run.h5"
    with Recorder.for_simulation(path, sim, scenario="plummer", keyframe_every=1) as recorder:
        for _ in range(3):
            recorder.append_simulation(sim)
            sim.step()
    with h5py.File(path, "a") as file:  # what a writer killed mid-commit leaves
        file["keyframe_step"][2] = -1
    with RecordingFile(path) as recording:
        assert recording.keyframe_count == 2 and recording.frame_count == 3


def test_a_version_1_recording_opens_without_keyframes(tmp_path):
    path = tmp_path / "old.h5"
    with Recorder(path, masses=np.ones(4)) as recorder:
        recorder.append(np.ones((4, 3)), 0.0, 0)
    with h5py.File(path, "a") as file:
        file.attrs["format_version"] = 1
    with RecordingFile(path) as recording:
        assert recording.format_version == 1 and recording.frame_count == 1
        assert recording.keyframe_count == 0 and recording.keyframe_dtype is None
        with pytest.raises(RecordingError, match="format version 1, from before keyframes"):
            recording.keyframe_before()


@pytest.mark.parametrize("change", ["missing", "shape", "order"])
def test_damaged_keyframes_are_reported(tmp_path, change):
    sim = _simulation()
    path = tmp_path / "run.h5"
    with Recorder.for_simulation(path, sim, scenario="plummer", keyframe_every=1) as recorder:
        for _ in range(2):
            recorder.append_simulation(sim)
            sim.step()
    with h5py.File(path, "a") as file:
        if change == "missing":
            del file["keyframe_velocities"]
        elif change == "shape":
            del file["keyframe_velocities"]
            file["keyframe_velocities"] = np.zeros((2, 31, 3), np.float32)
        else:
            file["keyframe_step"][1] = 0
    with pytest.raises(RecordingError, match="keyframe"):
        RecordingFile(path)


def test_resume_continues_the_run_bit_for_bit(tmp_path):
    whole, path = _simulation(), tmp_path / "run.h5"
    with Recorder.for_simulation(path, whole, scenario="plummer", keyframe_every=1) as recorder:
        recorder.append_simulation(whole)
        whole.step(20)
        recorder.append_simulation(whole)
    resumed = resume(path, from_frame=1).simulation
    assert (resumed.steps, resumed.time) == (whole.steps, whole.time)
    whole.step(100)
    resumed.step(100)
    assert whole.particles.pos.tobytes() == resumed.particles.pos.tobytes()
    assert whole.particles.vel.tobytes() == resumed.particles.vel.tobytes()


def test_fsync_every_n_frames_syncs_what_was_committed(tmp_path, monkeypatch):
    import orrery.engine.recording._layout as layout_module

    synced = []
    real_fsync = layout_module.os.fsync

    def counting_fsync(fd):
        synced.append(recorder.frames_committed)
        real_fsync(fd)

    monkeypatch.setattr(layout_module.os, "fsync", counting_fsync)
    recorder = Recorder(tmp_path / "run.h5", masses=np.ones(8), fsync_every=3,
                        flush_seconds=3600)
    with recorder:
        for step in range(10):
            recorder.append(np.zeros((8, 3)), float(step), step)
    assert synced == [3, 6, 9, 10]  # and at close
    with pytest.raises(InvalidInputError, match="fsync_every"):
        Recorder(tmp_path / "bad.h5", masses=np.ones(8), fsync_every=-2)


@pytest.mark.parametrize("frames, velocities, precision, every", [
    ("f16", False, "f32", 40), ("fixed16", False, "f32", 40), ("f16", False, "f64", 80),
    ("f32", False, "f32", 20), ("f32", True, "f32", 10), ("f16", True, "f64", 40)])
def test_default_keyframes_take_a_tenth_of_the_frames_bytes(tmp_path, frames, velocities,
                                                            precision, every):
    sim = _simulation(precision=precision)
    path = tmp_path / "run.h5"
    with Recorder.for_simulation(path, sim, scenario="plummer", dtype=frames,
                                 velocities=velocities) as recorder:
        assert recorder.keyframe_every == every
        for _ in range(2 * every + 1):
            recorder.append_simulation(sim)
            sim.step(1)
    with h5py.File(path, "r") as file:
        frame_bytes = sum(file[name].id.get_storage_size() for name in ("positions", "velocities")
                          if name in file)
        keyframe_bytes = sum(file[name].id.get_storage_size()
                             for name in ("keyframe_positions", "keyframe_velocities"))
        assert file["keyframe_step"][:].tolist() == [0, every, 2 * every]
    # Three keyframes for 2 * every + 1 frames: a tenth of the bytes, give or take one keyframe.
    assert keyframe_bytes / frame_bytes <= 0.1 * 3 / 2 + 1e-9
