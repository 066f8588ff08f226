"""Saving what the window shows (particles and UI) as a PNG."""

from __future__ import annotations

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


def save_png(pixels: np.ndarray, path: str | Path) -> Path:
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.ascontiguousarray(pixels)).save(path, optimize=True)
    return path


def default_screenshot_name() -> str:
    return time.strftime("orrery-%Y%m%d-%H%M%S.png")
