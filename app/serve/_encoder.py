"""Pictures to bytes for one client: H.264 (x264 at its lowest latency, decoded by the browser's
WebCodecs) or, where the page cannot decode video (WebCodecs needs a secure context: a page
reached at ``http://<host>`` other than localhost has none), JPEG.

The H.264 stream is Annex-B with the parameter sets in band before every key picture, one packet
per picture, no B-frames and no look-ahead (``tune=zerolatency``), so a picture leaves the
encoder the moment it goes in; a client that joins or loses its decoder asks for a key picture.
ADR 0193 says why these codecs and settings.
"""

from __future__ import annotations

import io
import os
from fractions import Fraction

import numpy as np

from ...engine._optional import require
from ..export._video import BT709, LIMITED_RANGE
from ._protocol import DELTA_PICTURE, JPEG_PICTURE, KEY_PICTURE

# x264's constant-rate factor for the default quality: 1080p60 of the galaxy collision stays
# under 20 Mbit/s (ADR 0193); the cap keeps a scene full of fine grain from flooding a link.
DEFAULT_CRF = 23
MAX_BITRATE_KBIT = 16000
# Pictures between forced key pictures: a decoder that lost one recovers within this many.
KEY_INTERVAL = 240
JPEG_QUALITY = 80


class H264Encoder:
    """Encode (height, width, 3) uint8 pictures, top row first, of one size."""

    codec = "h264"

    def __init__(self, size: tuple[int, int], *, crf: int = DEFAULT_CRF, threads: int = 1):
        av = require("av")
        width, height = size
        if width % 2 or height % 2:
            raise ValueError(f"H.264 pictures have even sides, got {width}x{height}")
        self.size = size
        context = av.CodecContext.create("libx264", "w")
        context.width, context.height = width, height
        context.pix_fmt = "yuv420p"
        context.time_base = Fraction(1, 1000)
        context.framerate = Fraction(60, 1)
        context.gop_size = KEY_INTERVAL
        context.max_b_frames = 0
        context.thread_count = threads
        # BT.709, limited range, and the stream says so: what the GPU's conversion
        # (render/_yuv420_pass) writes and what encode() converts to
        context.color_primaries = context.color_trc = context.colorspace = BT709
        context.color_range = LIMITED_RANGE
        context.options = {"preset": "ultrafast", "tune": "zerolatency", "crf": str(crf),
                           "x264-params": f"vbv-maxrate={MAX_BITRATE_KBIT}:"
                                          f"vbv-bufsize={MAX_BITRATE_KBIT // 2}"}
        self._context = context
        # One converter for the stream: a frame's own reformat() makes and frees a swscale
        # context (and its slice threads) per picture, 0.6 ms of the 2.5 a 720p conversion took
        self._converter = av.video.reformatter.VideoReformatter()
        self._threads = threads
        self._picture_type = av.video.frame.PictureType
        self._from_ndarray = av.VideoFrame.from_ndarray
        self._from_numpy_buffer = av.VideoFrame.from_numpy_buffer
        self._count = 0
        self.codec_string: str | None = None  # 'avc1.PPCCLL', known after the first picture

    def encode(self, rgb: np.ndarray, *, key: bool = False) -> tuple[int, bytes]:
        """(picture kind, Annex-B bytes) of one RGB picture ((height, width, 3), or 4 with a
        padding byte: RGBX), converted here (swscale); ``key`` forces a key picture."""
        layout = "rgb24" if rgb.shape[2] == 3 else "rgba"  # swscale drops the fourth byte
        frame = self._converter.reformat(
            self._from_ndarray(rgb, format=layout), format="yuv420p", dst_colorspace=BT709,
            dst_color_range=LIMITED_RANGE, threads=self._threads)
        return self._encode(frame, key)

    def encode_yuv420(self, image: np.ndarray, *, key: bool = False) -> tuple[int, bytes]:
        """As :meth:`encode`, of a picture already converted to yuv420p (``yuv420_layout``: the
        GPU's ``Yuv420Pass`` and the host tone map give it so), which costs the encoder no
        conversion."""
        return self._encode(self._from_numpy_buffer(image, format="yuv420p"), key)

    def _encode(self, frame, key: bool) -> tuple[int, bytes]:
        frame.pts = self._count
        self._count += 1
        if key:
            frame.pict_type = self._picture_type.I
        packets = self._context.encode(frame)
        data = b"".join(bytes(packet) for packet in packets)
        is_key = any(packet.is_keyframe for packet in packets)
        if is_key and self.codec_string is None:
            self.codec_string = codec_string(data)
        return (KEY_PICTURE if is_key else DELTA_PICTURE), data

    def close(self) -> None:
        self._context = None


class JpegEncoder:
    """Encode pictures as JPEG: each picture is a key picture."""

    codec = "jpeg"
    codec_string = "jpeg"

    def __init__(self, size: tuple[int, int], *, quality: int = JPEG_QUALITY):
        self.size = size
        self._image = require("PIL.Image")
        self._quality = quality

    def encode(self, rgb: np.ndarray, *, key: bool = False) -> tuple[int, bytes]:
        """As :meth:`H264Encoder.encode`: (height, width, 3) RGB or 4 (RGBX)."""
        buffer = io.BytesIO()
        self._image.fromarray(np.ascontiguousarray(rgb[..., :3])).save(
            buffer, "JPEG", quality=self._quality)
        return JPEG_PICTURE, buffer.getvalue()

    def close(self) -> None:
        pass


def make_encoder(codec: str, size: tuple[int, int]):
    return H264Encoder(size, threads=encoder_threads()) if codec == "h264" else JpegEncoder(size)


def encoder_threads() -> int:
    """x264 threads for one stream: with ``tune=zerolatency`` they split each picture into
    slices, so they shorten a picture's encode without holding pictures back. A quarter of the
    cores, 1 to 4: none taken from a 2-core machine's simulation, 4 on a GPU server's 16."""
    return max(1, min(4, (os.cpu_count() or 1) // 4))


def codec_string(annex_b: bytes) -> str:
    """The WebCodecs name of an H.264 stream, 'avc1.PPCCLL', from its sequence parameter set
    (profile, constraint flags and level are the SPS's first three bytes after its NAL header)."""
    index = 0
    while True:
        index = annex_b.find(b"\x00\x00\x01", index)
        if index < 0 or index + 7 > len(annex_b):
            raise ValueError("no sequence parameter set in the key picture")
        header = annex_b[index + 3]
        if header & 0x1F == 7:  # a sequence parameter set
            profile, constraints, level = annex_b[index + 4:index + 7]
            return f"avc1.{profile:02X}{constraints:02X}{level:02X}"
        index += 3
