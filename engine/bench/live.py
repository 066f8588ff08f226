"""``orrery bench live``: the live viewer's simulation rate and render rate measured together,
against the headless rate of the same run.

For each solver and N, four runs of ``--seconds`` each (after ``--warmup`` seconds untimed):

- ``headless``: the simulation stepped on the main thread, as ``orrery run`` does;
- ``runner``: the solver thread (``SimulationRunner``) with a reader taking ``latest()`` at the
  render cap's rate and drawing nothing;
- ``capped``: the viewer's live path in an EGL context: each frame takes ``latest()``, shows it
  through ``ParticleScene`` (CUDA-GL interop where it works, else the host) and renders it with
  the ``Renderer`` into an output of ``--size``, then sleeps to the next tick of ``--fps``
  (what vsync does);
- ``uncapped``: the same with no sleep, waiting for the GPU to finish every frame (through a
  call that drops the GIL), so ``render_fps`` is the rate the GPU sustains.

Reported: ``steps_per_second``, ``ratio`` (over the headless rate), ``render_fps``, the frames
the solver thread published and the renderer showed, and the upload path.
"""

from __future__ import annotations

import time

from .harness import format_table

HELP = "live viewer path: simulation steps/s and render fps together vs headless (EGL)"
MODES = ("headless", "runner", "capped", "uncapped")
_COLUMNS = ["solver", "n", "mode", "steps_per_second", "ratio", "render_fps", "published",
            "shown", "upload"]


def add_arguments(parser) -> None:
    parser.add_argument("--n", type=int, nargs="+", default=[2000],
                        help="particle counts (default: 2000)")
    parser.add_argument("--solver", nargs="+", default=["cpu-direct"],
                        help="solvers (default: cpu-direct)")
    parser.add_argument("--scenario", default="galaxy-collision",
                        help="scenario (default: galaxy-collision)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                        help=f"what to run (default: {' '.join(MODES)})")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="timed seconds per run (default: 5)")
    parser.add_argument("--warmup", type=float, default=1.0,
                        help="untimed seconds first (default: 1)")
    parser.add_argument("--fps", type=float, default=60.0,
                        help="render cap of the capped run and the reader's rate (default: 60)")
    parser.add_argument("--size", default="1280x720", help="output size WxH (default: 1280x720)")
    parser.add_argument("--point-size", type=float, default=None,
                        help="sprite diameter in pixels (default: the viewer's)")
    parser.add_argument("--target", choices=("rgba32f", "rgba16f"), default="rgba32f",
                        help="accumulation format (default: rgba32f)")
    parser.add_argument("--no-interop", action="store_true",
                        help="upload every frame through the host")
    parser.add_argument("--libgl", help="path of libGL.so.1 where the loader cannot find it")
    parser.add_argument("--libegl", help="path of libEGL.so.1 where the loader cannot find it")


def run(args) -> list[dict]:
    from .. import scenarios
    from ..runner import RunSettings

    rows = []
    for solver in args.solver:
        for n in args.n:
            scenario = scenarios.load(args.scenario, n=n, seed=0)
            settings = RunSettings(scenario=args.scenario, n=n, solver=solver)
            headless = None
            for mode in args.modes:
                row = {"solver": solver, "n": n, "mode": mode,
                       **_measure(mode, scenario, settings, args)}
                if mode == "headless":
                    headless = row["steps_per_second"]
                row["ratio"] = (row["steps_per_second"] / headless) if headless else None
                rows.append(row)
                print(format_table([row], _COLUMNS), flush=True)
    print(format_table(rows, _COLUMNS))
    return rows


def _measure(mode: str, scenario, settings, args) -> dict:
    if mode == "headless":
        return _headless(scenario, settings, args)
    from ..runner import SimulationRunner

    runner = SimulationRunner(settings)
    try:
        if mode == "runner":
            return _reader_only(runner, args)
        return _rendered(runner, args, capped=mode == "capped")
    finally:
        runner.close()


def _headless(scenario, settings, args) -> dict:
    from ..runner import solver_options
    from ..simulation import Simulation
    from ..solvers import make_solver

    options = solver_options(settings.solver, scenario, settings)
    sim = Simulation(scenario.particles, make_solver(settings.solver, **options), dt=scenario.dt)
    _run_for(args.warmup, lambda: sim.step(1))
    sim.positions()
    start, steps = time.perf_counter(), sim.steps
    _run_for(args.seconds, lambda: sim.step(1))
    sim.positions()  # the device has finished every step
    elapsed = time.perf_counter() - start
    return {"steps_per_second": (sim.steps - steps) / elapsed, "render_fps": None,
            "published": None, "shown": None, "upload": None}


def _run_for(seconds: float, body) -> int:
    end, count = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        body()
        count += 1
    return count


def _reader_only(runner, args) -> dict:
    period = 1.0 / args.fps

    def read():
        runner.latest()
        time.sleep(period)

    _run_for(args.warmup, read)
    first, published = runner.latest(), runner.frames_published
    start = time.perf_counter()
    frames = _run_for(args.seconds, read)
    last = runner.latest()
    elapsed = time.perf_counter() - start
    return {"steps_per_second": (last.step - first.step) / elapsed,
            "render_fps": frames / elapsed, "published": runner.frames_published - published,
            "shown": None, "upload": None}


def _rendered(runner, args, *, capped: bool) -> dict:
    from ...app.render import (Camera, ParticleScene, PointStyle, Renderer, ToneMap,
                               headless_context)
    from ...app.render import _gl_calls

    width, height = (int(part) for part in args.size.lower().split("x"))
    ctx = headless_context(libgl=args.libgl, libegl=args.libegl)
    output = ctx.framebuffer(color_attachments=[ctx.texture((width, height), 4)])
    scene = ParticleScene(ctx, interop=not args.no_interop)
    renderer = Renderer(ctx, target_format=args.target)
    style = PointStyle() if args.point_size is None else PointStyle(point_size=args.point_size)
    tone, camera = ToneMap(), Camera()
    camera.fit(runner.latest().positions)
    view_projection = camera.view_projection(width / height)
    period = 1.0 / args.fps
    shown = 0

    def frame():
        nonlocal shown
        tick = time.perf_counter()
        shown += scene.show(runner.latest(), runner.population)
        renderer.render(scene, view_projection, style, tone, output)
        if capped:
            _gl_calls.flush(ctx)
            rest = period - (time.perf_counter() - tick)
            if rest > 0:
                time.sleep(rest)
        else:
            _gl_calls.finish(ctx)

    try:
        _run_for(args.warmup, frame)
        first, published, shown = runner.latest(), runner.frames_published, 0
        start = time.perf_counter()
        frames = _run_for(args.seconds, frame)
        _gl_calls.finish(ctx)
        last = runner.latest()
        elapsed = time.perf_counter() - start
        return {"steps_per_second": (last.step - first.step) / elapsed,
                "render_fps": frames / elapsed,
                "published": runner.frames_published - published, "shown": shown,
                "upload": scene.upload_path if scene.interop_unavailable is None else
                f"{scene.upload_path} ({scene.interop_unavailable})"}
    finally:
        scene.release()
        renderer.release()
        ctx.release()
