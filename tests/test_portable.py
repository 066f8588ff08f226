"""``ORRERY_PORTABLE=1`` takes every fallback of ``engine/portable.py`` (what macOS and Windows
use where Linux has a call of its own): the recorder, the player (following a recording another
process is writing too), the viewer's start and a benchmark run on the fallbacks, and what they
record is bit for bit what the native paths record."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from orrery.engine import portable
from orrery.engine.recording import RecordingFile

CHILD = Path(__file__).with_name("portable_child.py")
FALLBACKS = {
    "forced": "true",
    "positional reads": "seek and read",
    "file locks": "none",
    "write-back": "the OS's own",
    "free space": "disk_usage",
    "write permission": "unchanged",
    "thread niceness": "unchanged",
    "usable cores": "cpu_count",
    "process information": "none",
    "stop signals": "SIGTERM",
    "alarm": "none",
    "headless OpenGL": "platform default",
}
# Written when the file is made, so two recordings of one run differ there.
MADE_AT = {"created_utc"}


def _environment(portable_paths: bool) -> dict:
    env = {key: value for key, value in os.environ.items() if key != portable.FORCE_FALLBACKS}
    if portable_paths:
        env[portable.FORCE_FALLBACKS] = "1"
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """tests/portable_child.py's outputs: ``{"portable": folder, "native": folder}``."""
    folders = {}
    for mode in ("portable", "native"):
        folder = tmp_path_factory.mktemp(mode)
        done = subprocess.run([sys.executable, str(CHILD), str(folder)], capture_output=True,
                              text=True, timeout=300, env=_environment(mode == "portable"))
        assert done.returncode == 0, done.stderr
        folders[mode] = folder
    return folders


def test_portable_mode_takes_every_fallback_and_this_linux_machine_none_without_it(runs):
    assert json.loads((runs["portable"] / "chosen.json").read_text()) == FALLBACKS
    native = json.loads((runs["native"] / "chosen.json").read_text())
    assert {name for name, path in native.items() if path == FALLBACKS[name]} == set()


def test_a_recording_made_on_the_fallbacks_is_bit_for_bit_the_native_one(runs):
    with RecordingFile(runs["portable"] / "run.h5") as made, \
            RecordingFile(runs["native"] / "run.h5") as native:
        assert made.frame_count == native.frame_count == 11
        assert made.keyframe_count == native.keyframe_count > 1
        for index in range(native.frame_count):
            assert made.read(index).tobytes() == native.read(index).tobytes()
        for index in range(native.keyframe_count):
            for ours, theirs in zip(made.read_keyframe(index), native.read_keyframe(index)):
                assert ours.tobytes() == theirs.tobytes()
        assert made.times.tobytes() == native.times.tobytes()
        assert made.steps.tobytes() == native.steps.tobytes()
        assert made.masses.tobytes() == native.masses.tobytes()
        assert {key: str(value) for key, value in made.attributes.items() if key not in MADE_AT} \
            == {key: str(value) for key, value in native.attributes.items() if key not in MADE_AT}
        frames = np.stack([native.read(index) for index in range(native.frame_count)])
    for mode in ("portable", "native"):  # what each Player read, through its own read path
        with np.load(runs[mode] / "replayed.npz") as replayed:
            assert replayed["frames"].tobytes() == frames.tobytes()
            assert replayed["steps"].tolist() == list(range(0, 41, 4))


@pytest.mark.parametrize("mode", ["portable", "native"])
def test_a_player_follows_a_recording_while_another_process_writes_it(runs, mode):
    followed = json.loads((runs[mode] / "followed.json").read_text())
    assert followed["live_at_open"] and not followed["live_at_end"]
    assert followed["frames"] == 30 and followed["last_frame"] == [29.0]
    shown = followed["steps_shown"]
    assert shown == sorted(shown) and len(shown) >= 4, "the player did not play on as frames came"


def test_the_viewer_starts_and_draws_a_replay_on_the_fallbacks(xvfb, runs, tmp_path):
    """On the platform's own GL (no EGL, PyOpenGL left to choose) under an X server."""
    shot = tmp_path / "shot.png"
    env = _environment(True)
    env.pop("PYOPENGL_PLATFORM", None)
    env.pop("WAYLAND_DISPLAY", None)
    done = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 800x600x24", sys.executable, "-m",
         "orrery.app.viewer", "--play", str(runs["portable"] / "run.h5"), "--paused",
         "--size", "800x600", "--frames", "3", "--screenshot", str(shot)],
        capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    image = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert np.count_nonzero(image[:, 360:].max(axis=2) > 40) > 50, "no particles drawn"


def test_a_headless_context_on_the_fallbacks_is_the_platforms_own_not_egl(xvfb):
    script = ("from orrery.app.render import describe, headless_context\n"
              "ctx = describe(headless_context())\n"
              "maps = open('/proc/self/maps').read()\n"
              "print(ctx, 'with libEGL' if 'libEGL' in maps else 'without libEGL')")
    done = subprocess.run(["xvfb-run", "-a", sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=120, env=_environment(True))
    assert done.returncode == 0, done.stderr
    assert "OpenGL" in done.stdout and done.stdout.strip().endswith("without libEGL")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env=_environment(False))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("with libEGL")


def test_a_benchmark_of_recording_and_replay_runs_on_the_fallbacks(tmp_path):
    table = tmp_path / "rows.json"
    done = subprocess.run(
        [sys.executable, "-m", "orrery.app.cli", "bench", "playback", "--n", "2000", "--frames", "8",
         "--trials", "1", "--sim-n", "256", "--solver", "cpu-direct", "--precision", "f32",
         "--dir", str(tmp_path), "--json", str(table)],
        capture_output=True, text=True, timeout=300, env=_environment(True))
    assert done.returncode == 0, done.stderr
    rows = {row["stage"]: row for row in json.loads(table.read_text())["rows"]}
    assert rows["write"]["frames"] == 8
    assert rows["read direct"]["frames_per_s"] > 0 and rows["Player.latest"]["frames_per_s"] > 0
