"""Camera paths: keys are hit exactly, the camera eases into and out of them, files round-trip."""

import math

import numpy as np
import pytest

from orrery.app.render import Camera
from orrery.app.render._camera_path import CameraKey, CameraPath
from orrery.engine.errors import InvalidInputError

KEYS = [CameraKey(0.0, (10.0, 0.0, 2.0), (0.0, 0.0, 0.0), 45.0),
        CameraKey(2.0, (0.0, 8.0, 1.0), (1.0, 0.0, 0.0), 30.0),
        CameraKey(5.0, (-6.0, -6.0, 3.0), (0.0, 1.0, 0.0), 60.0)]


def test_the_camera_is_at_each_key_at_its_time_and_holds_outside():
    path = CameraPath(KEYS)
    for key in KEYS:
        camera = path.camera_at(key.time)
        np.testing.assert_allclose(camera.eye, key.position, atol=1e-9)
        np.testing.assert_allclose(camera.target, key.target, atol=1e-9)
        assert math.degrees(camera.fov_y) == pytest.approx(key.fov)
    np.testing.assert_allclose(path.camera_at(-1.0).eye, KEYS[0].position, atol=1e-9)
    np.testing.assert_allclose(path.camera_at(99.0).eye, KEYS[-1].position, atol=1e-9)


def test_the_camera_slows_into_and_out_of_every_key():
    path = CameraPath(KEYS)
    step = 1e-3
    for key in KEYS[1:-1]:
        before = np.linalg.norm(path.camera_at(key.time).eye - path.camera_at(key.time - step).eye)
        mid = np.linalg.norm(path.camera_at(1.0 + step).eye - path.camera_at(1.0).eye)
        assert before < 0.01 * mid


def test_between_keys_the_camera_turns_about_the_target_the_short_way():
    keys = [CameraKey(0.0, (10.0 * math.cos(3.0), 10.0 * math.sin(3.0), 0.0), (0, 0, 0)),
            CameraKey(1.0, (10.0 * math.cos(-3.0), 10.0 * math.sin(-3.0), 0.0), (0, 0, 0))]
    halfway = CameraPath(keys).camera_at(0.5)
    assert np.linalg.norm(halfway.eye) == pytest.approx(10.0)       # on the orbit, not a chord
    np.testing.assert_allclose(halfway.eye, [-10.0, 0.0, 0.0], atol=1e-6)  # across pi, not 0


def test_a_path_saved_and_loaded_is_the_same_path(tmp_path):
    path = CameraPath(KEYS)
    loaded = CameraPath.load(path.save(tmp_path / "path.toml"))
    assert loaded.keys == path.keys
    key = CameraKey.from_camera(3.0, Camera(distance=7.0, yaw=0.2, pitch=0.3))
    assert CameraPath([key]).camera_at(0.0).distance == pytest.approx(7.0)


@pytest.mark.parametrize("text, message", [
    ("", "no \\[\\[key\\]\\] tables"),
    ("[[key]]\ntime = 0\n", "needs time, position"),
    ("[[key]]\ntime = 0\nposition = [1, 2]\ntarget = [0, 0, 0]\n", "needs time, position"),
    ("[[key]]\ntime = 0\nposition = [1, 0, 0]\ntarget = [1, 0, 0]\n",
     "key 1: camera key at t = 0.0: position equals target"),
    ("[[key]]\ntime = 0\nposition = [1e308, 0, 0]\ntarget = [0, 0, 0]\n",
     "key 1: camera key at t = 0: coordinates must lie within"),
    ("[[key]]\ntime = 0\nposition = [1, 0, 0]\ntarget = [0, 0, 0]\nfov = 200\n", "fov"),
    ("[[key]\n", "not valid TOML"),
])
def test_bad_path_files_get_clear_errors(tmp_path, text, message):
    file = tmp_path / "path.toml"
    file.write_text(text)
    with pytest.raises(InvalidInputError, match=message):
        CameraPath.load(file)
    with pytest.raises(InvalidInputError, match="No such file"):
        CameraPath.load(tmp_path / "missing.toml")
