"""Movies without a window: a recording, a snapshot sequence or a live run, drawn by the viewer's
renderer into an off-screen target (EGL) along a camera path, encoded by :mod:`._video`.

Everything is numbered, nothing is timed: movie frame ``i`` shows the camera at ``i / fps``
seconds and source frame ``round(i * (count - 1) / (frames - 1))`` (a live run advances a fixed
number of steps per frame), so the same inputs give the same movie, bit for bit, whatever the
machine's speed.

A pipeline (ADR 0128): a reader thread reads the next source frame while this one is drawn; the
GPU converts each picture to yuv420p and two pixel buffers carry it back while the next one is
drawn; encoder threads encode segments of the movie at once (``_video``). ``MovieTimes`` says
where the time went.
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Protocol

import numpy as np

from ...engine.errors import InvalidInputError
from ...engine.frames import Frame
from ..render import (Camera, DensityStyle, ParticleScene, PointStyle, Renderer, ToneMap,
                      headless_context, population_weights)
from ..render._camera_path import CameraPath
from ..render._context import is_software
from ..render._yuv420_pass import PIXEL_BUFFERS, Yuv420Pass
from ._video import VideoWriter, segment_plan

time_now = time.perf_counter  # (``render`` has an argument named ``time``)

# Frames a movie of a live run has when neither --frames nor --duration says.
DEFAULT_LIVE_FRAMES = 300


class FrameSequence(Protocol):
    """Numbered frames to film: ``count``, ``frame(index)`` -> (positions, time, step),
    ``population`` and ``population_names``; ``read_ahead``: the next frame may be read on
    another thread while this one is drawn."""

    count: int
    population: np.ndarray
    population_names: tuple[str, ...]
    masses: np.ndarray
    read_ahead: bool

    def frame(self, index: int) -> tuple[np.ndarray, float, int]: ...


class FileFrames:
    """A recording (:class:`~orrery.engine.recording.RecordingFile`) or a
    :class:`~orrery.engine.snapshot_series.SnapshotSeries`: anything with ``read``, ``times``,
    ``steps`` and ``frame_count``."""

    def __init__(self, file):
        self.file = file
        self.count = file.frame_count
        if self.count == 0:
            raise InvalidInputError(f"{file.path} holds no frames to film")
        self.population = file.population
        self.population_names = file.population_names
        self.masses = file.masses
        self._times, self._steps = np.asarray(file.times), np.asarray(file.steps)

    def frame(self, index: int):
        return self.file.read(index), float(self._times[index]), int(self._steps[index])

    # frames may be read ahead on another thread (the file is not read by anything else meanwhile)
    read_ahead = True


class LiveFrames:
    """A simulation advanced ``steps_per_frame`` steps between frames (frames in order only)."""

    # a frame is made by stepping the simulation: nothing to read ahead of it
    read_ahead = False

    def __init__(self, simulation, *, count: int, steps_per_frame: int):
        if steps_per_frame < 1:
            raise InvalidInputError(f"steps per frame must be at least 1, got {steps_per_frame}")
        self.simulation = simulation
        self.count = int(count)
        self.steps_per_frame = int(steps_per_frame)
        particles = simulation.particles
        self.population, self.population_names = particles.population, particles.population_names
        self.masses = particles.mass
        self._next = 0

    def frame(self, index: int):
        if index < self._next - 1:
            raise InvalidInputError("a live run is filmed forwards only")
        while self._next <= index:
            if self._next:
                self.simulation.step(self.steps_per_frame)
            self._next += 1
        sim = self.simulation
        return sim.positions(), float(sim.time), int(sim.steps)


@dataclass
class MovieSettings:
    """How the movie looks: size in pixels, frame rate, frames (None: one per source frame, or
    ``duration`` seconds), camera path (None: a fixed camera framing the first frame), and the
    particles point sprites draw of each frame (``max_drawn``: a fair sample, its light scaled
    to stand for all, never refined, so the same inputs give the same movie; None: all)."""

    size: tuple[int, int] = (1920, 1080)
    fps: float = 60.0
    frames: int | None = None
    duration: float | None = None
    camera: CameraPath | None = None
    style: PointStyle | DensityStyle | None = None
    tone: ToneMap | None = None
    max_drawn: int | None = None

    def frame_count(self, source: FrameSequence) -> int:
        if self.frames is not None and self.duration is not None:
            raise InvalidInputError("give the movie's length as frames or as a duration, not both")
        if self.frames is not None:
            count = int(self.frames)
        elif self.duration is not None:
            count = int(round(self.duration * self.fps))
        elif self.camera is not None and self.camera.duration > 0:
            count = int(round(self.camera.duration * self.fps)) + 1
        else:
            count = source.count
        if not 1 <= count <= 10_000_000:
            raise InvalidInputError(f"a movie has 1 to 10,000,000 frames, got {count}")
        return count

    def description(self) -> dict:
        """The settings, for the video's metadata."""
        style, tone = self.style or PointStyle(), self.tone or ToneMap()
        look = ({"mode": "density", "smoothing": style.smoothing, "colour_map": style.colour_map,
                 "quantity": style.quantity, "density_range": style.density_range}
                if isinstance(style, DensityStyle) else
                {"mode": "sprites", "point_size": style.point_size, "intensity": style.intensity,
                 "colour_mode": style.colour_mode})
        return {"size": list(self.size), "fps": self.fps, **look, "max_drawn": self.max_drawn,
                "exposure": tone.exposure, "gamma": tone.gamma, "bloom": tone.bloom,
                "camera": None if self.camera is None else [
                    {"time": k.time, "position": list(k.position), "target": list(k.target),
                     "fov": k.fov} for k in self.camera.keys]}


