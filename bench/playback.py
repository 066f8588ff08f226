"""``orrery bench playback``: how fast recordings are written and replayed, against how fast
the simulation produces frames at the same particle count.

Per precision and particle order (``--order``; a priority file's writer gathers every frame
through its permutation): a recording of ``--frames`` frames of ``--n`` particles is written
through a :class:`Recorder` (wall time from the first ``append`` to ``close``, i.e. into the
page cache, plus the ``fsync`` that makes it durable), then read back from the page cache into a
render-ready buffer: straight from the file (what the Player's prefetch thread does; with
``--prefix K`` also only the first K particles of each frame, what a Player with
``max_particles=K`` reads while playing), through h5py for comparison, and end to end through
the :class:`Player`'s ring. The simulation rows time
one force evaluation of each available CPU solver at ``--sim-n`` particles and scale it to
``--n`` (N^2 for direct summation, N log N for a tree): an estimate, labelled as one.

The ceiling: the same bytes written to the same folder with plain ``os.write`` of one buffer
(the page cache's rate), then ``fsync``ed (the disk's), just before and just after the
recording (the faster is kept). Each write row states its rate as a
fraction of both (``of_ceiling``: of the page-cache rate, which is what a run waits for;
``of_disk``: of the durable rate, the disk's bandwidth), its compression ``ratio`` (frame bytes
over file bytes) and ``of_sim``: frames written per second over the fastest simulation row's
steps per second at ``--n`` (1 or more: the writer keeps up with recording every step). Read
rows state ``of_disk`` and ``of_sim`` the same way. A GPU solver in ``--solver`` (gpu-tree,
say) is timed for real at ``--n``: steps of a Plummer sphere on the device, synchronised at the
end.
"""

from __future__ import annotations

import itertools
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from ..app.text_table import format_table
from ..engine import Simulation, ics
from ..engine import frame_encoding
from ..engine.errors import InvalidInputError
from ..engine.recording import Player, Recorder, RecordingFile
from ..engine.recording import _format as fmt
from ..engine.solvers import make_solver, solver_specs
from ..engine.options import Option
from ..engine.tuning.timing import time_trials
from ._options import BenchmarkSpec, several

HELP = "recording write and replay throughput vs simulation speed"

_SCALING = {"cpu-direct": "n^2", "cpu-tree": "n log n"}


