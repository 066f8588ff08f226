"""Movies: decoded back with PyAV — frame count, size, frames that follow the camera, and the
same inputs giving the same movie."""

import numpy as np
import pytest

from ..extras import package

package("av")
pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.app.cli import main  # noqa: E402
from orrery.app.export import (FileFrames, LiveFrames, MovieRenderer,  # noqa: E402
                               MovieSettings, MovieTimes, read_video, render_movie, source_index)
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


def _bt709_yuv420(rgb, encoded):
    """yuv420.frag in numpy: BT.709 limited range, chroma left-sited ([1 2 1] / 4 across, the
    mean of two rows), black padding, levels rounded half up."""
    height, width = rgb.shape[:2]
    image = np.zeros((encoded[1], encoded[0], 3))
    image[:height, :width] = rgb / 255.0
    luma = np.array([0.2126, 0.7152, 0.0722])
    y = np.floor(np.clip(16 + 219 * image @ luma, 0, 255) + 0.5)
    left = np.concatenate([image[:, :1], image[:, :-1]], axis=1)
    right = np.concatenate([image[:, 1:], np.zeros_like(image[:, :1])], axis=1)
    across = (left + 2 * image + right)[:, 0::2]
    mean = (across[0::2] + across[1::2]) / 8
    mean_luma = mean @ luma
    u = np.floor(np.clip(128 + 224 * (mean[..., 2] - mean_luma) / 1.8556, 0, 255) + 0.5)
    v = np.floor(np.clip(128 + 224 * (mean[..., 0] - mean_luma) / 1.5748, 0, 255) + 0.5)
    return np.concatenate([y.ravel(), u.ravel(), v.ravel()]).astype(np.uint8).reshape(
        encoded[1] * 3 // 2, encoded[0])


@pytest.mark.parametrize("size", [(96, 64), (97, 63)])
def test_frames_are_converted_to_yuv420_on_the_gpu_as_bt709_says(size):
    particles = ics.plummer(3000, seed=1)
    positions = particles.pos.astype(np.float32)
    renderer = MovieRenderer(MovieSettings(size=size), gpu_yuv=True)
    try:
        rgb = renderer.render(positions, particles.population, 0.0, 0, 0)
        assert renderer.submit(positions, particles.population, 0.0, 0, 0) is None
        assert renderer.pending == 1
        yuv = renderer.collect()
    finally:
        renderer.release()
    assert rgb.max() > 100
    encoded = (size[0] + size[0] % 2, size[1] + size[1] % 2)
    np.testing.assert_array_equal(yuv, _bt709_yuv420(rgb, encoded))


def test_gpu_and_cpu_conversion_give_the_same_picture_and_each_the_same_movie(tmp_path):
    with RecordingFile(_recording(tmp_path / "run.h5", frames=3)) as file:
        settings = MovieSettings(size=SIZE, fps=12, camera=_path())
        for name, gpu_yuv in (("gpu-a", True), ("gpu-b", True), ("cpu", False)):
            times = MovieTimes()
            render_movie(FileFrames(file), tmp_path / f"{name}.mp4", settings, gpu_yuv=gpu_yuv,
                         times=times, encoders=2)
            assert times.frames == 7 and times.segments == 1 and times.total > 0
            assert times.encode > 0 and times.draw > 0 and times.readback > 0
    first, second, cpu = (read_video(tmp_path / f"{name}.mp4")[0]
                          for name in ("gpu-a", "gpu-b", "cpu"))
    assert len(first) == len(cpu) == 7
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    # swscale filters chroma otherwise: close, not equal
    assert max(np.abs(a.astype(int) - b).mean() for a, b in zip(first, cpu)) < 2


def test_render_verbose_says_where_the_time_went(tmp_path, capsys):
    recording = _recording(tmp_path / "run.h5", frames=3)
    assert main(["render", str(recording), "--out", str(tmp_path / "r.mp4"), "--size", "64x48",
                 "--quiet", "--verbose", "--encoders", "2"]) == 0
    out = capsys.readouterr().out
    assert "3 frames at" in out and "encode" in out and "on 2 encoders" in out


def test_sprites_splatted_on_a_compute_device_make_the_same_movie_twice(tmp_path, device):
    from orrery.app.export import splat_device

    with RecordingFile(_recording(tmp_path / "run.h5", frames=3)) as file:
        settings = MovieSettings(size=SIZE, fps=12, camera=_path())
        for name in ("a", "b", "points"):
            times = MovieTimes()
            render_movie(FileFrames(file), tmp_path / f"{name}.mp4", settings, times=times,
                         compute=splat_device("none" if name == "points" else device))
            # host frames: GL points, or the host splat where GL is software (llvmpipe)
            assert times.particles.startswith(("GL points", "host splat") if name == "points"
                                              else "compute splat")
    first, second, points = (read_video(tmp_path / f"{name}.mp4")[0]
                             for name in ("a", "b", "points"))
    assert len(first) == 7 and all(np.array_equal(a, b) for a, b in zip(first, second))
    assert max(np.abs(a.astype(int) - b).mean() for a, b in zip(first, points)) < 3
