"""Files handed to Orrery that are not what they claim to be are refused at once, in one line:
a camera path that is a FIFO or a device, too large, nested without end, or holding keys no
movie can be filmed from (issue 42)."""

import os
import subprocess
import sys

import pytest

from orrery.app.render._camera_path import CameraPath
from orrery.engine.errors import InvalidInputError

KEY = "[[key]]\ntime = {time}\nposition = [{x}, 0.0, 4.0]\ntarget = [0.0, 0.0, 0.0]\n"


def _path(tmp_path, text):
    path = tmp_path / "camera.toml"
    path.write_text(text)
    return path


def test_a_camera_path_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "camera.toml"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInputError, match="is a FIFO"):
        CameraPath.load(fifo)


def test_a_camera_path_that_is_a_device_is_refused_without_reading_it():
    with pytest.raises(InvalidInputError, match="/dev/zero is a character device"):
        CameraPath.load("/dev/zero")


def test_a_camera_path_larger_than_any_real_one_is_refused(tmp_path):
    path = _path(tmp_path, "# padding\n" * 200_000)
    with pytest.raises(InvalidInputError, match="larger than 1,048,576 bytes"):
        CameraPath.load(path)


def test_a_camera_path_nested_without_end_is_refused(tmp_path):
    path = _path(tmp_path, "a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InvalidInputError, match="nests tables or arrays too deeply"):
        CameraPath.load(path)


@pytest.mark.parametrize("x, message", [("1e308", "within 1e\\+12 of the origin"),
                                        ("nan", "must be finite"), ("inf", "must be finite")])
def test_a_camera_key_no_movie_can_be_filmed_from_is_refused(tmp_path, x, message):
    path = _path(tmp_path, KEY.format(time=0.0, x=x) + KEY.format(time=2.0, x=3.0))
    with pytest.raises(InvalidInputError, match=message):
        CameraPath.load(path)


def test_a_camera_key_time_beyond_a_day_is_refused(tmp_path):
    path = _path(tmp_path, KEY.format(time=1e300, x=3.0))
    with pytest.raises(InvalidInputError, match="time must be 0 to 86400 seconds"):
        CameraPath.load(path)


def test_a_camera_key_with_an_unknown_field_is_refused(tmp_path):
    path = _path(tmp_path, KEY.format(time=0.0, x=3.0) + "zoom = 2\n")
    with pytest.raises(InvalidInputError, match=r"unknown key field\(s\) \['zoom'\]"):
        CameraPath.load(path)


def test_a_camera_path_with_a_syntax_error_says_where(tmp_path):
    path = _path(tmp_path, "[[key]]\ntime = = 0\n")
    with pytest.raises(InvalidInputError, match="line 2, column"):
        CameraPath.load(path)


def test_orrery_render_with_a_fifo_camera_path_ends_at_once_in_one_line(tmp_path):
    fifo = tmp_path / "camera.toml"
    os.mkfifo(fifo)
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from orrery.app.cli import main; "
         "sys.exit(main(sys.argv[1:]))", "render", "plummer", "--n", "64", "--camera", str(fifo),
         "--out", str(tmp_path / "movie.mp4")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"orrery render: error: camera path {fifo} is a FIFO (named pipe), not a file"]
    assert not (tmp_path / "movie.mp4").exists()


def test_a_camera_path_that_cannot_be_saved_is_one_error_and_leaves_nothing(tmp_path):
    path = CameraPath.load(_path(tmp_path, KEY.format(time=0.0, x=3.0)))
    with pytest.raises(InvalidInputError, match="cannot save the camera path"):
        path.save(tmp_path / "missing" / "camera.toml")
    target = tmp_path / "saved.toml"
    path.save(target)
    assert CameraPath.load(target).keys == path.keys
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["camera.toml", "saved.toml"]


@pytest.mark.parametrize("command", [["info"], ["run", "--quiet", "--steps", "1", "--load"]])
def test_a_fifo_given_as_a_recording_or_snapshot_is_refused_without_waiting(tmp_path, command):
    fifo = tmp_path / "snap.hdf5"
    os.mkfifo(fifo)
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from orrery.app.cli import main; "
         "sys.exit(main(sys.argv[1:]))", *command, str(fifo)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "is a FIFO (named pipe), not a" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_calibrate_refuses_more_trials_than_anyone_times(capsys):
    from orrery.app.cli import main

    with pytest.raises(SystemExit):
        main(["calibrate", "--dry-run", "--trials", "9" * 30])
    assert "argument --trials: must be <= 10,000" in capsys.readouterr().err
