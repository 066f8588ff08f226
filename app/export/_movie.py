"""Movies without a window: a recording, a snapshot sequence or a live run, drawn by the viewer's
renderer into an off-screen target (EGL) along a camera path, encoded by :mod:`._video`.

Everything is numbered, nothing is timed: movie frame ``i`` shows the camera at ``i / fps``
seconds and source frame ``round(i * (count - 1) / (frames - 1))`` (a live run advances a fixed
number of steps per frame), so the same inputs give the same movie, bit for bit, whatever the
machine's speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ...engine.errors import InvalidInputError
from ...engine.frames import Frame
from ..render import (Camera, DensityStyle, ParticleScene, PointStyle, Renderer, ToneMap,
                      headless_context, population_weights)
from ..render._camera_path import CameraPath
from ._video import VideoWriter

# Frames a movie of a live run has when neither --frames nor --duration says.
DEFAULT_LIVE_FRAMES = 300


class FrameSequence(Protocol):
    """Numbered frames to film: ``count``, ``frame(index)`` -> (positions, time, step),
    ``population`` and ``population_names``."""

    count: int
    population: np.ndarray
    population_names: tuple[str, ...]
    masses: np.ndarray

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


class LiveFrames:
    """A simulation advanced ``steps_per_frame`` steps between frames (frames in order only)."""

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
    ``duration`` seconds), camera path (None: a fixed camera framing the first frame)."""

    size: tuple[int, int] = (1920, 1080)
    fps: float = 60.0
    frames: int | None = None
    duration: float | None = None
    camera: CameraPath | None = None
    style: PointStyle | DensityStyle | None = None
    tone: ToneMap | None = None

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
        return {"size": list(self.size), "fps": self.fps, **look,
                "exposure": tone.exposure, "gamma": tone.gamma, "bloom": tone.bloom,
                "camera": None if self.camera is None else [
                    {"time": k.time, "position": list(k.position), "target": list(k.target),
                     "fov": k.fov} for k in self.camera.keys]}


def source_index(frame: int, frames: int, count: int) -> int:
    """The source frame movie frame ``frame`` of ``frames`` shows, spreading ``count`` evenly."""
    if frames <= 1 or count <= 1:
        return 0
    return int(round(frame * (count - 1) / (frames - 1)))


class MovieRenderer:
    """Draws numbered frames off screen: ``render(positions, population, time, index)`` gives a
    (height, width, 3) uint8 image, top row first."""

    def __init__(self, settings: MovieSettings, *, ctx=None):
        width, height = settings.size
        if not (2 <= width <= 16384 and 2 <= height <= 16384):
            raise InvalidInputError(f"movie size must be 2..16384 pixels a side, got "
                                    f"{width}x{height}")
        self.settings = settings
        self.ctx = ctx or headless_context()
        self.renderer = Renderer(self.ctx)
        self.scene = ParticleScene(self.ctx)
        self._colour = self.ctx.renderbuffer((width, height), components=4)
        self.output = self.ctx.framebuffer(color_attachments=[self._colour])
        self.style = settings.style or PointStyle()
        self.tone = settings.tone or ToneMap()
        self.style.validate()
        self.tone.validate()
        self._fixed_camera: Camera | None = None

    def camera_at(self, index: int, positions: np.ndarray) -> Camera:
        if self.settings.camera is not None:
            return self.settings.camera.camera_at(index / self.settings.fps)
        if self._fixed_camera is None:
            self._fixed_camera = Camera()
            self._fixed_camera.fit(positions)
        return self._fixed_camera

    def render(self, positions: np.ndarray, population: np.ndarray, time: float, step: int,
               index: int, *, masses: np.ndarray | None = None) -> np.ndarray:
        width, height = self.settings.size
        self.scene.show(Frame(positions=positions, time=time, step=step, sequence=index),
                        population)
        if isinstance(self.style, DensityStyle):
            self.scene.set_masses(masses)
        camera = self.camera_at(index, positions)
        self.renderer.render(self.scene, camera.view_projection(width / height), self.style,
                             self.tone, self.output)
        data = self.output.read(components=3, alignment=1)
        return np.frombuffer(data, np.uint8).reshape(height, width, 3)[::-1]

    def release(self) -> None:
        self.scene.release()
        self.renderer.release()
        self.output.release()
        self._colour.release()


def render_movie(source: FrameSequence, path, settings: MovieSettings, *, progress=None,
                 ctx=None, **video_options) -> int:
    """Film ``source`` into the video file ``path``; returns the number of frames written.
    ``progress(done, total)`` is called after every frame."""
    frames = settings.frame_count(source)
    if settings.style is not None and settings.style.weights is None:
        settings.style.weights = population_weights(source.population_names)
    renderer = MovieRenderer(settings, ctx=ctx)
    try:
        with VideoWriter(path, size=settings.size, fps=settings.fps,
                         metadata={"orrery_movie": settings.description()},
                         **video_options) as video:
            for index in range(frames):
                positions, time, step = source.frame(source_index(index, frames, source.count))
                video.write(renderer.render(positions, source.population, time, step, index,
                                            masses=source.masses))
                if progress is not None:
                    progress(index + 1, frames)
            return video.frames
    finally:
        renderer.release()


def parse_size(text: str) -> tuple[int, int]:
    """``"1920x1080"`` -> (1920, 1080)."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise InvalidInputError(f"size must look like 1920x1080, got {text!r}") from None
    if width < 1 or height < 1 or math.prod((width, height)) > 16384 * 16384:
        raise InvalidInputError(f"size must be positive and at most 16384x16384, got {text!r}")
    return width, height
