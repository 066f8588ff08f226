"""A seeded fuzz of the command line: arguments drawn from numbers, names and files no one
should pass (NaN, 1e308, folders, FIFOs, devices, random bytes, cut recordings), each case run
in a forked child under a time and memory limit. A case fails on a traceback, a crash, a hang or
an output left incomplete; refusing in one line is what is expected (issue 42)."""

import os
import random

import numpy as np

from orrery.engine.recording import Recorder, RecordingFile

from .fuzz_child import run_case

SEED = 42
CASES = 60

NUMBERS = ["0", "-1", "1", "2", "1e308", "-1e308", "nan", "inf", "-inf", "1e-320", "abc", "",
           "9" * 30, "0x10", "1_0", "-0", "3.5", "1e6"]


def _files(folder):
    """Paths of every kind a user may hand over, made in ``folder``."""
    good = folder / "good.h5"
    with Recorder(good, masses=np.ones(8), keyframe_dtype="float64") as recorder:
        for step in range(3):
            recorder.append(np.full((8, 3), step, np.float32), 0.1 * step, step)
            recorder.append_keyframe(np.full((8, 3), step, np.float64), np.zeros((8, 3)),
                                     0.1 * step, step)
    cut = folder / "cut.h5"
    cut.write_bytes(good.read_bytes()[:good.stat().st_size // 2])
    noise = folder / "noise.bin"
    noise.write_bytes(random.Random(SEED).randbytes(4096))
    empty = folder / "empty.h5"
    empty.write_bytes(b"")
    (folder / "dir").mkdir()
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    toml = folder / "camera.toml"
    toml.write_text("[[key]]\ntime = 0\nposition = [1e308, 0, 0]\ntarget = [0, 0, 0]\n")
    return [str(path) for path in (good, cut, noise, empty, folder / "dir", fifo, toml,
                                   folder / "missing.h5", folder / "dir/", folder / "noise.bin/x",
                                   "/dev/null", "/dev/zero")]


# Outputs nothing can write (by their names in _files, or devices).
UNWRITABLE = ("dir", "fifo", "dir/", "noise.bin/x", "/dev/null", "/dev/zero")


def _run_case(files, rng, out):
    options = {"--n": ["1", "16", "0", "-3", "nan", "abc"], "--steps": ["0", "3", "-1", "x"],
               "--dt": NUMBERS, "--seed": NUMBERS, "--every": NUMBERS, "--ic": ["plummer", "x"],
               "--record-precision": ["f16", "fixed16", "f8"], "--record-flush": NUMBERS,
               "--keyframe-every": NUMBERS, "--record-fsync": NUMBERS, "--load": files,
               "--resume": files, "--from-frame": NUMBERS, "--solver": ["cpu-tree", "x", ""],
               "--record": [*files, out]}
    arguments = ["run", "--quiet", "--n", "16", "--steps", "3", "--solver", "cpu-direct"]
    for flag in rng.sample(sorted(options), rng.randint(1, 3)):
        arguments += [flag, rng.choice(options[flag])]
    return arguments


def _render_case(files, rng, out):
    options = {"--fps": NUMBERS, "--point-size": NUMBERS, "--exposure": NUMBERS,
               "--camera": files, "--size": ["0x0", "64x48", "1e9x2", "axb"],
               "--frames": ["0", "-1", "x"], "--duration": NUMBERS, "--crf": NUMBERS,
               "--out": [*files, out, out + ".txt"]}
    arguments = ["render", rng.choice(files), "--quiet", "--size", "32x32", "--frames", "2",
                 "--out", out]
    for flag in rng.sample(sorted(options), rng.randint(1, 2)):
        arguments += [flag, rng.choice(options[flag])]
    return arguments


def _other_case(files, rng, out):
    return rng.choice([
        ["info", rng.choice(files)],
        ["calibrate", "--quiet", "--dry-run", "--n-min", "32", "--n-max", "32", "--trials",
         rng.choice(NUMBERS), "--warmup", "0", "--solvers", "cpu-direct"],
        # (a writable --output would measure the accuracy table: legitimate, and long)
        ["calibrate", "--accuracy", "--output", rng.choice(UNWRITABLE)],
        ["calibrate", "--accuracy", "--dry-run", "--solvers", "cpu-tree", "--scenarios",
         "plummer", "--sizes", rng.choice(["2", "0", "x"]), "--thetas", rng.choice(NUMBERS)],
        ["bench", "direct", "--n", "16", "--trials", "1", "--warmup", "0", "--no-ceilings",
         rng.choice(["--csv", "--json"]), rng.choice([*files, out, out + ".csv"])],
        ["devices", rng.choice(["--json", "--bogus", ""])],
    ])


def _cases(files, folder):
    rng = random.Random(SEED)
    makers = [_run_case, _render_case, _other_case]
    return [[argument for argument in rng.choice(makers)(files, rng, str(folder / f"out{i}.h5"))
             if argument != ""] for i in range(CASES)]


def test_the_command_line_never_tracebacks_crashes_hangs_or_leaves_a_partial_file(
        tmp_path, monkeypatch):
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path / "cache"))
    files = _files(tmp_path)
    failures = []
    for arguments in _cases(files, tmp_path):
        failure = run_case(arguments, tmp_path)
        if failure is not None:
            failures.append((failure, arguments))
        partial = sorted(str(path) for path in tmp_path.rglob("*partial*"))
        if partial:
            failures.append((f"left {partial}", arguments))
        for path in tmp_path.glob("out*.h5"):
            with RecordingFile(path) as recording:  # whatever was recorded reads as closed
                if not recording.closed_cleanly:
                    failures.append((f"{path.name} not closed", arguments))
            path.unlink()
    assert not failures, "\n".join(f"{kind}: orrery {' '.join(arguments)}"
                                   for kind, arguments in failures)
