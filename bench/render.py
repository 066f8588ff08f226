"""``orrery bench render``: the renderer's frame time, headless through EGL.

A frame is what the viewer draws every refresh: clear the float accumulation target, add N
Gaussian point sprites, tone-map to a 8-bit output of the window's size. The same run times a
bare draw of the same points (constant colour, no sprite profile, no tone mapping) into the same
target, so the ratio says what the look costs. A third figure adds uploading a new frame of
positions, as the live viewer does whenever the solver publishes one. With ``--replay`` the run
also replays a recording of each N through the viewer's own upload and render path
(``_render_replay``), beside the static frame and the bare draw of the same N. With
``--splat DEVICE`` the frame's particles are kept on that compute device and drawn by the
compute splat instead of GL points (with ``--mode density``: the density pyramid splat); where
GL is software (llvmpipe) sprites of host frames are splatted on the host unless
``--no-host-splat``.

Every row also gives the frame's stages, medians over the timed frames of device times: on the
density splat its kernels' events (extent, deposit, reconstruct), on the point splat its
kernels' (splat, resolve), on both the GL copy into the texture; on the host splat the wall
times of its splat and its copy into the texture; on GL paths the draw into the float target (a
GL time query); everywhere the present pass (tone map or colour map, a GL time query).
"""

from __future__ import annotations

import numpy as np

from ..app.text_table import format_table
from ..engine.options import Option
from ..engine.tuning.timing import time_trials
from . import _render_replay
from ._options import BenchmarkSpec, several

HELP = "renderer frame time (sprites + tone map) vs a bare point draw, headless (EGL)"


def window_size(value) -> tuple[int, int]:
    """``"WxH"`` or ``(w, h)``, checked as the CLI's window sizes are
    (``app/command_line.window_size``: argparse's error type, so a flag's message is kept)."""
    from ..app.command_line import window_size as parse

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
    Option("host_splat", bool, True, "sprites of host frames splatted on the host where GL is "
                                     "software (off: GL points)"),
    Option("mode", str, "sprites", "what a frame draws: point sprites, or a density image "
                                   "(mass splatted with a kernel, log scale, colour map)",
           choices=("sprites", "density")),
    Option("neighbours", int, 0, "density: adaptive smoothing from this many neighbours, "
                                 "found once before timing (0: one length for all)", minimum=0),
    Option("trials", int, 15, "timed frames", minimum=1),
    Option("warmup", int, 3, "untimed frames first", minimum=0),
    Option("libgl", str, None, "path of libGL.so.1 where the loader cannot find it"),
    Option("libegl", str, None, "path of libEGL.so.1 where the loader cannot find it"),
    *_render_replay.OPTIONS,
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    from ..app.render import (BarePointPass, Camera, DensityStyle, ParticleScene, PointStyle,
                               Renderer, ToneMap, describe, headless_context)
    from ..engine.compute import open_device
    from ..engine.frames import Frame
    from ..engine.initial_conditions.ics import plummer

    width, height = args.size
    ctx = headless_context(libgl=args.libgl, libegl=args.libegl)
    device = describe(ctx)
    output = ctx.framebuffer(color_attachments=[ctx.texture((width, height), 4)])
    style = (DensityStyle(neighbours=args.neighbours) if args.mode == "density"
             else PointStyle(point_size=args.point_size))
    tone = ToneMap()
    rows, replay_rows = [], []
    draw_timer, present_timer = ctx.query(time=True), ctx.query(time=True)
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
            renderer = Renderer(ctx, target_format=target,
                                host_splat=None if args.host_splat else False)
            renderer.resize(width, height)
            bare = BarePointPass(ctx)

            stages: list[dict] = []
            # the compute splats time their own GL copy (time queries do not nest)
            gl_draw = scene.device is None

            def full_frame():
                renderer.resize(width, height)
                if gl_draw:
                    with draw_timer:
                        renderer.accumulate(scene, view_projection, style)
                else:
                    renderer.accumulate(scene, view_projection, style)
                with present_timer:
                    renderer.present(output, tone)
                ctx.finish()
                stages.append(_stages(renderer, draw_timer if gl_draw else None,
                                      present_timer))

            def bare_frame():
                renderer.begin_accumulation()
                bare.draw(scene, view_projection, point_size=args.point_size)
                ctx.finish()

            sequence = iter(range(1, 1 << 30))

            def upload_and_frame():
                scene.show(Frame(positions, float(next(sequence)), 0, next(sequence)),
                           particles.population)
                full_frame()

            timings = {"frame": time_trials(full_frame, warmup=args.warmup, trials=args.trials)}
            stage_ms = {f"{name}_ms": 1e3 * float(np.median([s.get(name, 0.0)
                                                             for s in stages[-args.trials:]]))
                        for name in stages[-1]}
            for name, fn in (("bare", bare_frame), ("upload", upload_and_frame)):
                timings[name] = time_trials(fn, warmup=args.warmup, trials=args.trials)
            frame = timings["frame"]
            static = {
                "n": n, "target": target, "size": f"{width}x{height}", "mode": args.mode,
                "point_size": args.point_size,
                "frame_ms": 1e3 * frame.median, "frame_iqr_ms": 1e3 * frame.iqr,
                "fps": 1.0 / frame.median,
                "bare_ms": 1e3 * timings["bare"].median,
                "ratio_to_bare": frame.median / timings["bare"].median,
                "with_upload_ms": 1e3 * timings["upload"].median,
                "drift": frame.drift, "device": device,
                "particles": renderer.particle_path, **stage_ms,
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
    print(format_table(rows, ["n", "mode", "target", "frame_ms", "frame_iqr_ms", "fps", "bare_ms",
                              "ratio_to_bare", "with_upload_ms", "drift", "particles"]))
    stage_columns = [name for name in STAGES if any(name in row for row in rows)]
    print("stages (device ms, medians):")
    print(format_table(rows, ["n", "mode", "target", "frame_ms", *stage_columns]))
    if replay_rows:
        print(format_table(replay_rows, ["n", "target", "source", "frame_ms", "frame_iqr_ms",
                                         "fps", "wait_ms", "upload_ms", "draw_ms", "render_ms",
                                         "bare_ms", "ratio_to_render", "new_frames", "drift"]))
    return rows + replay_rows




# The stages a row reports, in frame order.
STAGES = ("draw_ms", "splat_ms", "resolve_ms", "extent_ms", "deposit_ms", "reconstruct_ms",
          "copy_ms", "present_ms")


def _stages(renderer, draw_timer, present_timer) -> dict[str, float]:
    """Seconds of the last frame's stages (the frame has finished)."""
    stages = {"present": present_timer.elapsed * 1e-9}
    if draw_timer is not None:
        stages["draw"] = draw_timer.elapsed * 1e-9
    elif renderer.particle_path == renderer.density_splat.path:
        stages.update(renderer.density_splat.stage_seconds())
    elif renderer.particle_path == renderer.splat.path:
        stages.update(renderer.splat.stage_seconds())
    if renderer.particle_path == renderer.host_splat.path:  # its GL copy is not a draw
        stages.pop("draw", None)
        stages.update(renderer.host_splat.stage_seconds())
    return stages
