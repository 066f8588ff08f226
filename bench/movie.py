"""``orrery bench movie``: headless movie export of a recording, stage by stage.

Writes a float16 recording of ``n`` Plummer particles drifting along their velocities
(``frames`` frames: what a reader of a real run reads), or takes ``recording``, then films it
``repeats`` times with ``render_movie`` exactly as ``orrery render`` does, and gives one row per
movie: frames per second of the whole (reading, drawing and encoding overlap; process start and
GL context excluded), and per frame the render thread's stages
(read, upload, draw, GL-timer device time, readback), the encoders' CPU time (conversion, x264,
summed over encoders), the render thread's wait for encoders and muxing, and the tail (the last
segments after the last frame). ``same_bytes`` says whether every repeat wrote the same file.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from ..app.text_table import format_table
from ..engine.errors import InvalidInputError
from ..engine.options import Option
from ._options import BenchmarkSpec
from .render import window_size

HELP = "movie export (orrery render) of a float16 recording, per-stage times and reproducibility"

SPEC = BenchmarkSpec("movie", HELP, options=(
    Option("n", int, 1_000_000, "particles", minimum=1),
    Option("frames", int, 121, "recorded frames, one movie frame each", minimum=2),
    Option("size", window_size, "1920x1080", "movie size WxH"),
    Option("fps", float, 60.0, "frames per second of the movie", minimum=0.0,
           exclusive_minimum=True),
    Option("encoders", int, None, "segments encoded at once (default: the cores)", minimum=1),
    Option("device", str, "auto", "compute device the sprites are splatted on ('none': GL "
                                  "points; 'auto': the first CUDA device if any)"),
    Option("yuv", str, "auto", "where RGB becomes YUV (auto: the GPU unless GL is software)",
           choices=("auto", "gpu", "cpu")),
    Option("repeats", int, 2, "movies made (the same file each time, if reproducible)",
           minimum=1),
    Option("dir", str, None, "where the movies go (default: a temporary folder)"),
    Option("recording", str, None, "the recording to film: written there first (and kept) "
                                   "where it does not exist (default: one in the movies' folder)"),
    Option("libgl", str, None, "path of libGL.so.1 where the loader cannot find it"),
    Option("libegl", str, None, "path of libEGL.so.1 where the loader cannot find it"),
))

COLUMNS = ["n", "frames", "size", "fps", "read_ms", "upload_ms", "draw_ms", "gpu_ms",
           "readback_ms", "convert_ms", "encode_ms", "wait_ms", "mux_ms", "finish_ms",
           "encoders", "segments", "kB_per_frame", "same_bytes", "particles", "yuv"]


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    if args.dir is not None and not Path(args.dir).is_dir():
        raise InvalidInputError(f"--dir {args.dir}: no such folder")
    from ..app.export import FileFrames, MovieSettings, MovieTimes, render_movie, splat_device
    from ..app.render import headless_context
    from ..engine.recording import RecordingFile

    ctx = headless_context(libgl=args.libgl, libegl=args.libegl)
    compute = splat_device(args.device)
    gpu_yuv = None if args.yuv == "auto" else args.yuv == "gpu"
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        recording = Path(args.recording or Path(folder) / "movie.h5")
        if not recording.exists():
            _drifting_plummer(recording, args.n, args.frames)
        rows, digests = [], set()
        for repeat in range(args.repeats):
            path = Path(folder) / f"movie-{repeat}.mp4"
            times = MovieTimes()
            with RecordingFile(recording) as file:
                render_movie(FileFrames(file), path, MovieSettings(size=args.size, fps=args.fps),
                             ctx=ctx, compute=compute, gpu_yuv=gpu_yuv, encoders=args.encoders,
                             times=times)
            digests.add(hashlib.sha256(path.read_bytes()).hexdigest())
            stages = times.per_frame_ms()
            rows.append({
                "n": _particles(recording), "frames": times.frames,
                "size": f"{args.size[0]}x{args.size[1]}",
                "repeat": repeat, "fps": stages["fps"], "total_s": times.total,
                **{f"{name}_ms": stages[name] for name in (
                    "read", "upload", "draw", "gpu", "readback", "reorder", "convert", "encode",
                    "wait", "mux", "finish")},
                "encoders": times.encoders, "segments": times.segments,
                "kB_per_frame": times.bytes / times.frames / 1e3,
                "particles": times.particles, "yuv": times.conversion})
    for row in rows:
        row["same_bytes"] = len(digests) == 1
    print(format_table(rows, COLUMNS))
    return rows


def _particles(path: Path) -> int:
    from ..engine.recording import RecordingFile

    with RecordingFile(path) as file:
        return len(file.masses)


def _drifting_plummer(path: Path, n: int, frames: int) -> Path:
    from ..engine.initial_conditions.ics import plummer
    from ..engine.recording import Recorder

    particles = plummer(n, seed=1)
    dt = 0.02
    with Recorder(path, masses=particles.mass, population=particles.population,
                  dtype="float16") as recorder:
        for index in range(frames):
            recorder.append(particles.pos + (index * dt) * particles.vel, index * dt, index)
    return path


__all__ = ["SPEC", "run"]