SPEC = BenchmarkSpec("playback", HELP, options=(
    Option("n", int, 1_000_000, "particles", minimum=1),
    Option("frames", int, 300, "frames", minimum=1),
    several(Option("precision", str, None, "", choices=("f16", "f32", "fixed16")),
            ("f16", "f32"), "recording precisions"),
    several(Option("compression", str, None, ""), ("none",),
            "frame compressions: none, blosc2, blosc2-bitshuffle, zfp=ACCURACY (f32 only)"),
    several(Option("order", str, None, "", choices=("natural", "priority")), ("natural",),
            "particle orders (priority: frames gathered through one random permutation, "
            "ADR 0280)"),
    Option("prefix", int, 0, "also time reading only the first PREFIX particles of each frame "
                             "(0: only whole frames)", minimum=0),
    Option("dir", str, None, "folder for the temporary recording (default: the system temp "
                             "folder; needs n*frames*12 bytes free for f32)"),
    Option("trials", int, 5, "timed read passes", minimum=1),
    Option("sim_n", int, 32768, "particles for the timed force evaluation", minimum=2),
    several(Option("solver", str, None, ""), ("cpu-direct", "cpu-tree"),
            "solvers to compare with, where available (gpu-* ones are timed at --n)"),
    Option("sim_steps", int, 20, "timed steps of a gpu-* solver at --n", minimum=1),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    simulated = _simulate(args.n, args.sim_n, args.solver, args.sim_steps)
    at_n = [row["frames_per_s"] for row in simulated if row["n"] == args.n]
    sim_rate = max(at_n) if at_n else None
    rows = []
    for precision, compression, order in itertools.product(args.precision, args.compression,
                                                           args.order):
        try:
            fmt.compression_filter(compression, frame_encoding.named(precision))
        except InvalidInputError as error:
            rows.append({"stage": "write", "precision": precision, "compression": compression,
                         "note": f"skipped: {error}"})
            continue
        with tempfile.TemporaryDirectory(prefix="orrery-playback-", dir=args.dir) as folder:
            path = Path(folder) / f"bench-{precision}.h5"
            size = args.n * 3 * (4 if precision == "f32" else 2) * args.frames
            # Measured before and after the recording, the faster kept: on a shared disk the
            # rate drifts, and the fraction should not flatter the writer.
            before = _raw_write(Path(folder) / "raw.bin", size)
            written = _write(path, args.n, args.frames, precision, compression, order)
            after = _raw_write(Path(folder) / "raw.bin", path.stat().st_size)
            ceiling = max(before, after, key=lambda row: row["mb_per_s"])
            written["of_ceiling"] = written["mb_per_s"] / ceiling["mb_per_s"]
            written["of_disk"] = written["mb_per_s"] / ceiling["durable_mb_per_s"]
            # The frames per second a writer at the ceiling would reach.
            ceiling.update(n=args.n, frames=args.frames,
                           frames_per_s=written["frames_per_s"] / written["of_ceiling"])
            written["note"] += (f"; {100 * written['durable_mb_per_s'] / ceiling['durable_mb_per_s']:.0f}"
                                "% of the raw durable rate")
            read = _read(path, args.trials, args.prefix)
            for row in [written, *read]:
                row["compression"], row["order"] = compression, order
                if row.get("mb_per_s") and row["stage"] != "write":
                    row["of_disk"] = row["mb_per_s"] / ceiling["durable_mb_per_s"]
                if sim_rate and row.get("frames_per_s") and row["frames"] != 1:
                    row["of_sim"] = row["frames_per_s"] / sim_rate
            rows += [written, ceiling, *read]
    rows += simulated
    columns = ["stage", "precision", "compression", "order", "n", "frames", "frames_per_s", "mb_per_s",
               "ratio", "of_ceiling", "of_disk", "of_sim", "iqr_rel", "note"]
    print(format_table(rows, columns))
    return rows


def _frames_to_write(n: int, count: int = 4) -> list[np.ndarray]:
    """A few distinct float32 frames, cycled: a Plummer sphere's positions (the values a
    recording holds, in the order a run keeps them: what a compressor meets), nudged per frame."""
    positions = ics.plummer(n, seed=0).pos.astype(np.float32)
    return [positions + np.float32(1e-3 * k) for k in range(count)]


def _write(path: Path, n: int, frames: int, precision: str, compression: str,
           order: str) -> dict:
    sources = _frames_to_write(n)
    append_seconds = []
    start = time.perf_counter()
    with Recorder(path, masses=np.full(n, 1.0 / n), dtype=precision, compression=compression,
                  attributes={"scenario": "bench"}, order=order) as recorder:
        for index in range(frames):
            before = time.perf_counter()
            recorder.append(sources[index % len(sources)], index * 1e-3, index)
            append_seconds.append(time.perf_counter() - before)
    written = time.perf_counter() - start
    fd = os.open(path, os.O_RDONLY)
    try:
        before = time.perf_counter()
        os.fsync(fd)
        synced = time.perf_counter() - before
    finally:
        os.close(fd)
    size = path.stat().st_size
    frame_bytes = frames * recorder.frame_bytes
    # Later appends wait for the disk (the queue is full), so only the first ones, made while
    # the queue had room, show what a frame costs the simulation's thread.
    unblocked = append_seconds[:max(1, recorder.queue_capacity - 1)]
    return {"stage": "write", "precision": precision, "n": n, "frames": frames,
            "frames_per_s": frames / written, "mb_per_s": size / written / 1e6,
            "ratio": frame_bytes / size,
            "durable_mb_per_s": size / (written + synced) / 1e6,
            "note": f"to page cache/disk; +fsync {synced:.2f} s -> "
                    f"{size / (written + synced) / 1e6:.0f} MB/s durable; append() costs the "
                    f"caller {1e3 * float(np.median(unblocked)):.1f} ms"}


def _raw_write(path: Path, size: int, block_bytes: int = 8 << 20) -> dict:
    """The ceiling for writing ``size`` bytes here: one buffer written over and over with
    ``os.write`` (into the page cache), then ``fsync`` (onto the disk); the file is removed."""
    block = np.random.default_rng(1).integers(0, 256, block_bytes, dtype=np.uint8).tobytes()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        start = time.perf_counter()
        done = 0
        while done < size:
            done += os.write(fd, memoryview(block)[:min(block_bytes, size - done)])
        written = time.perf_counter() - start
        os.fsync(fd)
        synced = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    return {"stage": "write ceiling", "precision": "raw", "frames_per_s": None,
            "mb_per_s": size / written / 1e6, "durable_mb_per_s": size / synced / 1e6,
            "note": f"os.write of the same {size / 1e6:.0f} MB into the page cache; with fsync "
                    f"{size / synced / 1e6:.0f} MB/s (the disk)"}


def _read(path: Path, trials: int, prefix: int) -> list[dict]:
    rows = []
    with RecordingFile(path) as recording:
        count, n = recording.frame_count, recording.n
        buffer = np.empty((n, 3), recording.dtype)
        megabytes = recording.frame_bytes * count / 1e6

        def direct_pass():
            for index in range(count):
                recording.read_into(index, buffer)

        if 0 < prefix < n:
            head = buffer[:prefix]
            timing = time_trials(lambda: [recording.read_into(index, head)
                                          for index in range(count)], warmup=1, trials=trials)
            rows.append({"stage": "read prefix", "precision": recording.dtype.name,
                         "n": prefix, "frames": count, "frames_per_s": count / timing.median,
                         "mb_per_s": head.nbytes * count / timing.median / 1e6,
                         "iqr_rel": timing.relative_iqr,
                         "note": f"the first {prefix} of {n} particles of each frame, page "
                                 "cache -> buffer"})

        def h5py_pass():
            dataset = recording._positions
            for index in range(count):
                dataset.read_direct(buffer, source_sel=np.s_[index])

        for stage, work in (("read direct", direct_pass), ("read via h5py", h5py_pass)):
            timing = time_trials(work, warmup=1, trials=trials)
            rows.append({"stage": stage, "precision": recording.dtype.name, "n": n,
                         "frames": count, "frames_per_s": count / timing.median,
                         "mb_per_s": megabytes / timing.median,
                         "iqr_rel": timing.relative_iqr,
                         "note": "page cache -> render-ready buffer"})
        if recording.dtype == np.float16:
            half = recording.read(0)
            widen = time_trials(lambda: half.astype(np.float32), warmup=1, trials=trials)
            rows.append({"stage": "f16->f32 convert", "precision": "float16", "n": n, "frames": 1,
                         "frames_per_s": 1 / widen.median, "iqr_rel": widen.relative_iqr,
                         "note": "what a renderer without half floats would add per frame"})
    rows.append(_player_pass(path, trials))
    return rows


def _player_pass(path: Path, trials: int) -> dict:
    """Frames per second the Player delivers when the renderer asks for each frame in turn."""
    with Player(path) as player:
        count = player.frame_count

        def scrub_forward():
            player.seek(0)
            for index in range(count):
                player.seek(index)
                while True:
                    frame = player.latest()
                    if frame is not None and frame.stats.index == index:
                        break
                    time.sleep(0)

        timing = time_trials(scrub_forward, warmup=1, trials=trials)
        return {"stage": "Player.latest", "precision": player.dtype.name, "n": player.n,
                "frames": count, "frames_per_s": count / timing.median,
                "mb_per_s": count * player.n * 3 * player.dtype.itemsize / timing.median / 1e6,
                "iqr_rel": timing.relative_iqr,
                "note": "prefetch ring, every frame awaited in order"}


def _simulate(n: int, sim_n: int, names: list[str], steps: int) -> list[dict]:
    rows = []
    specs = solver_specs()
    particles = ics.plummer(sim_n, seed=1)
    for name in names:
        if name not in specs or specs[name].unavailable_reason():
            continue
        if name.startswith("gpu"):
            rows.append(_simulate_on_device(name, n, steps))
            continue
        if name not in _SCALING:
            continue
        solver = make_solver(name, precision="f32", softening=0.01)
        pos, mass = particles.pos.astype(np.float32), particles.mass.astype(np.float32)
        timing = time_trials(lambda: solver.accelerations(pos, mass), warmup=1, trials=3)
        steps = 1.0 / timing.median
        scale = ((n / sim_n) ** 2 if _SCALING[name] == "n^2"
                 else (n * math.log(n)) / (sim_n * math.log(sim_n)))
        rows.append({"stage": f"simulate {name}", "precision": "f32", "n": sim_n,
                     "frames_per_s": steps, "iqr_rel": timing.relative_iqr,
                     "note": "measured: force evaluations (steps) per second"})
        rows.append({"stage": f"simulate {name}", "precision": "f32", "n": n,
                     "frames_per_s": steps / scale,
                     "note": f"estimated from n={sim_n} by {_SCALING[name]} scaling"})
    return rows


def _simulate_on_device(name: str, n: int, steps: int) -> dict:
    """Steps per second of GPU solver ``name`` at ``n`` particles (Plummer), the state on the
    device; the clock stops once the device has finished (a position download)."""
    sim = Simulation(ics.plummer(n, seed=1), make_solver(name, softening=0.01), dt=1e-4)
    sim.step(2)
    sim.positions()
    start = time.perf_counter()
    sim.step(steps)
    sim.positions()
    seconds = time.perf_counter() - start
    return {"stage": f"simulate {name}", "precision": "f32", "n": n, "frames": steps,
            "frames_per_s": steps / seconds,
            "note": f"measured: steps per second on {sim.solver.describe()}"}
