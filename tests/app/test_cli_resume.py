"""``orrery run --resume``: a run continued from a keyframe is the uninterrupted run."""

import numpy as np
import pytest

from orrery.app.cli import main
from orrery.engine.recording import Recorder, RecordingFile


def _run(tmp_path, name, *extra):
    path = tmp_path / name
    code = main(["run", "--quiet", "--record", str(path), *extra])
    assert code == 0
    return path


def _last_state(path):
    with RecordingFile(path) as recording:
        index = recording.keyframe_count - 1
        return (int(recording.keyframe_steps[index]), float(recording.keyframe_times[index]),
                *recording.read_keyframe(index))


@pytest.mark.parametrize("solver", ["cpu-direct", "cpu-tree", "reference"])
def test_a_resumed_run_is_bit_identical_to_the_uninterrupted_one(tmp_path, solver):
    common = ["--n", "64", "--every", "10", "--keyframe-every", "5", "--dt", "0.01"]
    whole = _run(tmp_path, "whole.h5", "--solver", solver, "--steps", "200", *common)
    with RecordingFile(whole) as recording:
        assert recording.keyframe_steps.tolist() == [0, 50, 100, 150, 200]
        assert recording.attributes["seed"] == 0 and recording.attributes["n"] == 64
        frame = int(np.flatnonzero(recording.steps == 100)[0])
    # frame + 3 (step 130) is no keyframe: the run starts from the one at step 100 and replays
    # the 30 steps to it
    resumed = _run(tmp_path, "resumed.h5", "--resume", str(whole), "--from-frame",
                   str(frame + 3), "--steps", "70", "--every", "10", "--keyframe-every", "5")
    with RecordingFile(resumed) as recording:
        assert recording.steps[0] == 130 and recording.steps[-1] == 200
        assert recording.attributes["resumed_from_step"] == 130
        assert recording.attributes["resumed_from_keyframe_step"] == 100
        assert recording.attributes["solver"] == solver
    step, time, pos, vel = _last_state(whole)
    step_r, time_r, pos_r, vel_r = _last_state(resumed)
    assert (step, time) == (step_r, time_r)
    assert pos.dtype == pos_r.dtype and pos.tobytes() == pos_r.tobytes()
    assert vel.tobytes() == vel_r.tobytes()
    # and every frame on the way agrees bitwise with the original's
    with RecordingFile(whole) as a, RecordingFile(resumed) as b:
        offset = int(np.flatnonzero(a.steps == 130)[0])
        for index in range(b.frame_count):
            assert a.read(offset + index).tobytes() == b.read(index).tobytes()


def test_the_last_state_is_a_keyframe_and_resume_defaults_to_it(tmp_path):
    whole = _run(tmp_path, "whole.h5", "--solver", "cpu-direct", "--n", "32", "--steps", "37",
                 "--every", "10", "--keyframe-every", "0", "--record-fsync", "2")
    with RecordingFile(whole) as recording:
        assert recording.keyframe_steps.tolist() == [37]
    resumed = _run(tmp_path, "more.h5", "--resume", str(whole), "--steps", "3")
    assert _last_state(resumed)[0] == 40


def _refused(capsys, arguments, message):
    assert main(["run", "--quiet", *arguments]) != 0
    assert message in capsys.readouterr().err


def test_resume_refuses_what_would_change_the_run(tmp_path, capsys):
    whole = _run(tmp_path, "whole.h5", "--solver", "cpu-direct", "--n", "16", "--steps", "5")
    for flags, message in ((["--n", "8"], "--n"), (["--dt", "0.5"], "--dt"),
                           (["--solver", "reference"], "recorded solver"),
                           (["--integrator", "dkd"], "recorded integrator"),
                           (["--from-frame", "99"], "outside 0..")):
        _refused(capsys, ["--resume", str(whole), *flags], message)
    _refused(capsys, ["--from-frame", "0"], "--resume")


def test_a_recording_without_keyframes_cannot_be_resumed(tmp_path, capsys):
    path = tmp_path / "frames.h5"
    with Recorder(path, masses=np.ones(4)) as recorder:
        recorder.append(np.zeros((4, 3)), 0.0, 0)
    _refused(capsys, ["--resume", str(path)], "holds no keyframes")


def test_a_recording_of_auto_stores_the_solver_it_chose_and_resumes_with_it(tmp_path):
    whole = _run(tmp_path, "whole.h5", "--solver", "auto", "--n", "64", "--steps", "20",
                 "--every", "10", "--dt", "0.01")
    with RecordingFile(whole) as recording:
        assert recording.attributes["solver"] == "cpu-direct"
        assert recording.attributes["solver_requested"] == "auto"
        assert "cpu-direct" in recording.attributes["solver_choice"]
    resumed = _run(tmp_path, "resumed.h5", "--resume", str(whole), "--steps", "10")
    with RecordingFile(resumed) as recording:
        assert recording.attributes["solver"] == "cpu-direct"


def _with_attributes(tmp_path, **changes):
    """A resumable recording whose attributes are then changed to ``changes``."""
    import h5py

    path = _run(tmp_path, "edited.h5", "--solver", "cpu-direct", "--n", "16", "--steps", "5")
    with h5py.File(path, "r+") as file:
        for name, value in changes.items():
            file.attrs[name] = value
    return path


@pytest.mark.parametrize("changes, message", [
    ({"dt": "abc"}, "its dt 'abc' is not a positive finite number"),
    ({"dt": np.array([0.1, 0.2])}, "is not a positive finite number"),
    ({"dt": np.nan}, "its dt nan is not a positive finite number"),
    ({"dt": -0.01}, "its dt -0.01 is not a positive finite number"),
    ({"solver": np.array([1, 2])}, "unknown to this Orrery"),
    ({"integrator": np.int64(3)}, "integrator 3 is not a name"),
    ({"model": "flock"}, "records a 'flock' run"),
    ({"model": np.array([1, 2])}, "its model attribute array([1, 2]) is not a name"),
])
def test_resume_refuses_a_recording_whose_run_settings_are_damaged(tmp_path, capsys, changes,
                                                                   message):
    path = _with_attributes(tmp_path, **changes)
    assert main(["run", "--quiet", "--resume", str(path), "--steps", "2"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_resume_from_a_frame_that_is_no_keyframe_says_where_it_starts(tmp_path, capsys):
    whole = _run(tmp_path, "whole.h5", "--solver", "cpu-direct", "--n", "16", "--steps", "40",
                 "--every", "10", "--keyframe-every", "2")
    capsys.readouterr()
    assert main(["run", "--resume", str(whole), "--from-frame", "3", "--steps", "1",
                 "--record", str(tmp_path / "more.h5")]) == 0
    assert "resuming from keyframe 1 (step 20); replayed 10 step(s) from there to frame 3 " \
           "(step 30)" in capsys.readouterr().err


def test_a_resumed_run_records_in_the_resumed_recordings_precision_unless_told(tmp_path):
    whole = _run(tmp_path, "whole.h5", "--solver", "cpu-direct", "--n", "16", "--steps", "20",
                 "--every", "10", "--record-precision", "f16")
    kept = _run(tmp_path, "kept.h5", "--resume", str(whole), "--steps", "10")
    told = _run(tmp_path, "told.h5", "--resume", str(whole), "--steps", "10",
                "--record-precision", "f32")
    with RecordingFile(kept) as a, RecordingFile(told) as b:
        assert a.encoding == "float16" and b.encoding == "float32"