def source_index(frame: int, frames: int, count: int) -> int:
    """The source frame movie frame ``frame`` of ``frames`` shows, spreading ``count`` evenly."""
    if frames <= 1 or count <= 1:
        return 0
    return int(round(frame * (count - 1) / (frames - 1)))


@dataclass
class MovieTimes:
    """Where a movie's time went, in seconds summed over its frames: the render thread's wall
    time reading (or waiting for) source frames, uploading them, drawing (CPU side; ``gpu`` is the
    GL timer's device time of the same draw), reading the picture back and reordering its rows;
    then the encoder's (:class:`~._video.EncodeTimes`): conversion to YUV and x264 (CPU time summed
    over the encoders), the render thread waiting for encoders, muxing, and finishing the last
    segments; ``total`` is the wall time of the whole movie."""

    read: float = 0.0
    upload: float = 0.0
    draw: float = 0.0
    gpu: float = 0.0
    readback: float = 0.0
    reorder: float = 0.0
    convert: float = 0.0
    encode: float = 0.0
    wait: float = 0.0
    mux: float = 0.0
    finish: float = 0.0
    total: float = 0.0
    frames: int = 0
    segments: int = 0
    encoders: int = 0
    bytes: int = 0
    particles: str = ""  # how sprites were drawn (``Renderer.particle_path``)
    conversion: str = ""  # where RGB became YUV

    def per_frame_ms(self) -> dict:
        """Each stage in milliseconds per frame, and frames per second of the whole."""
        count = max(self.frames, 1)
        stages = {f.name: 1e3 * getattr(self, f.name) / count for f in fields(self)
                  if f.type in ("float", float)}
        return {**stages, "fps": self.frames / self.total if self.total else 0.0}

    def describe(self) -> str:
        stages = self.per_frame_ms()
        fps = stages.pop("fps")
        body = ", ".join(f"{name} {value:.2f}" for name, value in stages.items())
        return (f"{self.frames} frames at {fps:.1f} frames/s; ms per frame: {body} "
                f"({self.segments} segments on {self.encoders} encoders, "
                f"{self.bytes / max(self.frames, 1) / 1e3:.0f} kB a frame; particles: "
                f"{self.particles}; YUV on the {self.conversion})")


