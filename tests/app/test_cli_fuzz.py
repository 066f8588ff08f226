"""A seeded fuzz of the command line: arguments drawn from numbers, names and files no one
should pass (NaN, 1e308, folders, FIFOs, devices, random bytes, cut recordings), each case run
in a forked child under a time and memory limit (tests/app/fuzz_child.py). A case fails on a
traceback, a crash, a hang, running out of memory or an output left incomplete; refusing in one
line is what is expected (issue 42). ``orrery run``, ``render`` (with camera paths sound and
hostile), ``info``, ``calibrate``, ``bench`` (its tables, a results store to record into and
``bench report``'s store and page), ``devices`` and ``fit-satellite`` run whole; ``orrery play`` and
``orrery-viewer`` open their source and stop at the window (no X server), and ``orrery serve``
is stopped by SIGTERM once it serves. Every subcommand has its cases."""

import argparse
import ast
import os
import random
import subprocess
import sys
from typing import NamedTuple

import numpy as np

from orrery.app.cli import build_parser
from orrery.engine.recording import Recorder, RecordingFile

from .fuzz_child import run_case

SEED = 42
CASES = 84  # 14 of each kind (_cases)

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

_KEY = "[[key]]\ntime = {}\nposition = [{}, 0, 1]\ntarget = [0, 0, 0]\n"


def _camera_paths(folder):
    """Camera path files for ``orrery render --camera``: one sound, the rest as no one should
    write them (syntax, types, values, sizes and nesting)."""
    texts = {"sound": _KEY.format(0, 5) + _KEY.format(1, -5),
             "backwards": _KEY.format(1, 5) + _KEY.format(0, -5),
             "same-time": _KEY.format(0, 5) + _KEY.format(0, -5),
             "nan-time": _KEY.format("nan", 5), "inf-position": _KEY.format(0, "inf"),
             "huge-position": _KEY.format(0, "1e308") + _KEY.format(1, "-1e308"),
             "unknown-key": _KEY.format(0, 5) + "zoom = 3\n",
             "strings": '[[key]]\ntime = "0"\nposition = "here"\ntarget = [0, 0, 0]\n',
             "not-a-table": "key = 3\n", "broken": "[[key]\ntime = 0\n",
             "many-keys": "".join(_KEY.format(t, 5 + t % 2) for t in range(20_000)),
             "deep": "x = " + "[" * 100_000}
    paths = []
    for name, text in texts.items():
        path = folder / f"camera-{name}.toml"
        path.write_text(text)
        paths.append(str(path))
    latin = folder / "camera-latin1.toml"
    latin.write_bytes(_KEY.format(0, 5).encode() + b"# caf\xe9\n")
    return [*paths, str(latin)]


_CATALOGUE = """[[section]]
title = "Direct"

[[measurement]]
id = "rate"
section = "Direct"
what = "cpu-direct f32, N = 16"
unit = "G interactions/s"
machine = "test-machine"
bench = { name = "direct", where = { n = 16 }, column = "ginteractions_per_s" }

[[goal]]
id = "fast"
what = "fast enough"
conditions = [{ measurement = "rate", op = ">=", value = 1.0 }]
"""


def _stores(folder):
    """Results stores for ``orrery bench --record`` and ``bench report``: without a catalogue,
    with noise for one, with a catalogue that contradicts itself, and with rows no benchmark
    wrote."""
    stores = {name: folder / f"store-{name}" for name in ("empty", "noise", "contradiction",
                                                           "rows", "deep")}
    for store in stores.values():
        store.mkdir()
    rng = random.Random(SEED)
    (stores["noise"] / "catalogue.toml").write_bytes(rng.randbytes(2048))
    (stores["noise"] / "noise.jsonl").write_bytes(rng.randbytes(2048))
    (stores["contradiction"] / "catalogue.toml").write_text(
        _CATALOGUE.replace('section = "Direct"', 'section = "Nowhere"').replace(
            "value = 1.0", "value = nan") + '[[goal]]\nid = "x"\nwhat = "x"\nconditions = '
        '[{ measurement = "absent", op = "~", value = "high" }]\n[[measurement]]\nid = 3\n')
    (stores["rows"] / "catalogue.toml").write_text(_CATALOGUE)
    row = ('{"measurement": "rate", "value": %s, "unit": "G interactions/s", "spread": null, '
           '"command": "orrery bench direct", "commit": null, "date": %s, "source": "measured", '
           '"machine": %s}')
    machine = '{"kind": "test-machine", "cpu": "a CPU", "cpus": 2}'
    (stores["rows"] / "test-machine.jsonl").write_text("\n".join([
        row % ("1.5", '"2026-12-01T00:00:00+00:00"', machine),
        row % ('"fast"', '"2026-12-02T00:00:00+00:00"', machine),
        row % ("NaN", '"yesterday"', machine), row % ("1e309", "null", '"a laptop"'),
        row % ("-1", '"2026-12-03T00:00:00+00:00"', "[]"), "[1, 2]", "7", '{"value": 1}', "{"]))
    (stores["deep"] / "catalogue.toml").write_text("x = " + "[" * 100_000)
    return [str(store) for store in stores.values()]


class Inputs(NamedTuple):
    """What the cases draw their file arguments from."""

    files: list[str]  # paths of every kind (_files)
    cameras: list[str]  # camera path files (_camera_paths)
    stores: list[str]  # results stores (_stores)


def _inputs(folder) -> Inputs:
    return Inputs(_files(folder), _camera_paths(folder), _stores(folder))


def _run_case(inputs, rng, out):
    files = inputs.files
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


