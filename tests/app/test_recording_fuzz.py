"""A seeded fuzz of recordings as ``orrery run --resume``, ``orrery info`` and ``orrery play``
read them: a small recording with keyframes, each copy edited one way a careless tool or a
hostile user could (the run's attributes — dt, model, solver, its options, the integrator —
of the wrong kind or naming nothing that exists; keyframe steps out of range, out of order or
of the wrong type; keyframes, frames or particles missing; states that are not finite), each
command in a forked child under a time and memory limit (tests/app/fuzz_child.py). A case
fails on a traceback, a crash, a hang, running out of memory, an exit code other than 0, 1 or
2, or a refusal of more than one line (issue 42)."""

import random
import re
import shutil

import h5py
import numpy as np
import pytest

from orrery.app.cli import main

from .fuzz_child import run_cases

SEED = 42
CASES = 70
N = 16
# Where `orrery play` would open its window: no X server listens there, so it reads the file
# and stops at the window, in one line.
NO_X_SERVER = ":4242"

# Values no attribute of a run should hold.
HOSTILE = ["abc", "", "x" * 10_000, np.nan, np.inf, -np.inf, -1.0, 0.0, 1e308, 5,
           np.array([0.001, 0.002]), np.array([]), np.bool_(True), b"\xff\xfe"]
RUN_ATTRIBUTES = ["dt", "model", "solver", "solver_params", "integrator", "softening", "G", "n",
                  "format_version", "position_encoding", "scenario", "seed"]
SOLVER_PARAMS = ['{"theta": "abc"}', '{"softening": -1}', '{"softening": NaN}', "[1, 2]",
                 '{"precision": "f8"}', '{"leaf_capacity": 1e30}', '{"simd": "none"}', "{",
                 '{"threads": -4}', "null"]
NAMES = {"model": ["flock", "gravity2", "Gravity"], "solver": ["x", "gpu-nope", "auto"],
         "integrator": ["leapfrog", "kdk2", "dkd"]}


def _replace(h5, name, data):
    del h5[name]
    h5[name] = data


def _resize(h5, name, size):
    h5[name].resize(size, axis=0)


def _edit(path, rng):
    """Edit the recording at ``path`` one way; returns what was done."""
    with h5py.File(path, "r+") as h5:
        keyframes, frames = h5["keyframe_step"].shape[0], h5["step"].shape[0]
        kind = rng.choice(["attribute", "attribute", "keyframe_step", "keyframe", "frames",
                           "particles"])
        if kind == "attribute":
            name = rng.choice(RUN_ATTRIBUTES)
            if rng.random() < 0.2:
                del h5.attrs[name]
                return f"attribute {name} removed"
            choices = HOSTILE + NAMES.get(name, []) * 3
            if name == "solver_params":
                choices = SOLVER_PARAMS
            h5.attrs[name] = value = rng.choice(choices)
            return f"attribute {name} = {value!r:.40}"
        if kind == "keyframe_step":
            steps = h5["keyframe_step"][()]
            index = rng.randrange(keyframes)
            choice = rng.choice(["value", "value", "dtype", "shape"])
            if choice == "value":
                steps[index] = rng.choice([-1, -(2**62), 2**62, 99, 3, steps[-1] + 1,
                                           steps[0]])
                h5["keyframe_step"][:] = steps
                return f"keyframe_step[{index}] = {steps[index]}"
            data = {"dtype": steps.astype(rng.choice(["f8", "u1", "S4"])),
                    "shape": steps.reshape(-1, 1) if rng.random() < 0.5 else steps[:1]}[choice]
            _replace(h5, "keyframe_step", data)
            return f"keyframe_step {data.dtype}{data.shape}"
        if kind == "keyframe":
            name = rng.choice(["keyframe_positions", "keyframe_velocities", "keyframe_time"])
            choice = rng.choice(["fewer", "none", "nan", "inf", "shape", "dtype", "removed"])
            if choice == "removed":
                del h5[name]
            elif choice in ("fewer", "none"):
                _resize(h5, name, 0 if choice == "none" else keyframes - 1)
            elif choice in ("nan", "inf"):
                h5[name][rng.randrange(keyframes)] = np.nan if choice == "nan" else np.inf
            else:
                shape = (keyframes, N + 1, 3) if name != "keyframe_time" else (keyframes, 2)
                dtype = rng.choice(["f2", "i4", "c8", "f8"]) if choice == "dtype" else "f4"
                _replace(h5, name, np.zeros(shape if choice == "shape" else h5[name].shape,
                                            dtype))
            return f"{name} {choice}"
        if kind == "frames":
            name = rng.choice(["positions", "step", "time"])
            size = rng.choice([0, 1, frames - 1])
            _resize(h5, name, size)
            return f"{name} cut to {size} frames"
        name = rng.choice(["masses", "population"])
        data = rng.choice({"masses": [np.ones(N + 1), np.full(N, np.nan), np.full(N, -1.0),
                                      np.zeros(N), np.ones(1)],
                           "population": [np.ones(N + 1, "u1"), np.full(N, 7, "u1"),
                                          np.full(N, -1, "i1"), np.ones(1, "u1")]}[name])
        _replace(h5, name, data)
        return f"{name} {data[:2]} ... ({data.size})"


