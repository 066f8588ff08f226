"""Damaged recordings for test_recording_fuzz.py, and the child process that reads them (so a hang
fails that test at a timeout, and a huge allocation hits a memory limit instead of the machine).

Each case is a JSON spec applied to a copy of a base recording: ``{"flip": [offset, mask]}``,
``{"truncate": size}`` or ``{"edit": name}`` (one of EDITS, h5py changes a hostile or careless
tool could make). The child reads spec lines on stdin, builds the file, opens it as ``orrery
info`` and the Player do (validate, describe, read every frame) and prints one JSON line per case:
the outcome ("ok", or "RecordingError: ...", or anything else with its traceback), the seconds it
took and the process's peak memory so far.

Usage: python recording_fuzz_cases.py BASE_DIR SCRATCH_FILE
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import h5py
import numpy as np

N, FRAMES = 12, 6
# The child's address-space limit: far above what reading these small files needs, far below
# what a size read from a damaged file could ask for.
MEMORY_LIMIT = 1 << 30


def make_clean(path: Path) -> Path:
    from orrery.engine.recording import Recorder

    rng = np.random.default_rng(3)
    with Recorder(path, masses=np.full(N, 1.0 / N), population=np.arange(N) % 2,
                  population_names=("disc", "halo"), velocities=True,
                  attributes={"scenario": "fuzz", "solver_params": {"theta": 0.5}, "dt": 0.01},
                  flush_seconds=0.05) as recorder:
        for step in range(FRAMES):
            recorder.append(rng.normal(size=(N, 3)), 0.01 * step, step,
                            velocities=rng.normal(size=(N, 3)))
    return path


_KILLED_WRITER = """
import os, signal, sys, time
import numpy as np
from orrery.engine.recording import Recorder
attributes = {{"scenario": "fuzz", "solver": "cpu-tree", "dt": 0.01, "softening": 0.05,
              "solver_params": {{"theta": 0.5, "leaf_capacity": 16}}, "integrator": "kdk",
              "units": "N-body units (G = 1; length, mass and time dimensionless)", "G": 1.0}}
recorder = Recorder(sys.argv[1], masses=np.ones({n}), flush_seconds=0.01, attributes=attributes)
for step in range({frames}):
    recorder.append(np.full(({n}, 3), step, np.float32), float(step), step)
while recorder.frames_committed < {frames}:
    time.sleep(0.01)
recorder.append(np.zeros(({n}, 3)), 99.0, 99)  # written perhaps, never committed
os.kill(os.getpid(), signal.SIGKILL)
"""


def make_killed(path: Path) -> Path:
    """A file whose writer was killed after committing FRAMES frames: still marked open for
    writing, so it is read through HDF5's SWMR path."""
    code = _KILLED_WRITER.format(n=N, frames=FRAMES)
    result = subprocess.run([sys.executable, "-c", code, str(path)], timeout=60)
    assert result.returncode == -signal.SIGKILL, result
    return path


def _replace(file, name, **dataset):
    del file[name]
    file.create_dataset(name, **dataset)


def _names(file, data, **options):
    _replace(file, "population_names", data=data, **options)


