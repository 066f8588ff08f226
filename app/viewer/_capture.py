"""Saving what the window shows: PNG screenshots that carry the settings that made them, a video
of the window, and camera keys for ``orrery render --camera``."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np


def read_screen(ctx, size: tuple[int, int]) -> np.ndarray:
    """The default framebuffer as an (height, width, 3) uint8 array, top row first."""
    data = ctx.screen.read(viewport=(0, 0, *size), components=3, alignment=1)
    # Reading the default framebuffer leaves GL_INVALID_OPERATION pending on some drivers (Mesa);
    # reading ctx.error clears it so it is not blamed on the next call.
    _ = ctx.error
    return np.frombuffer(data, dtype=np.uint8).reshape(size[1], size[0], 3)[::-1]


# The PNG text chunk that holds the settings (JSON) a screenshot was made with.
SETTINGS_CHUNK = "orrery"


def save_png(pixels: np.ndarray, path: str | Path, *, settings: dict | None = None) -> Path:
    """Save ``pixels``; ``settings`` go into the PNG's ``orrery`` text chunk as JSON."""
    from PIL import Image, PngImagePlugin

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    info = PngImagePlugin.PngInfo()
    if settings:
        info.add_text(SETTINGS_CHUNK, json.dumps(settings, sort_keys=True, default=_plain))
    # written aside and renamed, so a reader never finds half a file
    partial = path.with_name(path.name + ".partial")
    Image.fromarray(np.ascontiguousarray(pixels)).save(partial, format="PNG", optimize=True,
                                                       pnginfo=info)
    partial.replace(path)
    return path


def png_settings(path: str | Path) -> dict:
    """The settings a screenshot was saved with (empty when it has none)."""
    from PIL import Image

    with Image.open(path) as image:
        # PIL gives text chunks only on the image classes of formats that have them (PNG)
        text = image.text.get(SETTINGS_CHUNK) if hasattr(image, "text") else None
    return json.loads(text) if text else {}


def _plain(value):
    return value.tolist() if isinstance(value, np.ndarray) else str(value)


class CameraKeys:
    """Camera keys added from the viewer (the C key): each key's time is the seconds since the
    first, so the movie replays the moves at the pace they were made; the path is saved after
    every key."""

    def __init__(self, path: str | Path = "camera-path.toml"):
        self.path = Path(path)
        self.keys = []
        self._start = None

    def add(self, camera) -> Path:
        from ..render._camera_path import CameraKey, CameraPath

        now = time.monotonic()
        if self._start is None:
            self._start = now
        key = CameraKey.from_camera(round(now - self._start, 3), camera)
        if self.keys and key.time <= self.keys[-1].time:
            key = CameraKey(self.keys[-1].time + 0.001, key.position, key.target, key.fov)
        self.keys.append(key)
        return CameraPath(self.keys).save(self.path)


class WindowVideo:
    """A video of what the window shows (the V key starts and stops it), one video frame per
    drawn frame at the window's nominal rate."""

    def __init__(self):
        self.writer = None

    @property
    def recording(self) -> bool:
        return self.writer is not None

    def start(self, path: str | Path, size: tuple[int, int], fps: float, settings: dict) -> None:
        from ..export import VideoWriter

        self.writer = VideoWriter(path, size=size, fps=fps, metadata={"orrery_viewer": settings})

    def add(self, pixels: np.ndarray) -> bool:
        """Append a frame; False (and the video closed) when the window changed size."""
        if pixels.shape[:2] != (self.writer.size[1], self.writer.size[0]):
            self.stop()
            return False
        self.writer.write(pixels)
        return True

    def stop(self):
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()
        return writer


def default_screenshot_name(suffix: str = ".png") -> str:
    return time.strftime("orrery-%Y%m%d-%H%M%S") + suffix
