"""``orrery render SOURCE --out movie.mp4``: a movie of a recording, a snapshot sequence or a live
run, rendered off screen (EGL where there is no display) along an optional camera path."""

from __future__ import annotations

import sys

from tqdm import tqdm

from ...engine import Simulation, make_solver, scenarios, snapshots
from ...engine.errors import RecordingError
from ...engine.recording import RecordingFile
from ..command_line import (MAX_WINDOW_SIDE, integer, number, raise_if_stopped,
                            stops_at_safe_points, video_file)


def add_parser(subparsers) -> None:
    from ..export._video import DEFAULT_CRF, DEFAULT_PRESET, MAX_FPS, MIN_FPS

    parser = subparsers.add_parser(
        "render", help="render a movie (mp4) headless",
        description="Render a movie of a recording (.h5), another code's snapshot sequence "
                    "('snap_*.hdf5', read through pynbody) or a live run of a scenario, off "
                    "screen, along a camera path. The same inputs give the same frames.")
    parser.add_argument("source", help="a recording, a snapshot file or glob pattern, or a "
                                       f"scenario name ({', '.join(scenarios.names())})")
    parser.add_argument("--out", required=True, metavar="MOVIE", type=video_file,
                        help="the video to write (.mp4, .m4v, .mov or .mkv)")
    parser.add_argument("--camera", metavar="PATH", help="camera path (TOML keyframes; the "
                        "viewer's C key saves one); default: a fixed camera framing the data")
    parser.add_argument("--size", default="1920x1080", help="WxH pixels (default 1920x1080)")
    parser.add_argument("--fps", type=number(at_least=MIN_FPS, at_most=MAX_FPS), default=None,
                        help=f"frames per second, {MIN_FPS:g} to {MAX_FPS:g} (default "
                             f"{DEFAULT_FPS:g}; a recording or snapshot series filmed one movie "
                             f"frame per source frame, at most {DEFAULT_FPS:g} fps and at least "
                             f"{SHORTEST_DEFAULT_FPS:g}, so that it lasts {MOVIE_SECONDS:g} s)")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--frames", type=integer(minimum=1), default=None,
                        help="movie frames (default: one per source frame; the camera path's "
                             "length; 300 for a live run)")
    length.add_argument("--duration", type=number(above=0), default=None, help="movie length in seconds")
    parser.add_argument("--family", default=None, help="snapshots: only this family")
    parser.add_argument("--n", type=integer(minimum=1), default=None, help="live run: particle count")
    parser.add_argument("--seed", type=integer(minimum=0), default=0, help="live run: random seed")
    parser.add_argument("--solver", default=None, help="live run: solver (default: the "
                                                       "scenario's)")
    parser.add_argument("--steps-per-frame", type=integer(minimum=1), default=1,
                        help="live run: simulation steps between movie frames (default 1)")
    parser.add_argument("--mode", choices=("sprites", "density"), default="sprites",
                        help="point sprites (light) or a kernel-splatted density image through a "
                             "colour map (default: sprites)")
    parser.add_argument("--colour-map", default="magma", help="density mode: colour map "
                        "(viridis, magma, inferno, plasma, cividis; default magma)")
    parser.add_argument("--smoothing", type=number(above=0), default=None,
                        help="density mode: kernel smoothing length (default: from the data)")
    parser.add_argument("--colour", choices=("population", "speed"), default="population",
                        help="sprites: colour by population or speed; density: 'speed' colours "
                             "by the mass-weighted mean speed")
    parser.add_argument("--exposure", type=number(above=0), default=None, help="tone-map exposure")
    parser.add_argument("--point-size", type=number(above=0, at_most=MAX_WINDOW_SIDE),
                        default=None, help="sprite size, pixels")
    parser.add_argument("--bloom", type=number(at_least=0), default=0.0,
                        help="sprites: glow around bright light (0: none; default 0)")
    parser.add_argument("--max-drawn", type=integer(minimum=1), default=None, metavar="K",
                        help="sprites: draw each frame from a fair sample of K particles, its "
                             "light scaled to stand for all (a quick preview of a large run; "
                             "default: every particle)")
    parser.add_argument("--crf", type=integer(minimum=0), default=DEFAULT_CRF,
                        help=f"H.264 quality, 0 (lossless) .. 51 (default {DEFAULT_CRF})")
    parser.add_argument("--preset", default=DEFAULT_PRESET,
                        help=f"x264 speed preset (default {DEFAULT_PRESET})")
    parser.add_argument("--encoder-threads", type=integer(minimum=0), default=1,
                        help="x264 threads per encoder (default 1: the same inputs give the same "
                             "file; 0: all cores, not measured to be reproducible)")
    parser.add_argument("--encoders", type=integer(minimum=1), default=None,
                        help="segments encoded at once, each by its own x264 (default: the "
                             "cores this process may use; the file does not depend on it)")
    parser.add_argument("--device", default="auto", help="splat point sprites on this compute "
                        "device (e.g. cuda:0) instead of drawing GL points; 'none': GL points, "
                        "or the host splat where GL is software "
                        "(default 'auto': the first CUDA device, if there is one)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", action="store_true",
                        help="print where the time went, per stage and frame")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from ..export import (FileFrames, LiveFrames, MovieSettings, MovieTimes, parse_size,
                          render_movie, splat_device)
    from ..render import DensityStyle, PointStyle, ToneMap
    from ..render._camera_path import CameraPath

    tone = ToneMap(bloom=args.bloom)
    if args.mode == "density":
        style = DensityStyle(smoothing=args.smoothing, colour_map=args.colour_map,
                             quantity="speed" if args.colour == "speed" else "density")
    else:
        style = PointStyle(colour_mode=args.colour)
        if args.point_size is not None:
            style.point_size = args.point_size
    if args.exposure is not None:
        tone.exposure = args.exposure
    settings = MovieSettings(size=parse_size(args.size), fps=args.fps or DEFAULT_FPS,
                             frames=args.frames,
                             duration=args.duration, style=style, tone=tone,
                             max_drawn=args.max_drawn,
                             camera=CameraPath.load(args.camera) if args.camera else None)
    source = _open(args, FileFrames, LiveFrames, settings)
    chosen = ""
    if args.fps is None and isinstance(source, FileFrames) and args.frames is None \
            and args.duration is None and settings.camera is None:
        settings.fps = film_rate(source.count)
        if settings.fps != DEFAULT_FPS:
            chosen = (f"; {settings.fps:g} fps films the {source.count} source frames in "
                      f"{source.count / settings.fps:.3g} s (--fps, --duration or --frames set "
                      "it)")
    compute = splat_device(args.device)
    times = MovieTimes()
    def progress(done, total):
        bar.update(1)
        raise_if_stopped()  # a stop signal ends the movie after a whole frame

    with tqdm(total=settings.frame_count(source), unit="frame", disable=args.quiet,
              file=sys.stderr, dynamic_ncols=True) as bar, stops_at_safe_points():
        written = render_movie(source, args.out, settings, crf=args.crf, preset=args.preset,
                               threads=args.encoder_threads, encoders=args.encoders,
                               compute=compute, times=times, progress=progress)
    print(f"{args.out}: {written} frames, {settings.size[0]}x{settings.size[1]} at "
          f"{settings.fps:g} fps ({written / settings.fps:.2f} s){chosen}")
    if args.verbose:
        print(times.describe())
    return 0


