"""``orrery-viewer``: open the desktop viewer on a live simulation or a recording."""

from __future__ import annotations

import argparse
import os
import sys

from ...engine import portable, scenarios
from ...engine._optional import require
from ...engine.errors import InvalidInputError
from ...engine.options import CHECK_ACCURACY
from ..command_line import REPORTED, integer, number, output_file, report, window_size
from ..render._detail import DEFAULT_MAX_DRAWN

NO_DISPLAY = ("orrery-viewer: no display to open a window on ({reason}); headless commands: "
              "`orrery run` (simulate), `orrery bench` (benchmarks)")
# What the window, renderer, panel and screenshots import: checked before anything starts, so a
# broken install is one line up front rather than a traceback (or, for Pillow, one at the end).
VIEWER_PACKAGES = ("pyglet", "moderngl", "imgui_bundle", "OpenGL", "PIL")
# When --screenshot-at takes a scripted screenshot (ViewerWindow.run's screenshot_at).
SCREENSHOT_MOMENTS = ("last", "longest-tails")


def default_scenario() -> str:
    return "galaxy-collision" if "galaxy-collision" in scenarios.names() else "plummer-cluster"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orrery-viewer",
        description="Watch an N-body simulation live (or replay a recording) in a window.")
    add_source_arguments(parser)
    parser.add_argument("--bloom", type=number(at_least=0), default=0.0,
                        help="glow around bright light (0: none; default 0)")
    parser.add_argument("--size", type=window_size, default="1280x720",
                        help="window size WxH (default: 1280x720)")
    parser.add_argument("--no-vsync", action="store_true",
                        help="draw without waiting for the display's refresh")
    parser.add_argument("--max-fps", type=number(at_least=0), default=60.0,
                        help="cap on the render rate, leaving CPU to the solver "
                             "(0: none; default 60)")
    parser.add_argument("--frames", type=integer(minimum=1), default=None,
                        help="render this many frames, then exit (for scripts and tests)")
    parser.add_argument("--screenshot", metavar="FILE", type=output_file,
                        help="with --frames: save the last frame (with the UI) as PNG")
    parser.add_argument("--screenshot-at", choices=SCREENSHOT_MOMENTS, default="last",
                        help="with --screenshot: the last frame, or the one whose tidal tails "
                             "reach furthest (a galaxy collision) (default: last)")
    parser.add_argument("--panel", choices=("open", "collapsed", "hidden"), default="open",
                        help="the control panel at the start: open, collapsed to its title bar, "
                             "or hidden (H shows it) (default: open)")
    parser.add_argument("--stats", metavar="FILE", type=output_file,
                        help="append live statistics as JSON lines every half second")
    return parser


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """What to show and how it looks: the flags ``orrery-viewer`` and ``orrery serve`` share."""
    parser.add_argument("--scenario", default=None,
                        help=f"scenario to run (default: {default_scenario()}); one of "
                             f"{', '.join(scenarios.names())}")
    parser.add_argument("--n", type=integer(minimum=1), default=None,
                        help="particle count (default: the scenario's)")
    parser.add_argument("--seed", type=integer(minimum=0), default=0,
                        help="random seed of the initial conditions")
    parser.add_argument("--solver", default=None,
                        help="solver name or 'auto'; for a flock, 'cpu' or a device such as "
                             "'cuda:0' (default: the scenario's choice)")
    parser.add_argument("--dt", type=float, default=None,
                        help="time step (default: the scenario's)")
    parser.add_argument("--check-accuracy", type=integer(minimum=1), default=None, metavar="K",
                        help=CHECK_ACCURACY.doc)
    parser.add_argument("--paused", action="store_true",
                        help="start with the simulation (or the replay) paused")
    parser.add_argument("--play", metavar="FILE", help="replay a recording instead of simulating")
    parser.add_argument("--load", metavar="SNAPSHOT",
                        help="another code's snapshot (GADGET, SWIFT, AREPO, Tipsy, RAMSES ... "
                             "through pynbody): one file starts a run from it, paused; a glob "
                             "pattern ('snap_*.hdf5') plays the sequence as a timeline")
    parser.add_argument("--family", default=None,
                        help="with --load: show only this family (dm, star, gas, ...)")
    parser.add_argument("--colour", choices=("population", "speed", "heading"),
                        default="population",
                        help="colour particles by population, speed or heading (direction of "
                             "travel) (default: population)")
    parser.add_argument("--render", choices=("sprites", "density"), default="sprites",
                        help="draw point sprites, or a density image through a colour map "
                             "(default: sprites)")
    parser.add_argument("--colour-map", default="magma",
                        help="density colour map (viridis, magma, inferno, plasma, cividis)")
    parser.add_argument("--exposure", type=number(above=0), default=None,
                        help="tone-mapping exposure (default: automatic in the viewer, "
                             "0.6 in `orrery serve`)")
    parser.add_argument("--max-drawn", type=integer(minimum=1), default=DEFAULT_MAX_DRAWN,
                        metavar="K",
                        help="point sprites draw at most K particles, a fair sample with its "
                             "light scaled to stand for all, while the picture changes; a still "
                             "picture is refined to every particle. A recording stored in "
                             "priority order is read K particles a frame while it plays "
                             f"(default {DEFAULT_MAX_DRAWN:,})")


