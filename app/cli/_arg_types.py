"""Value types for command-line flags (``orrery`` and ``orrery-viewer``): each refuses what
cannot be meant (a negative count, NaN, a 0x0 window, a folder where a file goes) with argparse's
one-line usage error, before any work starts."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path

# Larger than any display or GL framebuffer we know of (GL_MAX_TEXTURE_SIZE is 16384 on Mesa
# and NVIDIA; one RGBA32F accumulation target of 8192 x 8192 is already 1 GiB).
MAX_WINDOW_SIDE = 8192


def integer(*, minimum: int, maximum: int | None = None):
    """An integer >= ``minimum`` (and <= ``maximum``)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be <= {maximum:,}, got {value}")
        return value
    return parse


def number(*, above: float | None = None, at_least: float | None = None,
           at_most: float | None = None):
    """A finite number ``> above`` or ``>= at_least``, and ``<= at_most``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"must be > {above:g}, got {text}")
        if at_least is not None and not value >= at_least:
            raise argparse.ArgumentTypeError(f"must be >= {at_least:g}, got {text}")
        if at_most is not None and not value <= at_most:
            raise argparse.ArgumentTypeError(f"must be <= {at_most:g}, got {text}")
        return value
    return parse


def window_size(text: str) -> tuple[int, int]:
    """``WxH`` in pixels, each side 1 to :data:`MAX_WINDOW_SIDE`."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like 1280x720, got {text!r}") from None
    if not (1 <= width <= MAX_WINDOW_SIDE and 1 <= height <= MAX_WINDOW_SIDE):
        raise argparse.ArgumentTypeError(
            f"each side must be 1 to {MAX_WINDOW_SIDE} pixels, got {text!r}")
    return width, height


def output_file(text: str) -> str:
    """A file to write: not a folder or a device, in a folder that exists and can be written."""
    path = Path(text)
    try:
        if not text or path.is_dir() or text.endswith(("/", os.sep)):
            raise argparse.ArgumentTypeError(f"must name a file, not a folder: {text!r}")
        if path.exists() and not path.is_file():
            raise argparse.ArgumentTypeError(f"must name a regular file, not a device, FIFO or "
                                             f"socket: {text!r}")
        folder = path.parent
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK):
            raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} cannot be written")
    except OSError as error:  # a name too long, a loop of links, ...
        raise argparse.ArgumentTypeError(f"cannot write {text!r}: "
                                         f"{error.strerror or error}") from None
    return text


# Containers a movie can be written in (PyAV names the container by the extension).
VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv")


def video_file(text: str) -> str:
    """:func:`output_file` whose extension names a container for H.264 video."""
    text = output_file(text)
    if Path(text).suffix.lower() not in VIDEO_EXTENSIONS:
        raise argparse.ArgumentTypeError(f"must end in {', '.join(VIDEO_EXTENSIONS)} (the "
                                         f"container is named by it), got {text!r}")
    return text