class MovieRenderer:
    """Draws numbered frames off screen. ``render(positions, population, time, step, index)``
    gives a (height, width, 3) uint8 image, top row first; ``submit(...)`` the same frame
    converted to yuv420p on the GPU, later, through ``collect()`` (two frames in flight: the
    host reads one while the GPU draws the next). With ``compute`` (a compute context) point
    sprites are splatted on that device (``Renderer``'s compute splat) instead of drawn as GL
    points. ``times`` adds up where the time went.

    ``gpu_yuv`` (default: unless the GL renderer is a software one, where the conversion pass
    costs more than swscale) says whether ``render_movie`` converts on the GPU."""

    def __init__(self, settings: MovieSettings, *, ctx=None, compute=None,
                 gpu_yuv: bool | None = None):
        width, height = settings.size
        if not (2 <= width <= 16384 and 2 <= height <= 16384):
            raise InvalidInputError(f"movie size must be 2..16384 pixels a side, got "
                                    f"{width}x{height}")
        self.settings = settings
        self.ctx = ctx or headless_context()
        # each frame a new picture (its own sequence): a subsample is never refined
        self.renderer = Renderer(self.ctx, max_drawn=settings.max_drawn)
        self.scene = ParticleScene(self.ctx, compute=compute)
        self.times = MovieTimes()
        self._colour = self.ctx.texture((width, height), 4)
        self.output = self.ctx.framebuffer(color_attachments=[self._colour])
        self.style = settings.style or PointStyle()
        self.tone = settings.tone or ToneMap()
        self.style.validate()
        self.tone.validate()
        self._fixed_camera: Camera | None = None
        self.gpu_yuv = not is_software(self.ctx) if gpu_yuv is None else bool(gpu_yuv)
        self._yuv420 = Yuv420Pass(self.ctx, self._colour, (width + width % 2,
                                                           height + height % 2)) \
            if self.gpu_yuv else None
        # a GL timer per frame in flight, and the draws they timed, oldest first
        self._timers = [self.ctx.query(time=True) for _ in range(PIXEL_BUFFERS)]
        self._timed: list = []

    def camera_at(self, index: int, positions: np.ndarray) -> Camera:
        if self.settings.camera is not None:
            return self.settings.camera.camera_at(index / self.settings.fps)
        if self._fixed_camera is None:
            self._fixed_camera = Camera()
            self._fixed_camera.fit(positions)
        return self._fixed_camera

    def _draw(self, positions, population, time, step, index, masses):
        """Upload and draw a frame into ``output``; returns the GL timer of the draw."""
        width, height = self.settings.size
        start = time_now()
        self.scene.show(Frame(positions=positions, time=time, step=step, sequence=index),
                        population)
        if isinstance(self.style, DensityStyle):
            self.scene.set_masses(masses)
        uploaded = time_now()
        camera = self.camera_at(index, positions)
        timer = self._timers[index % PIXEL_BUFFERS]
        with timer:
            self.renderer.render(self.scene, camera.view_projection(width / height), self.style,
                                 self.tone, self.output)
        self.times.upload += uploaded - start
        self.times.draw += time_now() - uploaded
        self.times.frames += 1
        return timer

    def render(self, positions: np.ndarray, population: np.ndarray, time: float, step: int,
               index: int, *, masses: np.ndarray | None = None) -> np.ndarray:
        width, height = self.settings.size
        timer = self._draw(positions, population, time, step, index, masses)
        start = time_now()
        data = self.output.read(components=3, alignment=1)
        read = time_now()
        image = np.ascontiguousarray(np.frombuffer(data, np.uint8).reshape(height, width, 3)[::-1])
        self.times.readback += read - start
        self.times.reorder += time_now() - read
        self.times.gpu += timer.elapsed * 1e-9  # ready: the read waited for the draw
        return image

    def submit(self, positions: np.ndarray, population: np.ndarray, time: float, step: int,
               index: int, *, masses: np.ndarray | None = None) -> np.ndarray | None:
        """Draw and convert a frame; returns the frame submitted before it once it is read back
        (None while the pipeline fills)."""
        if self._yuv420 is None:
            raise InvalidInputError("this renderer converts on the CPU (gpu_yuv=False)")
        done = self.collect() if self._yuv420.pending == PIXEL_BUFFERS else None
        self._timed.append(self._draw(positions, population, time, step, index, masses))
        start = time_now()
        self._yuv420.submit()
        self.times.readback += time_now() - start
        return done

    @property
    def pending(self) -> int:
        """Frames submitted and not yet collected."""
        return 0 if self._yuv420 is None else self._yuv420.pending

    def collect(self) -> np.ndarray:
        """The oldest submitted frame as yuv420p (``_video.yuv420_layout``)."""
        start = time_now()
        frame = self._yuv420.collect()
        self.times.readback += time_now() - start
        self.times.gpu += self._timed.pop(0).elapsed * 1e-9
        return frame

    def release(self) -> None:
        if self._yuv420 is not None:
            self._yuv420.release()
        self.scene.release()
        self.renderer.release()
        self.output.release()
        self._colour.release()