def _display_problem() -> str | None:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        return "DISPLAY is not set"
    return None


def open_source(args):
    """The FrameSource ``add_source_arguments``' flags name: a live run, a replay or snapshots.
    Flags the source would ignore (a replay's run is the recorded one) are refused."""
    given = {"--scenario": args.scenario}
    if args.play:
        given.update({"--load": args.load, "--n": args.n, "--solver": args.solver,
                      "--dt": args.dt})
    ignored = [flag for flag, value in given.items() if value is not None]
    if (args.play or args.load) and ignored:
        raise InvalidInputError(f"{', '.join(ignored)} cannot apply to "
                                f"{'--play' if args.play else '--load'}")
    if args.load:
        return _open_snapshots(args)
    if args.play:
        from ...engine.recording import PRIORITY, Player, RecordingFile

        recording = RecordingFile(args.play)
        # any prefix a fair sample: read K particles a frame while playing, from the first read
        player = Player(recording, max_particles=args.max_drawn
                        if recording.order == PRIORITY else None)
        if player.live:  # a recording still being written: join it at its newest frame
            player.seek(player.frame_count - 1)
        if not args.paused:
            player.play()
        return player
    from ...engine.runner import RunSettings, SimulationRunner

    settings = RunSettings(scenario=args.scenario or default_scenario(), n=args.n, seed=args.seed,
                           solver=args.solver, dt=args.dt, check_accuracy=args.check_accuracy)
    return SimulationRunner(settings, paused=args.paused)


def _open_snapshots(args):
    from ...engine import snapshots
    from ...engine.recording import Player
    from ...engine.runner import RunSettings, SimulationRunner
    from ...engine.snapshot_series import SnapshotSeries

    paths = snapshots.expand(args.load)
    if len(paths) == 1:  # one snapshot: look at it first, space evolves it
        settings = RunSettings(scenario=scenarios.SnapshotScenario(paths[0], args.family),
                               n=args.n, seed=args.seed, solver=args.solver, dt=args.dt,
                               check_accuracy=args.check_accuracy)
        return SimulationRunner(settings, paused=True)
    player = Player(SnapshotSeries(paths, family=args.family))
    if not args.paused:
        player.play()
    return player


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(build_parser().parse_args(argv))
    except REPORTED as error:
        return report("orrery-viewer", error)


def _main(args) -> int:
    if args.screenshot and args.frames is None:
        print("orrery-viewer: error: --screenshot needs --frames", file=sys.stderr)
        return 2
    # PyOpenGL (used by the imgui renderer) must talk to the same GL platform as pyglet's window.
    gl_platform = portable.opengl_platform(display=bool(os.environ.get("DISPLAY")))
    if gl_platform:
        os.environ.setdefault("PYOPENGL_PLATFORM", gl_platform)
    for package in VIEWER_PACKAGES:
        require(package)  # a MissingPackageError, reported in one line by main()
    problem = _display_problem()
    if problem:
        print(NO_DISPLAY.format(reason=problem), file=sys.stderr)
        return 2
    # The window's libraries are loaded before the source starts: pyglet finds them by running
    # ldconfig, and once a live run has imported dpctl, every subprocess is a fork() of the whole
    # process (dpctl turns vfork off), made beside the running solver thread (issue 42). Without a
    # display, or with any other failure of that import, the source is still opened, so that
    # its own errors are reported first (a pyglet that another part of the process loaded
    # headless fails its GL import with a GLException, not a display error).
    try:
        from ._window import ViewerWindow
        window_error = None
    except Exception as error:
        window_error = error
    try:
        source = open_source(args)
    except OSError as error:
        print(f"orrery-viewer: error: {error}", file=sys.stderr)
        return 2
    if window_error is not None:
        source.close()
        if not _no_display(window_error):
            raise window_error
        print(NO_DISPLAY.format(reason=str(window_error) or type(window_error).__name__),
              file=sys.stderr)
        return 2
    try:
        window = ViewerWindow(source, size=args.size, max_fps=args.max_fps,
                              vsync=not args.no_vsync, stats_path=args.stats, panel=args.panel,
                              max_drawn=args.max_drawn)
        window.point_style.colour_mode = args.colour
        window.panel.mode = args.render
        window.tone.bloom = args.bloom
        window.tone.validate()
        window.panel.density.colour_map = args.colour_map
        window.panel.density.validate()
        if args.exposure is not None:  # a fixed exposure instead of the automatic one
            window.tone.exposure, window.tone.auto_exposure = args.exposure, False
    except BaseException as error:
        source.close()
        if _no_display(error):
            print(NO_DISPLAY.format(reason=str(error) or type(error).__name__), file=sys.stderr)
            return 2
        raise
    return window.run(frames=args.frames, screenshot=args.screenshot,
                      screenshot_at=args.screenshot_at)


def _no_display(error: BaseException) -> bool:
    """Whether ``error`` is pyglet's "no display" (raised by its import, which connects, or by
    the window): pyglet names these errors per platform (pyglet.display.xlib, ...), so by name."""
    return type(error).__name__ in ("NoSuchDisplayException", "NoSuchConfigException")
