"""A seeded fuzz of the command line: arguments drawn from numbers, names and files no one
should pass (NaN, 1e308, folders, FIFOs, devices, random bytes, cut recordings), each case run
in a forked child under a time and memory limit (tests/app/fuzz_child.py). A case fails on a
traceback, a crash, a hang, running out of memory or an output left incomplete; refusing in one
line is what is expected (issue 42). ``orrery run``, ``render``, ``info``, ``calibrate``,
``bench`` and ``devices`` run whole; ``orrery play`` and ``orrery-viewer`` open their source
and stop at the window (no X server), and ``orrery serve`` is stopped by SIGTERM once it
serves."""

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


# Where the viewer's window would open: no X server listens there, so `orrery play` and
# `orrery-viewer` open their source (a recording, a snapshot, a live run) and stop at the
# window, in one line.
NO_X_SERVER = ":4242"
# A case of `orrery serve` that starts serving is stopped (SIGTERM) this long after it began;
# ending then, by that signal, is clean.
SERVE_SECONDS = 2.0
WINDOW_CASES = 30


def _serve_case(files, rng, out):
    options = {"--host": ["127.0.0.1", "", "256.1.1.1", "x" * 300, "::1"],
               "--port": ["0", "-1", "65536", "x", "1e308", "99999999999999999999"],
               "--max-fps": NUMBERS, "--recordings": files, "--exposure": NUMBERS,
               "--colour-map": ["magma", "nope"], "--render": ["density", "x"],
               "--play": files, "--load": files, "--n": ["0", "-1", "nan", "16"],
               "--dt": NUMBERS, "--token": ["", "t" * 10_000]}
    return ["serve", "--port", "0", *_source_flags(options, rng, 2)]


def _viewer_case(files, rng, out):
    options = {"--size": ["0x0", "64x48", "1e9x2", "axb", "-5x5"], "--bloom": NUMBERS,
               "--max-fps": NUMBERS, "--frames": ["0", "-1", "x", "2"],
               "--screenshot": [*files, out + ".png"], "--stats": [*files, out + ".jsonl"],
               "--screenshot-at": ["last", "x"], "--panel": ["open", "x"],
               "--play": files, "--load": files, "--n": ["0", "-1", "nan", "16"],
               "--dt": NUMBERS, "--seed": NUMBERS, "--solver": ["cpu-tree", "x", "cuda:99"],
               "--exposure": NUMBERS, "--colour-map": ["magma", "nope"],
               "--scenario": ["plummer-cluster", "x", ""]}
    return _source_flags(options, rng, 3)


def _source_flags(options, rng, most):
    """Up to ``most`` flags drawn from ``options``; a live run (neither --play nor --load) of
    16 particles unless they name its scenario or size."""
    flags = rng.sample(sorted(options), rng.randint(1, most))
    arguments = [] if {"--play", "--load", "--scenario", "--n"} & set(flags) else [
        "--scenario", "plummer-cluster", "--n", "16"]
    for flag in flags:
        arguments += [flag, rng.choice(options[flag])]
    return arguments


def test_play_serve_and_the_viewer_never_traceback_crash_or_hang_on_their_arguments(
        tmp_path, monkeypatch):
    from orrery.app.viewer import main as viewer_main

    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DISPLAY", NO_X_SERVER)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    files = _files(tmp_path)
    rng = random.Random(SEED)
    failures = []
    for i in range(WINDOW_CASES):
        out = str(tmp_path / f"out{i}")
        kind = rng.choice(["play", "serve", "viewer"])
        if kind == "play":
            failure = run_case(["play", rng.choice(files)], tmp_path)
            arguments = ["orrery", "play"]
        elif kind == "serve":
            arguments = [a for a in _serve_case(files, rng, out) if a != ""]
            failure = run_case(arguments, tmp_path, stop_after=SERVE_SECONDS)
            arguments = ["orrery", *arguments]
        else:
            arguments = [a for a in _viewer_case(files, rng, out) if a != ""]
            failure = run_case(arguments, tmp_path, main=viewer_main)
            arguments = ["orrery-viewer", *arguments]
        if failure is not None:
            failures.append(f"{failure}: {' '.join(arguments)}"[:400])
    assert not failures, "\n".join(failures)


# What the fuzz of play, serve and the viewer found, each as its own test.

def test_serve_on_a_host_name_no_resolver_takes_is_one_line(capsys):
    from orrery.app.cli import main

    host = "x" * 300  # a label longer than 63 characters: IDNA refuses to encode it
    assert main(["serve", "--port", "0", "--scenario", "plummer-cluster", "--n", "16",
                 "--host", host]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"orrery serve: error: cannot listen on {host}:0")


def test_serve_refuses_a_look_its_clients_could_not_ask_for(capsys):
    from orrery.app.cli import main

    assert main(["serve", "--port", "0", "--colour-map", "nope"]) == 2
    assert capsys.readouterr().err.strip() == (
        "orrery serve: error: --colour-map must be one of cividis, inferno, magma, plasma, "
        "viridis; got 'nope'")


def test_the_viewer_refuses_run_flags_a_replay_would_ignore(tmp_path, monkeypatch, capsys):
    from orrery.app.viewer import main as viewer_main

    monkeypatch.setenv("DISPLAY", NO_X_SERVER)  # never reached: the flags are refused first
    recording = _files(tmp_path)[0]
    assert viewer_main(["--play", recording, "--n", "16", "--load", recording]) == 2
    assert viewer_main(["--load", recording, "--scenario", "plummer-cluster"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "orrery-viewer: error: --load, --n cannot apply to --play",
        "orrery-viewer: error: --scenario cannot apply to --load"]