def render_movie(source: FrameSequence, path, settings: MovieSettings, *, progress=None,
                 ctx=None, compute=None, gpu_yuv: bool | None = None,
                 times: MovieTimes | None = None, **video_options) -> int:
    """Film ``source`` into the video file ``path``; returns the number of frames written.
    ``progress(done, total)`` is called after every frame; ``times`` (a :class:`MovieTimes`)
    receives where the time went; ``compute`` splats sprites on that compute device; ``gpu_yuv``
    converts frames to YUV on the GPU (default: unless GL draws on the CPU);
    ``video_options`` go to :class:`~._video.VideoWriter` (its segments are cut from the
    movie's length, so the file does not depend on the machine)."""
    started = time_now()
    frames = settings.frame_count(source)
    if settings.style is not None and settings.style.weights is None:
        settings.style.weights = population_weights(source.population_names)
    video_options.setdefault("segment_frames", segment_plan(settings.fps, frames))
    renderer = MovieRenderer(settings, ctx=ctx, compute=compute, gpu_yuv=gpu_yuv)
    # the next source frame is read on a thread while this one is drawn and read back (float16
    # frames go to a compute device as they are and are widened there)
    reader = ThreadPoolExecutor(1, thread_name_prefix="orrery-reader") \
        if source.read_ahead else None
    read = source.frame
    indices = [source_index(index, frames, source.count) for index in range(frames)]
    video = None
    try:
        video = VideoWriter(path, size=settings.size, fps=settings.fps,
                            metadata={"orrery_movie": settings.description()}, **video_options)
        with video:
            pending = reader.submit(read, indices[0]) if reader else None
            for index in range(frames):
                start = time_now()
                if reader is None:
                    positions, time_, step = read(indices[index])
                else:
                    positions, time_, step = pending.result()
                    if index + 1 < frames:
                        pending = reader.submit(read, indices[index + 1])
                renderer.times.read += time_now() - start
                if renderer.gpu_yuv:
                    done = renderer.submit(positions, source.population, time_, step, index,
                                           masses=source.masses)
                    if done is not None:
                        _write(video, video.write_yuv420, done, progress, frames)
                else:
                    _write(video, video.write, renderer.render(
                        positions, source.population, time_, step, index,
                        masses=source.masses), progress, frames)
            while renderer.pending:
                _write(video, video.write_yuv420, renderer.collect(), progress, frames)
        return video.frames
    finally:
        if reader is not None:
            reader.shutdown(wait=True)
        renderer.release()
        if times is not None:
            _add_times(times, renderer, video, time_now() - started)


def _write(video, write, frame, progress, frames: int) -> None:
    write(frame)
    if progress is not None:
        progress(video.frames, frames)


def _add_times(times: MovieTimes, renderer: MovieRenderer, video, total: float) -> None:
    drawn = renderer.times
    times.particles = renderer.renderer.particle_path
    times.conversion = "GPU" if renderer.gpu_yuv else "CPU (swscale)"
    for name in ("read", "upload", "draw", "gpu", "readback", "reorder", "frames"):
        setattr(times, name, getattr(times, name) + getattr(drawn, name))
    if video is not None:
        encoded = video.times
        for name in ("convert", "encode", "wait", "mux", "finish", "segments", "bytes"):
            setattr(times, name, getattr(times, name) + getattr(encoded, name))
        times.encoders = video.encoders
    times.total += total


def splat_device(spec: str | None):
    """The compute context ``spec`` names for splatting sprites, or None (GL points, or the host
    splat where GL is software) for ``"none"``, or for ``"auto"`` where no CUDA device is found."""
    from ...engine.compute import DeviceUnavailableError, open_device

    if spec is None or spec == "none":
        return None
    if spec == "auto":
        try:
            return open_device("cuda")
        except DeviceUnavailableError:
            return None
    return open_device(spec)


def parse_size(text: str) -> tuple[int, int]:
    """``"1920x1080"`` -> (1920, 1080)."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise InvalidInputError(f"size must look like 1920x1080, got {text!r}") from None
    if width < 1 or height < 1 or math.prod((width, height)) > 16384 * 16384:
        raise InvalidInputError(f"size must be positive and at most 16384x16384, got {text!r}")
    return width, height