def _cases(folder):
    base = folder / "base.h5"
    assert main(["run", "--quiet", "--ic", "plummer", "--n", str(N), "--steps", "6",
                 "--every", "1", "--keyframe-every", "2", "--solver", "cpu-direct",
                 "--record", str(base)]) == 0
    rng = random.Random(SEED)
    cases = []
    for index in range(CASES):
        path = folder / f"case{index}.h5"
        shutil.copy(base, path)
        what = _edit(path, rng)
        frame = rng.choice([None, "0", "3", "6", "7", "-1"])
        resume = ["run", "--quiet", "--steps", "2", "--resume", str(path)]
        command = rng.choice([resume if frame is None else [*resume, "--from-frame", frame],
                              resume, ["info", str(path)], ["play", str(path)]])
        cases.append((command, what))
    return cases


def _one_line(output: str) -> str | None:
    """A refusal is one line (after argparse's usage, for a flag it refused)."""
    lines = output.strip().splitlines()
    if len(lines) == 1 or lines[0].startswith("usage: ") and ": error: " in lines[-1]:
        return None
    return f"refused in {len(lines)} lines: {output.strip()!r:.300}"


def test_edited_recordings_are_resumed_shown_or_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("DISPLAY", NO_X_SERVER)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    failures = run_cases(_cases(tmp_path), tmp_path, refusal=_one_line)
    assert not failures, "\n".join(failures)


# What the fuzz found, each as its own test: edits that --resume took, continuing another run.

def _recording(tmp_path, edit):
    path = tmp_path / "run.h5"
    assert main(["run", "--quiet", "--ic", "plummer", "--n", str(N), "--steps", "6", "--every",
                 "1", "--keyframe-every", "2", "--solver", "cpu-direct", "--record",
                 str(path)]) == 0
    with h5py.File(path, "r+") as h5:
        edit(h5)
    return str(path)


@pytest.mark.parametrize("edit, message", [
    (lambda h5: h5.attrs.__setitem__("dt", 0.002),
     "its keyframes advance 0.001 a step from step 4 to 6, but its dt attribute is 0.002"),
    (lambda h5: h5["keyframe_time"].__setitem__(3, 0.5), "its keyframes advance 0.248 a step"),
    (lambda h5: h5["keyframe_time"].__setitem__(slice(None), 0.0),
     "its keyframes advance 0 a step"),
    (lambda h5: h5["time"].__setitem__(6, 0.007),
     "keyframe 3 at step 6 has time 0.006, but its frame at that step has 0.007"),
    (lambda h5: h5.attrs.__setitem__("softening", 0.02),
     "its softening attribute 0.02 differs from its solver_params' 0.01"),
    (lambda h5: h5.attrs.__setitem__("G", 6.674e-11), "its G attribute .* is not Orrery's G = 1"),
    (lambda h5: h5["keyframe_velocities"].__setitem__(3, np.nan),
     "keyframe 3: velocity of particle 0 is not finite"),
])
def test_resume_refuses_a_recording_whose_settings_disagree_with_its_data(
        tmp_path, capsys, edit, message):
    path = _recording(tmp_path, edit)
    capsys.readouterr()
    assert main(["run", "--quiet", "--steps", "2", "--resume", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(f"orrery run: error: {re.escape(path)}: {message}",
                                        err[0]), err
