"""``orrery bench live``: the live viewer's simulation rate and render rate measured together,
against the headless rate of the same run.

For each solver and N, four runs of ``--seconds`` each (after ``--warmup`` seconds untimed):

- ``headless``: the simulation stepped on the main thread, as ``orrery run`` does;
- ``runner``: the solver thread (``SimulationRunner``) with a reader taking ``latest()`` at the
  render cap's rate and drawing nothing;
- ``capped``: the viewer's live path in an EGL context: each frame takes ``latest()``, shows it
  through ``ParticleScene`` (CUDA-GL interop where it works, else the host) and renders it with
  the ``Renderer`` (particles coloured by ``--colour``, as the viewer's flag) into an output of
  ``--size``, hands it to the GPU and waits (through calls that drop the GIL) until at most
  ``--frames-in-flight`` frames are queued, as a window's swap chain lets frames queue behind
  the display, then sleeps to the next tick of ``--fps`` (what vsync does: a frame that misses
  a tick waits for the next); as the window does, the particles are accumulated again only when
  a new frame arrived (the camera is still), their light lands in the target once its kernels
  have run (``Renderer.land``), and the target is tone-mapped every frame;
- ``uncapped``: the same with no sleep, so ``render_fps`` is the rate the GPU sustains;
- ``paced``: uncapped, drawing as the window does (``DrawPacing``): a frame only when a new
  step arrived, else waiting for one (the camera is still and nobody touches the panel);
- ``window`` (not run unless named): the viewer itself (``orrery-viewer``, its defaults but the
  scenario, solver, N, ``--size`` and ``--colour``) in a window on the display ``DISPLAY``
  names (``xvfb-run -a orrery bench live ...`` where there is none), the rates read from its
  ``--stats`` records between the end of the warm-up and ``--seconds`` later: what the other
  modes emulate offscreen, shown by a window.

Reported: ``steps_per_second``, ``ratio`` (over the headless rate), ``render_fps``, the frames
the solver thread published and the renderer showed, the upload path, the particle pass
(the compute splat where the frames are on a CUDA device, the host splat where GL is software
and they came through the host, else GL points) and, where the compute splat drew, ``tiled``:
the share of its sprites summed in a work-group's tile in local memory (ADR 0170;
``--tile-pixels 0`` turns the tile off to compare). With ``--rounds`` R
above 1 the modes run R times in turn and each row gives the medians over the rounds, the ratio
as the median of each round's ratio to that round's headless run (neighbouring runs share the
machine's state), and ``ratio_min``/``ratio_max`` across the rounds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..app.render import (COLOUR_MODES, POLL_S, Camera, DrawPacing, FramesInFlight,
                          ParticleScene, PointStyle, Renderer, ToneMap, headless_context,
                          next_tick)
from ..app.text_table import format_table
from ..engine.errors import InvalidInputError
from ..engine.options import Option
from ._options import BenchmarkSpec, several
from .render import window_size

HELP = "live viewer path: simulation steps/s and render fps together vs headless (EGL)"
MODES = ("headless", "runner", "capped", "uncapped", "paced", "window")
# What runs unless --modes says: every mode but the window, which needs a display.
DEFAULT_MODES = MODES[:-1]
# The window's --stats records come every half second (the viewer's STATS_INTERVAL): the reader
# polls at that rate, and gives the viewer this long to open its window and start.
WINDOW_POLL_S = 0.25
WINDOW_START_S = 120.0
_COLUMNS = ["solver", "n", "mode", "steps_per_second", "ratio", "ratio_min", "ratio_max",
            "render_fps", "published", "shown", "upload", "particles", "tiled"]


SPEC = BenchmarkSpec("live", HELP, options=(
    several(Option("n", int, None, "particle counts", minimum=1), (2000,)),
    several(Option("solver", str, None, "solvers"), ("cpu-direct",)),
    Option("scenario", str, "galaxy-collision", "scenario"),
    several(Option("modes", str, None, "", choices=MODES), DEFAULT_MODES, "what to run"),
    Option("seconds", float, 5.0, "timed seconds per run", minimum=0.0, exclusive_minimum=True),
    Option("warmup", float, 1.0, "untimed seconds first", minimum=0.0),
    Option("rounds", int, 1, "times each mode runs, in turn (rows give medians)", minimum=1),
    Option("fps", float, 60.0, "render cap of the capped run and the reader's rate",
           minimum=0.0, exclusive_minimum=True),
    Option("size", window_size, "1280x720", "output size WxH"),
    Option("point_size", float, None, "sprite diameter in pixels (default: the viewer's)",
           minimum=0.0, exclusive_minimum=True),
    Option("colour", str, PointStyle.colour_mode, "what colours the particles, as the viewer's "
                                                  "--colour", choices=COLOUR_MODES),
    Option("frames_in_flight", int, 2, "frames the GPU may hold queued, as a swap chain does "
                                       "(1: every frame is finished before the next starts)",
           minimum=1),
    Option("target", str, "rgba32f", "accumulation format", choices=("rgba32f", "rgba16f")),
    Option("interop", bool, True, "show frames through CUDA-GL interop where it works (off: "
                                  "upload every frame through the host)"),
    Option("splat", bool, True, "draw particles with the compute splat where the frames are on "
                                "a CUDA device, on the host where GL is software (off: GL "
                                "points)"),
    Option("tile_pixels", int, None, "pixels of the compute splat's work-group tile (0: no "
                                     "tile; default and most: the splat's 1024)", minimum=0),
    Option("host_threads", int, None, "threads of the host splat (0: every core; default: the "
                                      "renderer's)", minimum=0),
    Option("libgl", str, None, "path of libGL.so.1 where the loader cannot find it"),
    Option("libegl", str, None, "path of libEGL.so.1 where the loader cannot find it"),
))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    from ..engine import scenarios
    from ..engine.runner import RunSettings

    rows = []
    for solver in args.solver:
        for n in args.n:
            scenario = scenarios.load(args.scenario, n=n, seed=0)
            settings = RunSettings(scenario=args.scenario, n=n, solver=solver)
            runs: dict[str, list[dict]] = {mode: [] for mode in args.modes}
            for _ in range(args.rounds):
                headless = None
                for mode in args.modes:
                    row = {"solver": solver, "n": n, "mode": mode,
                           **_measure(mode, scenario, settings, args)}
                    if mode == "headless":
                        headless = row["steps_per_second"]
                    row["ratio"] = (row["steps_per_second"] / headless) if headless else None
                    runs[mode].append(row)
                    print(format_table([row], _COLUMNS), flush=True)
            rows += [_summary(runs[mode]) for mode in args.modes]
    print(format_table(rows, _COLUMNS))
    return rows


def _summary(runs: list[dict]) -> dict:
    """One mode's row over its rounds: medians of the rates, the ratio's median and range."""
    row = dict(runs[-1])
    for key in ("steps_per_second", "render_fps", "published", "shown"):
        values = [run[key] for run in runs if run[key] is not None]
        row[key] = float(statistics.median(values)) if values else None
    ratios = [run["ratio"] for run in runs if run["ratio"] is not None]
    row["ratio"] = statistics.median(ratios) if ratios else None
    row["ratio_min"] = min(ratios) if ratios else None
    row["ratio_max"] = max(ratios) if ratios else None
    return row


def _measure(mode: str, scenario, settings, args) -> dict:
    if mode == "headless":
        return _headless(scenario, settings, args)
    if mode == "window":
        return _window(settings, args)
    from ..engine.runner import SimulationRunner

    runner = SimulationRunner(settings)
    try:
        if mode == "runner":
            return _reader_only(runner, args)
        return _rendered(runner, args, capped=mode == "capped", paced=mode == "paced")
    finally:
        runner.close()


def _headless(scenario, settings, args) -> dict:
    from ..engine.runner import solver_options
    from ..engine.simulation import Simulation
    from ..engine.solvers import make_solver

    if scenario.model == "flock":  # where a flock runs is its "solver": cpu or a device
        from ..engine.flock import FlockSimulation
        sim = FlockSimulation(scenario.particles, scenario.flock, dt=scenario.dt,
                              device=settings.solver)
    else:
        options = solver_options(settings.solver, scenario, settings)
        sim = Simulation(scenario.particles, make_solver(settings.solver, **options),
                         dt=scenario.dt)
    _run_for(args.warmup, lambda: sim.step(1))
    sim.positions()
    start, steps = time.perf_counter(), sim.steps
    _run_for(args.seconds, lambda: sim.step(1))
    sim.positions()  # the device has finished every step
    elapsed = time.perf_counter() - start
    return {"steps_per_second": (sim.steps - steps) / elapsed, "render_fps": None,
            "published": None, "shown": None, "upload": None, "particles": None,
            "tiled": None}


def _window(settings, args) -> dict:
    """The viewer in a window: steps and frames counted from its ``--stats`` records (each
    with its ``wall`` clock) from the first record past the warm-up to the first ``--seconds``
    after that; the viewer is then stopped."""
    if not os.environ.get("DISPLAY"):
        raise InvalidInputError("--modes window runs the viewer in a window: run it where "
                                "DISPLAY names a display (xvfb-run -a orrery bench live ...)")
    width, height = args.size
    with tempfile.TemporaryDirectory() as folder:
        stats = Path(folder) / "stats.jsonl"
        command = [sys.executable, "-m", "orrery.app.viewer", "--scenario", args.scenario,
                   "--solver", settings.solver, "--n", str(settings.n), "--colour", args.colour,
                   "--size", f"{width}x{height}", "--stats", str(stats)]
        # The viewer picks PyOpenGL's platform for its window; one this process chose (EGL, for
        # a headless context) would leave its UI without a GL context.
        environment = {key: value for key, value in os.environ.items() if key != "PYOPENGL_PLATFORM"}
        viewer = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        try:
            first = _window_record(viewer, stats, lambda record: record["step"] > 0, WINDOW_START_S)
            start = _window_record(viewer, stats, lambda record: record["wall"] >= first["wall"] + args.warmup,
                                   args.warmup + WINDOW_START_S)
            end = _window_record(viewer, stats, lambda record: record["wall"] >= start["wall"] + args.seconds,
                                 args.seconds + WINDOW_START_S)
        finally:
            viewer.terminate()
            viewer.communicate(timeout=30)
    elapsed = end["wall"] - start["wall"]
    return {"steps_per_second": (end["step"] - start["step"]) / elapsed,
            "render_fps": (end["frames"] - start["frames"]) / elapsed, "published": None,
            "shown": end["frames"] - start["frames"], "upload": end["upload"],
            "particles": end["particles"], "tiled": None}


def _window_record(viewer, stats: Path, wanted, timeout: float) -> dict:
    """The first of the viewer's ``--stats`` records that is ``wanted``, waiting for it at most
    ``timeout`` seconds (a viewer that ends first, or never writes it, is an error)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = stats.read_text().splitlines() if stats.exists() else []
        for record in (json.loads(line) for line in lines if line.endswith("}")):
            if wanted(record):
                return record
        if viewer.poll() is not None:
            raise InvalidInputError(f"the viewer ended (status {viewer.returncode}) before its "
                                    f"run was measured: {viewer.stderr.read().strip()[-500:]}")
        time.sleep(WINDOW_POLL_S)
    raise InvalidInputError(f"the viewer wrote no record to measure within {timeout:.0f} s")


