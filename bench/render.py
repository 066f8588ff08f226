"""``orrery bench render``: the renderer's frame time, headless through EGL.

A frame is what the viewer draws every refresh: clear the float accumulation target, add N
Gaussian point sprites, tone-map to a 8-bit output of the window's size. The same run times a
bare draw of the same points (constant colour, no sprite profile, no tone mapping) into the same
target, so the ratio says what the look costs. A third figure adds uploading a new frame of
positions, as the live viewer does whenever the solver publishes one. With ``--replay`` the run
also replays a recording of each N through the viewer's own upload and render path
(``_render_replay``), beside the static frame and the bare draw of the same N. With
``--splat DEVICE`` the frame's particles are kept on that compute device and drawn by the
compute splat instead of GL points.
"""

from __future__ import annotations

import numpy as np

from ..engine.solvers._options import Option
from . import _render_replay
from ._options import BenchmarkSpec, several
from .harness import format_table, time_trials

HELP = "renderer frame time (sprites + tone map) vs a bare point draw, headless (EGL)"


def window_size(value) -> tuple[int, int]:
    """``"WxH"`` or ``(w, h)``, checked as the CLI's window sizes are
    (``app/cli/_arg_types.window_size``: argparse's error type, so a flag's message is kept)."""
    from ..app.cli._arg_types import window_size as parse

    if isinstance(value, str):
        return parse(value)
    width, height = value
    return parse(f"{int(width)}x{int(height)}")


SPEC = BenchmarkSpec("render", HELP, options=(
    several(Option("n", int, None, "particle counts", minimum=1), (20000, 200000, 1000000)),
    Option("size", window_size, "1280x720", "output size WxH"),
    Option("point_size", float, 2.0, "sprite diameter in pixels, same for the bare draw",
           minimum=0.0, exclusive_minimum=True),
    several(Option("target", str, None, "", choices=("rgba32f", "rgba16f")), ("rgba32f",),
            "accumulation formats to time"),
    Option("splat", str, None, "draw with the compute splat on this device (e.g. cuda:0)"),
    Option("trials", int, 15, "timed frames", minimum=1),
    Option("warmup", int, 3, "untimed frames first", minimum=0),
    Option("libgl", str, None, "path of libGL.so.1 where the loader cannot find it"),
    Option("libegl", str, None, "path of libEGL.so.1 where the loader cannot find it"),
    *_render_replay.OPTIONS,
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    from ..app.render import (BarePointPass, Camera, ParticleScene, PointStyle, Renderer,
                               ToneMap, describe, headless_context)
    from ..engine.compute import open_device
    from ..engine.frames import Frame
    from ..engine.ics import plummer

    width, height = args.size
    ctx = headless_context(libgl=args.libgl, libegl=args.libegl)
    device = describe(ctx)
    output = ctx.framebuffer(color_attachments=[ctx.texture((width, height), 4)])
    style, tone = PointStyle(point_size=args.point_size), ToneMap()
    rows, replay_rows = [], []
    splat_device = open_device(args.splat) if args.splat else None
    for n in args.n:
        particles = plummer(n, seed=1)
        positions = particles.pos.astype(np.float32)
        scene = ParticleScene(ctx, compute=splat_device)
        scene.show(Frame(positions, 0.0, 0, 0), particles.population)
        camera = Camera()
        camera.fit(positions)
        view_projection = camera.view_projection(width / height)
        for target in args.target:
            renderer = Renderer(ctx, target_format=target)
            renderer.resize(width, height)
            bare = BarePointPass(ctx)

            def full_frame():
                renderer.render(scene, view_projection, style, tone, output)
                ctx.finish()

            def bare_frame():
                renderer.begin_accumulation()
                bare.draw(scene, view_projection, point_size=args.point_size)
                ctx.finish()

            sequence = iter(range(1, 1 << 30))

            def upload_and_frame():
                scene.show(Frame(positions, float(next(sequence)), 0, next(sequence)),
                           particles.population)
                full_frame()

            timings = {name: time_trials(fn, warmup=args.warmup, trials=args.trials)
                       for name, fn in (("frame", full_frame), ("bare", bare_frame),
                                        ("upload", upload_and_frame))}
            frame = timings["frame"]
            static = {
                "n": n, "target": target, "size": f"{width}x{height}",
                "point_size": args.point_size,
                "frame_ms": 1e3 * frame.median, "frame_iqr_ms": 1e3 * frame.iqr,
                "fps": 1.0 / frame.median,
                "bare_ms": 1e3 * timings["bare"].median,
                "ratio_to_bare": frame.median / timings["bare"].median,
                "with_upload_ms": 1e3 * timings["upload"].median,
                "drift": frame.drift, "device": device,
                "particles": renderer.particle_path,
            }
            rows.append({"source": "static", **static})
            if args.replay:
                for replay in _render_replay.measure(
                        args, ctx=ctx, renderer=renderer, output=output,
                        view_projection=view_projection, style=style, tone=tone,
                        positions=positions, population=particles.population):
                    replay_rows.append({
                        "n": n, "target": target, "size": static["size"],
                        "point_size": args.point_size, **replay,
                        "render_ms": static["frame_ms"], "bare_ms": static["bare_ms"],
                        "ratio_to_render": replay["frame_ms"] / static["frame_ms"],
                        "device": device})
            renderer.release()
        scene.release()
    print(f"renderer: {device}")
    print(format_table(rows, ["n", "target", "frame_ms", "frame_iqr_ms", "fps", "bare_ms",
                              "ratio_to_bare", "with_upload_ms", "drift", "particles"]))
    if replay_rows:
        print(format_table(replay_rows, ["n", "target", "source", "frame_ms", "frame_iqr_ms",
                                         "fps", "wait_ms", "upload_ms", "draw_ms", "render_ms",
                                         "bare_ms", "ratio_to_render", "new_frames", "drift"]))
    return rows + replay_rows


