"""Replay through the viewer's own path, headless: the ``--replay`` part of ``orrery bench render``.

A temporary recording of ``--frames`` frames (a Plummer sphere turning about the z axis) is
written with the :class:`Recorder` in each ``--precision``, then a :class:`Player` feeds it to
the pieces the window uses for every frame: ``Player.latest()``, ``ParticleScene.show`` (the
upload; float16 frames go up as half floats) and ``Renderer.render`` (point sprites, tone map),
closed by ``ctx.finish()`` instead of a buffer swap or a readback. Every timed frame is a new
recording frame (the play head steps by one, wrapping at the end), so the rate is frames
delivered, not redraws of one frame.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

import numpy as np

from ..engine.recording import Player, Recorder
from ..engine.options import Option
from ..engine.tuning.timing import Timing
from ._options import several

PRECISIONS = ("f16", "f32")


# The ``--replay`` options of ``orrery bench render``.
OPTIONS = (
    Option("replay", bool, False, "also time replaying a recording of each N through the "
                                  "viewer's upload and render path (temporary file; see --frames)"),
    Option("frames", int, 60, "frames in the replay recording", minimum=1),
    several(Option("precision", str, None, "", choices=PRECISIONS), PRECISIONS,
            "replay recording precisions"),
    Option("dir", str, None, "folder for the temporary recording (default: the system temp "
                             "folder; needs n*frames*12 bytes for f32)"),
)


def measure(args, *, ctx, renderer, output, view_projection, style, tone, positions,
            population) -> list[dict]:
    """Rows (one per precision) of replay frame times for one N and accumulation target.

    ``positions`` (float32, (n, 3)) is the first frame; ``view_projection``, ``style`` and
    ``tone`` are those of the static frame the caller times, so the two compare directly.
    """
    from ..app.render import ParticleScene

    rows = []
    for precision in args.precision:
        with tempfile.TemporaryDirectory(prefix="orrery-render-replay-", dir=args.dir) as folder:
            path = Path(folder) / f"replay-{precision}.h5"
            _write_turning(path, positions, population, args.frames, precision)
            with Player(path, loop=True) as player:
                scene = ParticleScene(ctx)
                try:
                    samples = _replay(player, scene, renderer, output, view_projection, style,
                                      tone, ctx, warmup=args.warmup, trials=2 * args.frames)
                finally:
                    scene.release()
                rows.append(_row(samples, player.dtype.name, scene_format=scene.position_format))
    return rows


def _write_turning(path: Path, positions: np.ndarray, population: np.ndarray, frames: int,
                   precision: str) -> None:
    """``frames`` frames of ``positions`` turned about z by one full turn over the recording."""
    with Recorder(path, masses=np.full(len(positions), 1.0 / len(positions)),
                  population=population, dtype={"f16": "float16", "f32": "float32"}[precision],
                  attributes={"scenario": "bench render --replay"}) as recorder:
        for index in range(frames):
            angle = 2.0 * math.pi * index / frames
            cos, sin = math.cos(angle), math.sin(angle)
            turn = np.array([[cos, -sin, 0.0], [sin, cos, 0.0], [0.0, 0.0, 1.0]], np.float32)
            recorder.append(positions @ turn.T, index * 1e-2, index)


def _replay(player, scene, renderer, output, view_projection, style, tone, ctx, *, warmup: int,
            trials: int) -> dict[str, list]:
    """Step the play head, wait for the frame, upload it, render it; time each part."""
    samples = {"frame": [], "wait": [], "upload": [], "draw": [], "sequences": []}
    population = player.population
    for repeat in range(warmup + trials):
        start = time.perf_counter()
        player.step(1)
        wanted = player.position
        while True:
            frame = player.latest()
            if frame is not None and frame.stats.index == wanted:
                break
            time.sleep(0)
        shown = time.perf_counter()
        new = scene.show(frame, population)
        uploaded = time.perf_counter()
        renderer.render(scene, view_projection, style, tone, output)
        ctx.finish()
        done = time.perf_counter()
        if repeat >= warmup:
            samples["frame"].append(done - start)
            samples["wait"].append(shown - start)
            samples["upload"].append(uploaded - shown)
            samples["draw"].append(done - uploaded)
            samples["sequences"].append(scene.sequence if new else None)
    return samples


def _row(samples: dict[str, list], dtype_name: str, *, scene_format: str) -> dict:
    frame = Timing(tuple(samples["frame"]))
    sequences = samples["sequences"]
    return {
        "source": f"replay {dtype_name}",
        "frame_ms": 1e3 * frame.median, "frame_iqr_ms": 1e3 * frame.iqr,
        "fps": 1.0 / frame.median, "drift": frame.drift,
        "wait_ms": 1e3 * float(np.median(samples["wait"])),
        "upload_ms": 1e3 * float(np.median(samples["upload"])),
        "draw_ms": 1e3 * float(np.median(samples["draw"])),
        "timed_frames": len(sequences),
        "new_frames": len({s for s in sequences if s is not None}),
        "vertex_format": scene_format,
    }