def _render_case(inputs, rng, out):
    files = inputs.files
    options = {"--fps": NUMBERS, "--point-size": NUMBERS, "--exposure": NUMBERS,
               "--camera": [*files, *inputs.cameras], "--size": ["0x0", "64x48", "1e9x2", "axb"],
               "--frames": ["0", "-1", "x"], "--duration": NUMBERS, "--crf": NUMBERS,
               "--out": [*files, out, out + ".txt"]}
    arguments = ["render", rng.choice(files), "--quiet", "--size", "32x32", "--frames", "2",
                 "--out", out]
    for flag in rng.sample(sorted(options), rng.randint(1, 2)):
        arguments += [flag, rng.choice(options[flag])]
    return arguments


def _camera_case(inputs, rng, out):
    """``orrery render`` of a recording or a live run along a camera path, to a movie."""
    source = rng.choice([[inputs.files[0]], ["plummer", "--n", "64"]])
    return ["render", *source, "--quiet", "--size", "32x32", "--frames", "2", "--out",
            out + ".mp4", "--camera", rng.choice(inputs.cameras)]


def _store_case(inputs, rng, out):
    """A benchmark recorded into a results store, or ``bench report`` from one."""
    store = rng.choice([*inputs.stores, *inputs.files])
    return rng.choice([
        ["bench", "direct", "--n", "16", "--trials", "1", "--warmup", "0", "--no-ceilings",
         "--record", store],
        ["bench", "report", "--store", store, "--out", rng.choice([*inputs.files, out + ".md"]),
         *rng.choice([[], ["--check"]])],
    ])


def _info_case(inputs, rng, out):
    return ["info", rng.choice([*inputs.files, *inputs.cameras])]


def _other_case(inputs, rng, out):
    files = inputs.files
    return rng.choice([
        ["calibrate", "--quiet", "--dry-run", "--n-min", "32", "--n-max", "32", "--trials",
         rng.choice(NUMBERS), "--warmup", "0", "--solvers", "cpu-direct"],
        # (a writable --output would measure the accuracy table: legitimate, and long)
        ["calibrate", "--accuracy", "--output", rng.choice(UNWRITABLE)],
        ["calibrate", "--accuracy", "--dry-run", "--solvers", "cpu-tree", "--scenarios",
         "plummer", "--sizes", rng.choice(["2", "0", "x"]), "--thetas", rng.choice(NUMBERS)],
        ["bench", "direct", "--n", "16", "--trials", "1", "--warmup", "0", "--no-ceilings",
         rng.choice(["--csv", "--json"]), rng.choice([*files, out, out + ".csv"])],
        ["devices", rng.choice(["--json", "--bogus", ""])],
        ["fit-satellite", "--n", rng.choice(["0", "2", "16", "x", "1e308", "9" * 30]),
         "--steps", rng.choice(["0", "-1", "3", "x", "nan"]), "--dt", rng.choice(NUMBERS),
         "--solver", rng.choice(["cpu-direct", "cpu-tree", "gpu-tree", "x"]),
         "--record", rng.choice([*files, out + ".d"])],
    ])


def _cases(inputs, folder):
    rng = random.Random(SEED)
    makers = [_run_case, _render_case, _camera_case, _store_case, _info_case, _other_case]
    return [[argument for argument in makers[i % len(makers)](inputs, rng,
                                                              str(folder / f"out{i}.h5"))
             if argument != ""] for i in range(CASES)]


def test_the_command_line_never_tracebacks_crashes_hangs_or_leaves_a_partial_file(
        tmp_path, monkeypatch):
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path / "cache"))
    failures = []
    for arguments in _cases(_inputs(tmp_path), tmp_path):
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
WINDOW_KINDS = ("play", "serve", "viewer")  # orrery play, orrery serve, orrery-viewer


def test_every_subcommand_has_fuzz_cases(tmp_path):
    subcommands = next(action.choices for action in build_parser()._actions
                       if isinstance(action, argparse._SubParsersAction))
    fuzzed = {arguments[0] for arguments in _cases(_inputs(tmp_path), tmp_path)}
    assert set(subcommands) - fuzzed - set(WINDOW_KINDS) == set()


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
        kind = rng.choice(WINDOW_KINDS)
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


_SPAWNS_BESIDE_THE_SOLVER = """
import sys, threading
spawns = []
def hook(event, arguments):
    if event == "subprocess.Popen":
        solving = any(t.name == "orrery-solver" for t in threading.enumerate())
        spawns.append((arguments[0], solving))
sys.addaudithook(hook)
from orrery.app.viewer import main
code = main(["--scenario", "plummer-cluster", "--n", "16", "--max-fps", "1e6"])
print(repr((code, spawns)), file=sys.__stdout__)
"""


def test_the_viewer_starts_no_process_beside_a_live_runs_solver_thread(tmp_path):
    """pyglet finds its libraries by running ldconfig; after a live run has imported dpctl each
    such subprocess is a fork() of the whole process (dpctl turns vfork off), and the fuzz's live
    viewer cases stalled there beside the stepping solver thread in the whole suite. The window's
    libraries are loaded before the run starts, so no process is started beside it."""
    environment = {**os.environ, "DISPLAY": NO_X_SERVER, "ORRERY_CACHE_DIR": str(tmp_path)}
    environment.pop("WAYLAND_DISPLAY", None)
    result = subprocess.run([sys.executable, "-c", _SPAWNS_BESIDE_THE_SOLVER], env=environment,
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    code, spawns = ast.literal_eval(result.stdout.strip().splitlines()[-1])
    assert code == 2, result.stderr  # no X server: one line
    assert any("ldconfig" in program for program, _ in spawns)  # pyglet's lookups were seen
    assert [program for program, solving in spawns if solving] == []
