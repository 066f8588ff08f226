"""Branching a live run off a replay (the viewer's B key), through the controller layer without
a display: the branch starts at the keyframe at or before the frame shown and, for cpu-direct,
follows the recorded run bit for bit."""

import time

import numpy as np
import pytest

from orrery.app.cli import main
from orrery.app.viewer._branch import BranchError, branch, can_branch
from orrery.engine.recording import Player, Recorder, RecordingError, RecordingFile

RUN = ["run", "--ic", "plummer", "--n", "128", "--seed", "3", "--dt", "0.002",
       "--solver", "cpu-direct", "--precision", "f32", "--softening", "0.05", "--quiet",
       "--steps", "40", "--every", "2", "--keyframe-every", "5"]


def _frame_at(runner, step: int, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = runner.latest()
        if frame is not None and frame.step == step:
            return frame
        time.sleep(0.01)
    raise AssertionError(f"the branched run never showed step {step}")


def test_a_branch_continues_the_shown_frame_from_its_keyframe_exactly(tmp_path):
    path = tmp_path / "run.h5"
    assert main(RUN + ["--record", str(path)]) == 0
    with Player(path) as player:
        assert can_branch(player)
        player.seek(13)  # step 26; keyframes every 5 frames: frame 10, step 20
        runner = branch(player)
    try:
        assert runner.paused and runner.solver_name == "cpu-direct"
        with RecordingFile(path) as recording:
            start = _frame_at(runner, 20)
            keyframe_pos, _ = recording.read_keyframe(2)
            assert np.array_equal(start.positions, keyframe_pos)
            assert start.time == recording.keyframe_times[2]
            runner.step(10)
            later = _frame_at(runner, 30)
            assert np.array_equal(later.positions, recording.read(15))  # step 30, recorded f32
    finally:
        runner.close()


def test_a_recording_without_keyframes_cannot_be_branched_and_says_why(tmp_path):
    path = tmp_path / "plain.h5"
    with Recorder(path, masses=np.ones(4), attributes={"solver": "cpu-direct"}) as recorder:
        recorder.append(np.zeros((4, 3)), 0.0, 0)
    with Player(path) as player:
        with pytest.raises(RecordingError, match="holds no keyframes"):
            branch(player)


def test_only_a_replay_can_be_branched():
    with pytest.raises(BranchError, match="only a replay"):
        branch(object())