# Movies of a recording or snapshot series without --fps, --frames, --duration or a camera path:
# one movie frame per source frame, at DEFAULT_FPS when there are enough frames for
# MOVIE_SECONDS, else slower (a recording of every 10th step of 200 was a 0.35 s movie), but no
# slower than SHORTEST_DEFAULT_FPS.
DEFAULT_FPS = 60.0
MOVIE_SECONDS = 10.0
SHORTEST_DEFAULT_FPS = 1.0


def film_rate(source_frames: int) -> float:
    """The default frame rate of a movie filming ``source_frames`` frames one to one."""
    rate = min(DEFAULT_FPS, max(SHORTEST_DEFAULT_FPS, source_frames / MOVIE_SECONDS))
    return float(f"{rate:.3g}")


def _open(args, file_frames, live_frames, settings):
    """The frames ``args.source`` names: a recording, snapshots, or a scenario run live."""
    if args.source in scenarios.names():
        scenario = scenarios.load(args.source, n=args.n, seed=args.seed)
        name = args.solver or scenario.solver
        solver = make_solver(name, softening=scenario.softening, **(
            scenario.solver_options if args.solver is None else {}))
        frames = settings.frames or (round(settings.duration * settings.fps) if settings.duration
                                     else None)
        from ..export._movie import DEFAULT_LIVE_FRAMES

        return live_frames(Simulation(scenario.particles, solver, dt=scenario.dt),
                           count=frames or DEFAULT_LIVE_FRAMES,
                           steps_per_frame=args.steps_per_frame)
    paths = snapshots.expand(args.source)
    if len(paths) == 1:
        try:
            return file_frames(RecordingFile(paths[0]))
        except RecordingError as not_a_recording:
            if not snapshots.looks_like_snapshot(paths[0]):
                raise not_a_recording
    from ...engine.snapshot_series import SnapshotSeries

    return file_frames(SnapshotSeries(paths, family=args.family))
