"""A movie is written under a hidden name and renamed when complete: a failed render leaves
nothing at --out, Ctrl-C or SIGTERM keeps a playable movie of the frames written, and --out,
--fps and --point-size that cannot work are refused before anything is rendered (issue 42)."""

import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ..extras import package

av = package("av")

from orrery.app.cli import main  # noqa: E402
from orrery.app.export import VideoWriter, read_video  # noqa: E402

FRAME = np.zeros((32, 48, 3), np.uint8)


def test_a_movie_stands_at_its_path_only_once_it_is_complete(tmp_path):
    path = tmp_path / "movie.mp4"
    with VideoWriter(path, size=(48, 32), fps=30) as video:
        video.write(FRAME)
        assert not path.exists()
    assert len(read_video(path)[0]) == 1
    assert [entry.name for entry in tmp_path.iterdir()] == ["movie.mp4"]


def test_a_movie_whose_writing_failed_leaves_nothing_behind(tmp_path):
    path = tmp_path / "movie.mp4"
    with pytest.raises(RuntimeError, match="the renderer failed"):
        with VideoWriter(path, size=(48, 32), fps=30) as video:
            video.write(FRAME)
            raise RuntimeError("the renderer failed")
    assert list(tmp_path.iterdir()) == []


def test_a_movie_interrupted_keeps_the_frames_written(tmp_path):
    path = tmp_path / "movie.mp4"
    with pytest.raises(KeyboardInterrupt):
        with VideoWriter(path, size=(48, 32), fps=30) as video:
            for _ in range(3):
                video.write(FRAME)
            raise KeyboardInterrupt
    assert len(read_video(path)[0]) == 3


@pytest.mark.parametrize("arguments, message", [
    (["--out", "/dev/null"], "must name a regular file"),
    (["--out", "{dir}/movie"], "must end in .mp4"),
    (["--out", "{dir}/movie.txt"], "must end in .mp4"),
    (["--out", "{dir}/" + "x" * 300 + ".mp4"], "File name too long"),
    (["--out", "{dir}/missing/movie.mp4"], "does not exist"),
    (["--out", "{dir}/movie.mp4", "--fps", "1e-9"], "argument --fps: must be >= 0.001"),
    (["--out", "{dir}/movie.mp4", "--point-size", "1e308"], "argument --point-size: must be <="),
])
def test_render_refuses_what_cannot_work_before_rendering(tmp_path, capsys, arguments, message):
    arguments = [argument.format(dir=tmp_path) for argument in arguments]
    with pytest.raises(SystemExit) as exit_:
        main(["render", "plummer", "--n", "16", "--quiet", *arguments])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_sigterm_mid_render_keeps_a_playable_movie_of_the_frames_written(tmp_path, egl):
    path = tmp_path / "movie.mp4"
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from orrery.app.cli import main; "
         "sys.exit(main(sys.argv[1:]))", "render", "plummer", "--n", "64", "--frames", "100000",
         "--size", "64x64", "--encoders", "1", "--out", str(path)],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while "frame" not in process.stderr.read(200):  # the progress bar counts frames
            assert process.poll() is None and time.monotonic() < deadline
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "orrery render: stopped by SIGTERM" in err
    frames, _, _ = read_video(path)
    assert len(frames) > 0
    assert [entry.name for entry in tmp_path.iterdir()] == ["movie.mp4"]


def test_a_movie_of_a_short_recording_is_filmed_slower_and_says_so(tmp_path, capsys, egl):
    recording = tmp_path / "run.h5"
    assert main(["run", "--n", "32", "--solver", "cpu-direct", "--steps", "200", "--every", "10",
                 "--quiet", "--record", str(recording)]) == 0
    movie = tmp_path / "movie.mp4"
    assert main(["render", str(recording), "--size", "64x64", "--quiet", "--out",
                 str(movie)]) == 0
    out = capsys.readouterr().out
    assert "21 frames, 64x64 at 2.1 fps (10.00 s); 2.1 fps films the 21 source frames in 10 s" \
        in out
    frames, rate, _ = read_video(movie)
    assert len(frames) == 21 and rate == pytest.approx(2.1)


def test_an_explicit_fps_is_kept(tmp_path, capsys, egl):
    recording = tmp_path / "run.h5"
    assert main(["run", "--n", "32", "--solver", "cpu-direct", "--steps", "20", "--every", "10",
                 "--quiet", "--record", str(recording)]) == 0
    assert main(["render", str(recording), "--size", "64x64", "--quiet", "--fps", "60", "--out",
                 str(tmp_path / "movie.mp4")]) == 0
    assert "3 frames, 64x64 at 60 fps (0.05 s)\n" in capsys.readouterr().out
