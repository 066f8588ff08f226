"""Movies: decoded back with PyAV — frame count, size, frames that follow the camera, and the
same inputs giving the same movie."""

import ctypes.util

import numpy as np
import pytest

pytest.importorskip("av", reason="the video extra (PyAV) is not installed")
if ctypes.util.find_library("EGL") is None:
    pytest.skip("libEGL is absent (apt: libegl1 libegl-mesa0 libgl1-mesa-dri)",
                allow_module_level=True)

from orrery.app.cli import main  # noqa: E402
from orrery.app.export import (FileFrames, LiveFrames, MovieSettings, read_video,  # noqa: E402
                               render_movie, source_index)
from orrery.app.render._camera_path import CameraKey, CameraPath  # noqa: E402
from orrery.engine import Simulation, ics, make_solver  # noqa: E402
from orrery.engine.errors import InvalidInputError  # noqa: E402
from orrery.engine.recording import Recorder, RecordingFile  # noqa: E402

SIZE = (96, 64)


def _recording(path, frames=6):
    sim = Simulation(ics.plummer(500, seed=2), make_solver("cpu-direct", softening=0.05),
                     dt=0.01)
    with Recorder.for_simulation(path, sim, scenario="plummer") as recorder:
        for _ in range(frames):
            recorder.append_simulation(sim)
            sim.step(5)
    return path


def _path():
    return CameraPath([CameraKey(0.0, (6.0, 0.0, 1.0), (0, 0, 0)),
                       CameraKey(0.5, (0.0, 6.0, 1.0), (0, 0, 0))])


def test_a_recording_becomes_a_movie_of_one_frame_per_recorded_frame(tmp_path):
    with RecordingFile(_recording(tmp_path / "run.h5")) as file:
        written = render_movie(FileFrames(file), tmp_path / "movie.mp4",
                               MovieSettings(size=SIZE, fps=12))
    frames, rate, metadata = read_video(tmp_path / "movie.mp4")
    assert written == len(frames) == 6 and rate == 12
    assert frames[0].shape == (SIZE[1], SIZE[0], 3)
    assert frames[0].max() > 100  # particles are drawn
    assert metadata["orrery_movie"]["size"] == list(SIZE)


def test_frames_follow_the_camera_path_and_two_renders_are_identical(tmp_path):
    with RecordingFile(_recording(tmp_path / "run.h5", frames=2)) as file:
        settings = MovieSettings(size=SIZE, fps=12, camera=_path())
        for name in ("a.mp4", "b.mp4"):
            render_movie(FileFrames(file), tmp_path / name, settings)
    first, _, metadata = read_video(tmp_path / "a.mp4")
    second, _, _ = read_video(tmp_path / "b.mp4")
    assert len(first) == 7  # the path's 0.5 s at 12 fps, both ends included
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert not np.array_equal(first[0], first[-1])
    assert metadata["orrery_movie"]["camera"][1]["position"] == [0.0, 6.0, 1.0]


def test_a_live_run_is_filmed_forwards_a_fixed_number_of_steps_per_frame(tmp_path):
    sim = Simulation(ics.plummer(300, seed=1), make_solver("cpu-direct", softening=0.05), dt=0.01)
    frames = LiveFrames(sim, count=4, steps_per_frame=3)
    render_movie(frames, tmp_path / "live.mp4", MovieSettings(size=SIZE, fps=30))
    assert sim.steps == 9
    assert len(read_video(tmp_path / "live.mp4")[0]) == 4


def test_source_frames_are_spread_evenly_over_the_movie():
    assert [source_index(i, 5, 3) for i in range(5)] == [0, 0, 1, 2, 2]
    assert source_index(0, 1, 10) == 0


def test_render_command_films_a_recording_a_scenario_and_refuses_bad_settings(tmp_path, capsys):
    recording = _recording(tmp_path / "run.h5", frames=3)
    assert main(["render", str(recording), "--out", str(tmp_path / "r.mp4"), "--size", "64x48",
                 "--quiet"]) == 0
    assert "3 frames, 64x48" in capsys.readouterr().out
    assert main(["render", "plummer", "--n", "200", "--frames", "2", "--out",
                 str(tmp_path / "p.mp4"), "--size", "64x48", "--quiet"]) == 0
    assert len(read_video(tmp_path / "p.mp4")[0]) == 2
    assert main(["render", str(recording), "--out", str(tmp_path / "x.mp4"), "--size", "0x0"]) == 2
    assert "size must be positive" in capsys.readouterr().err
    assert main(["render", str(tmp_path / "none.h5"), "--out", str(tmp_path / "y.mp4")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_movie_settings_refuse_two_lengths():
    with pytest.raises(InvalidInputError, match="not both"):
        MovieSettings(frames=3, duration=1.0).frame_count(None)
