"""Video files through PyAV (the optional ``video`` extra): everything Orrery knows about the
container and codec lives here.

H.264 in MP4 with yuv420p pixels, which every player decodes. x264 encodes on one thread by
default: its threaded encoder was measured to give different bytes (and pixels) for the same
frames from run to run, and a movie should be reproducible; ``threads=0`` (all cores) is faster. The encoder needs even sizes, so
odd frames are padded by one black row or column. Frame ``i`` gets presentation time ``i / fps``
(PyAV numbers frames when pts is unset), so the movie's timing does not depend on how fast the
frames were rendered.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...engine._optional import require
from ...engine.errors import InvalidInputError, OrreryError

DEFAULT_CODEC = "h264"
# Quality (constant rate factor: 0 lossless .. 51 worst; 18 is visually lossless for x264) and
# speed preset: "veryfast" keeps a 1080p movie ahead of the renderer on a few cores.
DEFAULT_CRF = 18
DEFAULT_PRESET = "veryfast"


class VideoError(OrreryError):
    """The video cannot be written (an unknown codec, an unwritable path)."""


def _av():
    return require("av")


class VideoWriter:
    """``write(rgb)`` appends one (height, width, 3) uint8 frame, top row first."""

    def __init__(self, path, *, size: tuple[int, int], fps: float, crf: int = DEFAULT_CRF,
                 preset: str = DEFAULT_PRESET, codec: str = DEFAULT_CODEC, threads: int = 1,
                 metadata: dict | None = None):
        av = _av()
        width, height = (int(v) for v in size)
        if width < 2 or height < 2:
            raise InvalidInputError(f"video size must be at least 2x2, got {width}x{height}")
        if not 0 < fps <= 1000:
            raise InvalidInputError(f"fps must be in (0, 1000], got {fps}")
        if not 0 <= crf <= 51:
            raise InvalidInputError(f"crf must be in 0..51, got {crf}")
        if not 0 <= threads <= 256:
            raise InvalidInputError(f"encoder threads must be in 0..256, got {threads}")
        self.path = Path(path)
        self.size = (width, height)
        self.encoded_size = (width + width % 2, height + height % 2)
        self.frames = 0
        try:
            self._container = av.open(str(self.path), "w")
        except (OSError, av.error.FFmpegError) as error:
            raise VideoError(f"cannot write {self.path}: {error}") from None
        try:
            if metadata:
                self._container.metadata["comment"] = json.dumps(metadata, sort_keys=True)
            self._stream = self._container.add_stream(
                codec, rate=_rate(fps),
                options={"crf": str(crf), "preset": preset, "threads": str(threads)})
            self._stream.width, self._stream.height = self.encoded_size
            self._stream.pix_fmt = "yuv420p"
        except (ValueError, av.error.FFmpegError) as error:
            self._container.close()
            raise VideoError(f"codec {codec!r} with preset {preset!r}: {error}") from None

    def write(self, rgb: np.ndarray) -> None:
        height, width = rgb.shape[:2]
        if (width, height) != self.size or rgb.shape[2:] != (3,) or rgb.dtype != np.uint8:
            raise InvalidInputError(f"frame must be ({self.size[1]}, {self.size[0]}, 3) uint8, "
                                    f"got {rgb.shape} {rgb.dtype}")
        if self.encoded_size != self.size:
            padded = np.zeros((self.encoded_size[1], self.encoded_size[0], 3), np.uint8)
            padded[:height, :width] = rgb
            rgb = padded
        frame = _av().VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        self._container.mux(self._stream.encode(frame))
        self.frames += 1

    def close(self) -> None:
        if self._container is None:
            return
        try:
            self._container.mux(self._stream.encode())  # flush the encoder's delayed frames
        finally:
            self._container.close()
            self._container = None

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def read_video(path) -> tuple[list[np.ndarray], float, dict]:
    """Every frame of a video as (height, width, 3) uint8 arrays, its frame rate and the metadata
    Orrery wrote: what the tests and ``orrery info`` decode."""
    av = _av()
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
        comment = container.metadata.get("comment")
        rate = float(stream.average_rate) if stream.average_rate else 0.0
    try:
        metadata = json.loads(comment) if comment else {}
    except ValueError:
        metadata = {}
    return frames, rate, metadata


def _rate(fps: float):
    from fractions import Fraction

    return Fraction(fps).limit_denominator(1001)