EDITS = {
    # attributes
    "format_version negative": lambda f: f.attrs.__setitem__("format_version", -1),
    "format_version huge": lambda f: f.attrs.__setitem__("format_version", 2**40),
    "format_version float": lambda f: f.attrs.__setitem__("format_version", 1.0),
    "format_version array": lambda f: f.attrs.__setitem__("format_version", [1, 1]),
    "format array": lambda f: f.attrs.__setitem__("format", ["orrery-recording"] * 2),
    "json attribute broken": lambda f: f.attrs.__setitem__("solver_params", "{not json"),
    "json mark names a number": lambda f: f.attrs.__setitem__("__json", "dt"),
    "attribute of 4 MB": lambda f: f.attrs.create("notes", np.zeros(1 << 19)),
    # positions and velocities
    "positions missing": lambda f: f.__delitem__("positions"),
    "positions a group": lambda f: (f.__delitem__("positions"), f.create_group("positions")),
    "positions soft link to itself": lambda f: (f.__delitem__("positions"),
                                                f.__setitem__("positions",
                                                              h5py.SoftLink("/positions"))),
    "positions soft link to masses": lambda f: (f.__delitem__("positions"),
                                                f.__setitem__("positions",
                                                              h5py.SoftLink("/masses"))),
    "positions external link": lambda f: (f.__delitem__("positions"),
                                          f.__setitem__("positions",
                                                        h5py.ExternalLink("/etc/passwd", "/x"))),
    "positions 2-D": lambda f: _replace(f, "positions", data=np.zeros((FRAMES, N * 3), "f4")),
    "positions int32": lambda f: _replace(f, "positions", data=np.zeros((FRAMES, N, 3), "i4")),
    "positions float64": lambda f: _replace(f, "positions", data=np.zeros((FRAMES, N, 3))),
    "positions complex": lambda f: _replace(f, "positions",
                                            data=np.zeros((FRAMES, N, 3), "c8")),
    "positions four columns": lambda f: _replace(f, "positions",
                                                 data=np.zeros((FRAMES, N, 4), "f4")),
    "positions no particles": lambda f: _replace(f, "positions", shape=(FRAMES, 0, 3), dtype="f4"),
    "positions fewer frames": lambda f: f["positions"].resize(2, axis=0),
    "positions huge compressed chunks": lambda f: _replace(
        f, "positions", shape=(FRAMES, N, 3), maxshape=(None, N, 3), chunks=(2**22, N, 3),
        dtype="f4", compression="gzip"),
    "positions chunks of one particle": lambda f: _replace(
        f, "positions", data=np.zeros((FRAMES, N, 3), "f4"), chunks=(1, 1, 3)),
    "positions gzip": lambda f: _replace(f, "positions", data=np.ones((FRAMES, N, 3), "f4"),
                                         compression="gzip", chunks=(1, N, 3)),
    "positions millions of particles compressed": lambda f: _replace(
        f, "positions", shape=(1, 2**24, 3), chunks=(1, 2**16, 3), dtype="f4",
        compression="gzip"),
    "velocities other shape": lambda f: _replace(f, "velocities",
                                                 data=np.zeros((FRAMES, N + 1, 3), "f4")),
    "velocities float16": lambda f: _replace(f, "velocities",
                                             data=np.zeros((FRAMES, N, 3), "f2")),
    "velocities a group": lambda f: (f.__delitem__("velocities"), f.create_group("velocities")),
    # time and step
    "time 2-D": lambda f: _replace(f, "time", data=np.zeros((FRAMES, 2))),
    "time strings": lambda f: _replace(f, "time", data=["t"] * FRAMES),
    "time nan": lambda f: f["time"].__setitem__(2, np.nan),
    "time inf": lambda f: f["time"].__setitem__(FRAMES - 1, np.inf),
    "time decreasing": lambda f: f["time"].__setitem__(3, -5.0),
    "time huge compressed chunks": lambda f: _replace(
        f, "time", shape=(FRAMES,), maxshape=(None,), chunks=(2**27,), dtype="f8",
        compression="gzip"),
    "time declares 1e8 compressed": lambda f: _replace(
        f, "time", shape=(10**8,), chunks=(2**20,), dtype="f8", compression="gzip"),
    "step negative": lambda f: f["step"].__setitem__(1, -7),
    "step decreasing": lambda f: f["step"].__setitem__(4, 0),
    "step repeated": lambda f: f["step"].__setitem__(2, 1),
    "step uint64 huge": lambda f: _replace(f, "step", data=np.array([0, 1, 2**64 - 1], "u8")),
    "step float": lambda f: _replace(f, "step", data=np.arange(FRAMES, dtype="f8")),
    "step scalar": lambda f: _replace(f, "step", data=3),
    "step all fill": lambda f: f["step"].__setitem__(slice(None), -1),
    # particles
    "masses wrong length": lambda f: _replace(f, "masses", data=np.ones(N + 3)),
    "masses strings": lambda f: _replace(f, "masses", data=["m"] * N),
    "masses scalar": lambda f: _replace(f, "masses", data=1.0),
    "masses declare 1e8 compressed": lambda f: _replace(
        f, "masses", shape=(10**8,), chunks=(2**20,), dtype="f8", compression="gzip"),
    "population label 255": lambda f: f["population"].__setitem__(0, 255),
    "population int8 negative": lambda f: _replace(f, "population", data=-np.ones(N, "i1")),
    "population float": lambda f: _replace(f, "population", data=np.zeros(N)),
    "population scalar": lambda f: _replace(f, "population", data=0),
    "population_names scalar": lambda f: _names(f, "all", dtype=h5py.string_dtype()),
    "population_names empty": lambda f: _replace(f, "population_names", shape=(0,),
                                                 dtype=h5py.string_dtype()),
    "population_names 300": lambda f: _names(f, [f"p{i}" for i in range(300)],
                                             dtype=h5py.string_dtype()),
    "population_names 2-D": lambda f: _names(f, [["disc", "halo"]], dtype=h5py.string_dtype()),
    "population_names integers": lambda f: _names(f, [1, 2]),
    "population_names an empty name": lambda f: _names(f, ["disc", ""],
                                                       dtype=h5py.string_dtype()),
    "population_names bad utf-8": lambda f: _names(f, np.array([b"\xff\xfe", b"halo"])),
    "population_names 10 MB fixed-length strings": lambda f: _replace(
        f, "population_names", shape=(200,), dtype=h5py.string_dtype(length=10 << 20),
        chunks=(1,), compression="gzip"),
    "population_names 1 MB variable-length strings": lambda f: _names(
        f, ["x" * (1 << 20)] * 2, dtype=h5py.string_dtype()),
    "population_names 1e9 compressed": lambda f: _replace(
        f, "population_names", shape=(10**9,), dtype=h5py.string_dtype(length=1),
        chunks=(2**20,), compression="gzip"),
}