def _run_for(seconds: float, body) -> int:
    """Call ``body`` for ``seconds``; returns how many calls did something (did not return
    False)."""
    end, count = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        count += body() is not False
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
            "shown": None, "upload": None, "particles": None,
            "tiled": None}


def _rendered(runner, args, *, capped: bool, paced: bool) -> dict:
    width, height = args.size
    ctx = headless_context(libgl=args.libgl, libegl=args.libegl)
    output = ctx.framebuffer(color_attachments=[ctx.texture((width, height), 4)])
    scene = ParticleScene(ctx, interop=args.interop)
    renderer = Renderer(ctx, target_format=args.target, splat=args.splat,
                        **({} if args.host_threads is None else
                           {"host_threads": args.host_threads}))
    if args.tile_pixels is not None:
        renderer.splat.tile_pixels = args.tile_pixels
    style = PointStyle(colour_mode=args.colour,
                       **({} if args.point_size is None else {"point_size": args.point_size}))
    tone, camera = ToneMap(), Camera()
    camera.fit(runner.latest().positions)
    view_projection = camera.view_projection(width / height)
    period = 1.0 / args.fps
    shown = 0
    queued = FramesInFlight(ctx, args.frames_in_flight)
    pacing = DrawPacing()
    origin = time.perf_counter()  # the cap's first tick

    def frame() -> bool:
        nonlocal shown
        latest = runner.latest()
        if paced and not pacing.due(latest.sequence != scene.sequence):
            runner.wait_for_newer(scene.sequence, POLL_S)
            return False
        changed = scene.show(latest, runner.population)
        shown += changed
        if changed or renderer.size != (width, height):
            renderer.resize(width, height)
            renderer.accumulate(scene, view_projection, style, deferred=True)
        renderer.land()
        renderer.present(output, tone)  # like the window: light reused while nothing changed
        queued.submitted()  # like a swap: the frame queues behind at most a few others
        pacing.drawn()
        if capped:
            now = time.perf_counter()
            rest = next_tick(origin, period, now) - now
            if rest > 0:
                time.sleep(rest)
        return True

    try:
        _run_for(args.warmup, frame)
        first, published, shown = runner.latest(), runner.frames_published, 0
        tile_before = renderer.splat.tile_stats()
        start = time.perf_counter()
        frames = _run_for(args.seconds, frame)
        queued.drain()
        last = runner.latest()
        elapsed = time.perf_counter() - start
        tile = renderer.splat.tile_stats()
        sprites = tile["sprites"] - tile_before["sprites"]
        return {"steps_per_second": (last.step - first.step) / elapsed,
                "render_fps": frames / elapsed,
                "published": runner.frames_published - published, "shown": shown,
                "upload": scene.upload_path if scene.interop_unavailable is None else
                f"{scene.upload_path} ({scene.interop_unavailable})",
                "particles": renderer.particle_path if renderer.splat_unavailable is None else
                f"{renderer.particle_path} ({renderer.splat_unavailable})",
                "tiled": (tile["tiled"] - tile_before["tiled"]) / sprites if sprites else None}
    finally:
        scene.release()
        renderer.release()
        ctx.release()