def read_like_the_viewer(path: Path) -> None:
    """What ``orrery info`` and the Player do with a file: validate, describe, read frames."""
    from orrery.app.cli.info import describe
    from orrery.engine.recording import RecordingFile

    with RecordingFile(path) as recording:
        describe(recording)
        for index in range(recording.frame_count):
            recording.read(index)
            if recording.has_velocities:
                recording.read(index, velocities=True)


def build(spec: dict, bases: Path, scratch: Path) -> Path:
    shutil.copyfile(bases / spec["base"], scratch)
    if "flip" in spec:
        offset, mask = spec["flip"]
        with open(scratch, "r+b") as handle:
            handle.seek(offset)
            byte = handle.read(1)[0]
            handle.seek(offset)
            handle.write(bytes([byte ^ mask]))
    elif "truncate" in spec:
        os.truncate(scratch, spec["truncate"])
    else:
        with h5py.File(scratch, "r+") as file:
            EDITS[spec["edit"]](file)
    return scratch


def serve(bases: Path, scratch: Path) -> None:
    from orrery.engine.recording import RecordingError

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    for line in sys.stdin:
        spec = json.loads(line)
        path = build(spec, bases, scratch)
        start = time.perf_counter()
        try:
            read_like_the_viewer(path)
            outcome = "ok"
        except RecordingError as error:
            outcome = f"RecordingError: {error}"
        except BaseException:
            outcome = traceback.format_exc()
        print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - start,
                          "peak_bytes": peak_memory()}), flush=True)


def peak_memory() -> int:
    """This process's peak resident memory. VmHWM, not ru_maxrss: on Linux the latter carries
    over the parent's peak through fork and exec."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin"
                                                                 else 1024)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), Path(sys.argv[2]))
