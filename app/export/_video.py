"""Video files through PyAV (the optional ``video`` extra): everything Orrery knows about the
container and codec lives here.

H.264 in MP4 with yuv420p pixels (BT.709, limited range, and the stream says so), which every
player decodes. The encoder needs even sizes, so odd frames are padded by one black row or column.
Frame ``i`` gets presentation time ``i / fps``, so the movie's timing does not depend on how fast
the frames were rendered.

Reproducible and parallel (ADR 0128): the movie is cut into segments (``segment_plan``: whole
GOPs, each encoder starts with an IDR frame), each segment is encoded by its own x264 on
one thread (x264's threaded encoder was measured to give different bytes for the same frames run
to run, ADR 0102), on a pool of ``encoders`` threads (PyAV lets go of the GIL while swscale and
x264 run), and the packets are muxed in movie order. The file depends on the frames and the
segment length only, never on the number of encoders or how they were scheduled. Every encoder
is opened with the same settings, so each gives the same SPS/PPS (the MP4's ``avcC``): checked
for every segment. ``threads=0`` gives each encoder all cores instead: not reproducible.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from ...engine import portable
from ...engine._optional import require
from ...engine.errors import InvalidInputError, OrreryError

DEFAULT_CODEC = "h264"
# Quality (constant rate factor: 0 lossless .. 51 worst; 18 is visually lossless for x264) and
# speed preset: "veryfast" keeps a 1080p movie ahead of the renderer on a few cores.
DEFAULT_CRF = 18
DEFAULT_PRESET = "veryfast"
# How a movie is cut into segments. A keyframe at least every SEGMENT_SECONDS; a movie of known
# length into at least PARALLEL_SEGMENTS segments (two for each encoder of a 16-core machine, so
# a short movie keeps them all busy); and towards its end, no segment longer than the frames
# after it over TAIL_GROWTH, so that the segments encoded last, after the last frame is drawn,
# are short (an encoder at 1080p is several times slower than the renderer: with 8 times, every
# segment ends about when the last one does). Never shorter than SHORTEST_SEGMENT frames: each
# starts with an IDR frame (on a 1M-particle movie at 1080p, 4-frame segments made a file 1.4%
# larger than 24-frame ones).
SEGMENT_SECONDS = 1.0
PARALLEL_SEGMENTS = 32
TAIL_GROWTH = 8
SHORTEST_SEGMENT = 4
# x264's CPU features where the CPU has AVX-512: all but AVX-512. Its AVX-512 routines were
# measured to make the same frames encode to different bytes from one encoder to the next in one
# process (reading memory they did not write): 8 of 10 encodes of ten 320x240 frames differed;
# without them 30 of 30 agreed, at the same speed and size (ADR 0128).
X264_WITHOUT_AVX512 = "MMX2,SSE,SSE2,SSE3,SSSE3,SSE4,SSE4.2,AVX,FMA3,BMI1,BMI2,AVX2"
# Scheduling niceness of the encoder threads (Linux, where a thread's niceness is its own): they
# take whatever CPU the renderer leaves. With an encoder per core and the renderer at the same
# priority, the render thread was a core short: on the H200's 16-core host a 1M-particle 1080p
# movie's upload and draw took 2-3x as long with 16 encoders as with 4 (ADR 0129).
ENCODER_NICENESS = 10
# How many frames a packet may be decoded before it is shown: x264's B-frame delay, 2 with
# B-pyramids (every preset but ultrafast, which has no B-frames), 1 without, 0 without B-frames.
DECODE_AHEAD = 2
# Frames handed to the encoders but not yet encoded are kept to this many bytes (at least one
# segment's worth): enough to keep every encoder busy at 1080p (16 encoders of 60-frame
# segments hold 3 GB of RGB), not a 4K movie's worth on a small machine.
FRAMES_IN_FLIGHT_BYTES = 2 << 30
# What the stream is tagged with and what RGB is converted with: BT.709, limited range
# (FFmpeg's AVCOL_PRI/TRC/SPC_BT709 and AVCOL_RANGE_MPEG are all 1).
BT709, LIMITED_RANGE = 1, 1


# Frame rates a movie may have: the stream's rate is a fraction with a denominator of at most
# 1001 (_rate), so anything slower than a frame in 1000 s would be a rate of 0.
MIN_FPS, MAX_FPS = 1e-3, 1000.0


class VideoError(OrreryError):
    """The video cannot be written (an unknown codec, an unwritable path)."""


def _av():
    return require("av")


def segment_plan(fps: float, frames: int | None = None) -> tuple[int, ...]:
    """Segment lengths, in order, for a movie at ``fps`` of ``frames`` frames; the last length
    repeats (for ``frames=None``, a movie of unknown length, it is the only one)."""
    longest = max(int(round(fps * SEGMENT_SECONDS)), 1)
    if frames is None:
        return (longest,)
    shortest = min(SHORTEST_SEGMENT, longest)
    upper = max(shortest, min(longest, -(-int(frames) // PARALLEL_SEGMENTS)))
    lengths, behind = [], 0  # built from the end
    while behind < frames:
        length = min(max(-(-behind // TAIL_GROWTH), shortest), upper, frames - behind)
        lengths.append(length)
        behind += length
    if len(lengths) > 1 and lengths[-1] < shortest and lengths[-1] + lengths[-2] <= longest:
        remainder = lengths.pop()  # the first segment takes the remainder
        lengths[-1] += remainder
    return tuple(reversed(lengths)) + (longest,)


@dataclass
class EncodeTimes:
    """Where the encoding time went, in seconds: thread CPU time of the encoders (summed over
    them) for RGB -> YUV conversion and for x264, and wall time of the writer's own thread
    waiting for room (encoders behind), muxing, and finishing the last segments on close."""

    convert: float = 0.0
    encode: float = 0.0
    wait: float = 0.0
    mux: float = 0.0
    finish: float = 0.0
    segments: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class _Settings:
    """What every encoder of one movie is opened with."""

    codec: str
    size: tuple[int, int]
    rate: Fraction
    options: dict = field(hash=False)

    def configure(self, context) -> None:
        context.width, context.height = self.size
        context.pix_fmt = "yuv420p"
        context.time_base = 1 / self.rate
        context.framerate = self.rate
        context.color_primaries = context.color_trc = context.colorspace = BT709
        context.color_range = LIMITED_RANGE
        context.options = dict(self.options)

    def open_encoder(self):
        av = _av()
        context = av.CodecContext.create(self.codec, "w")
        self.configure(context)
        context.flags |= av.codec.context.Flags.global_header  # SPS/PPS in the avcC, as MP4 wants
        context.open()
        return context


@dataclass
class _Segment:
    packets: list
    extradata: bytes
    convert: float
    encode: float


class VideoWriter:
    """``write(rgb)`` appends one (height, width, 3) uint8 frame, top row first;
    ``write_yuv420(image)`` one frame already converted (``yuv420_layout``). The writer keeps the
    array until it is encoded: do not change it afterwards.

    Parameters
    ----------
    segment_frames : frames per independently encoded segment, or their lengths in order (the
        last repeating; ``segment_plan``); default ``segment_plan(fps)``, a second each
    encoders : segments encoded at once (default: the cores this process may use); the file
        does not depend on it
    threads : x264 threads per encoder (default 1, reproducible; 0: all cores)

    The movie is written under a hidden name beside ``path`` (the same extension, which names
    the container) and renamed to ``path`` when it closes: a movie that failed half-way never
    stands at ``path`` as if complete. A ``with`` block left by Ctrl-C (or SIGTERM, ...) keeps
    the frames written so far, a playable movie; one left by an error removes it.
    """

    def __init__(self, path, *, size: tuple[int, int], fps: float, crf: int = DEFAULT_CRF,
                 preset: str = DEFAULT_PRESET, codec: str = DEFAULT_CODEC, threads: int = 1,
                 segment_frames: int | tuple[int, ...] | None = None,
                 encoders: int | None = None,
                 metadata: dict | None = None):
        av = _av()
        width, height = (int(v) for v in size)
        if width < 2 or height < 2:
            raise InvalidInputError(f"video size must be at least 2x2, got {width}x{height}")
        if not MIN_FPS <= fps <= MAX_FPS:
            raise InvalidInputError(f"fps must be in [{MIN_FPS:g}, {MAX_FPS:g}], got {fps}")
        if not 0 <= crf <= 51:
            raise InvalidInputError(f"crf must be in 0..51, got {crf}")
        if not 0 <= threads <= 256:
            raise InvalidInputError(f"encoder threads must be in 0..256, got {threads}")
        plan = segment_plan(fps) if segment_frames is None else segment_frames
        self._plan = tuple(int(v) for v in (plan if isinstance(plan, (tuple, list)) else (plan,)))
        self.encoders = portable.usable_cores() if encoders is None else int(encoders)
        if not self._plan or not all(1 <= v <= 100_000 for v in self._plan):
            raise InvalidInputError(f"segment frames must be in 1..100000, got {segment_frames}")
        if not 1 <= self.encoders <= 1024:
            raise InvalidInputError(f"encoders must be in 1..1024, got {encoders}")
        self.path = Path(path)
        self._partial = self.path.with_name(f".{self.path.stem}.partial{self.path.suffix}")
        self.size = (width, height)
        self.encoded_size = (width + width % 2, height + height % 2)
        self.frames = 0
        self._muxed = 0  # packets muxed: the next one's place in decoding order
        self.times = EncodeTimes()
        self._settings = _Settings(codec, self.encoded_size, _rate(fps),
                                   _codec_options(codec, crf, preset, threads))
        try:
            self._container = av.open(str(self._partial), "w")
        except (OSError, ValueError, av.error.FFmpegError) as error:
            _remove(self._partial)
            raise VideoError(f"cannot write {self.path}: {error}") from None
        try:
            if metadata:
                self._container.metadata["comment"] = json.dumps(metadata, sort_keys=True)
            self._stream = self._container.add_stream(codec, rate=self._settings.rate)
            self._settings.configure(self._stream.codec_context)
            self._stream.codec_context.open()  # its avcC is what every segment's encoder gives
            self._extradata = bytes(self._stream.codec_context.extradata or b"")
        except (ValueError, av.error.FFmpegError) as error:
            self._container.close()
            _remove(self._partial)
            raise VideoError(f"codec {codec!r} with preset {preset!r}: {error}") from None
        self._pool = ThreadPoolExecutor(self.encoders, thread_name_prefix="orrery-encoder",
                                        initializer=_yield_to_renderer)
        self._segments: deque = deque()  # futures of _Segment, in movie order
        self._feed: queue.Queue | None = None  # frames of the segment being written
        frame_bytes = 3 * self.encoded_size[0] * self.encoded_size[1]
        longest = max(self._plan)
        self._room = threading.Semaphore(max(longest, min(
            self.encoders * longest, FRAMES_IN_FLIGHT_BYTES // frame_bytes)))
        self._next_segment = 0  # the frame the next segment starts at
        self._started = 0       # segments started

    def write(self, rgb: np.ndarray) -> None:
        height, width = rgb.shape[:2]
        if (width, height) != self.size or rgb.shape[2:] != (3,) or rgb.dtype != np.uint8:
            raise InvalidInputError(f"frame must be ({self.size[1]}, {self.size[0]}, 3) uint8, "
                                    f"got {rgb.shape} {rgb.dtype}")
        if self.encoded_size != self.size:
            padded = np.zeros((self.encoded_size[1], self.encoded_size[0], 3), np.uint8)
            padded[:height, :width] = rgb
            rgb = padded
        self._hand_over("rgb24", np.ascontiguousarray(rgb))

    def write_yuv420(self, image: np.ndarray) -> None:
        shape = yuv420_layout(self.encoded_size)
        if image.shape != shape or image.dtype != np.uint8 or not image.flags.c_contiguous:
            raise InvalidInputError(f"a yuv420p frame must be a contiguous {shape} uint8 array, "
                                    f"got {image.shape} {image.dtype}")
        self._hand_over("yuv420p", image)

    def _hand_over(self, kind: str, image: np.ndarray) -> None:
        if self._container is None:
            raise VideoError(f"{self.path} is closed")
        if self.frames == self._next_segment:
            self._start_segment()
        start = time.perf_counter()
        self._room.acquire()
        self.times.wait += time.perf_counter() - start
        self._feed.put((self.frames, kind, image))
        self.frames += 1
        self._mux_finished()

    def _start_segment(self) -> None:
        self._next_segment += self._plan[min(self._started, len(self._plan) - 1)]
        self._started += 1
        if self._feed is not None:
            self._feed.put(None)
        self._feed = queue.Queue()
        self._segments.append(self._pool.submit(_encode_segment, self._settings, self._feed,
                                                self._room))

    def _mux_finished(self, *, wait: bool = False) -> None:
        while self._segments and (wait or self._segments[0].done()):
            segment: _Segment = self._segments.popleft().result()
            if segment.extradata != self._extradata:
                raise VideoError("a segment's encoder gave other SPS/PPS than the stream's: "
                                 "the encoders' settings differ")
            start = time.perf_counter()
            for packet in segment.packets:
                # Each encoder dates its first packets as if it started the movie; one decoding
                # clock for the whole file instead: every packet a frame after the last, shown
                # no earlier than it is decoded (times in frames, the encoders' time base).
                packet.dts = self._muxed - DECODE_AHEAD
                if packet.pts < packet.dts:
                    raise VideoError(f"frame {packet.pts} is decoded more than {DECODE_AHEAD} "
                                     f"frames before it is shown")
                packet.duration = 1
                packet.stream = self._stream
                self.times.bytes += packet.size
                try:
                    self._container.mux(packet)
                except (OSError, _av().error.FFmpegError) as error:
                    raise VideoError(f"writing {self.path} failed: {error}") from None
                self._muxed += 1
            self.times.mux += time.perf_counter() - start
            self.times.convert += segment.convert
            self.times.encode += segment.encode
            self.times.segments += 1

    def close(self, *, keep: bool = True) -> None:
        """Finish the movie and move it to ``path``; with ``keep=False`` (a failed run) remove
        it instead. A write that fails here (a full disk) is :class:`VideoError`, and nothing
        is left at ``path``."""
        if self._container is None:
            return
        start = time.perf_counter()
        kept = False
        try:
            try:
                if self._feed is not None:
                    self._feed.put(None)
                self._mux_finished(wait=True)
            finally:
                self._pool.shutdown(wait=True)  # every feed has ended, so every encoder returns
                container, self._container = self._container, None
                container.close()
            if keep:
                os.replace(self._partial, self.path)
                kept = True
        except (OSError, _av().error.FFmpegError) as error:
            raise VideoError(f"writing {self.path} failed: {error}; nothing was kept") from None
        finally:
            if not kept:
                _remove(self._partial)
            self.times.finish = time.perf_counter() - start

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if kind is None or issubclass(kind, KeyboardInterrupt):
            self.close()
            return
        try:
            self.close(keep=False)
        except Exception:  # noqa: BLE001 - the error leaving the block is the one to report
            pass


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def yuv420_layout(size: tuple[int, int]) -> tuple[int, int]:
    """The array shape of a yuv420p frame of even ``size`` (width, height): the Y rows, then the
    U plane and the V plane (each width/2 x height/2, row after row) packed into rows of ``width``
    bytes; the layout ``VideoFrame.from_numpy_buffer`` takes."""
    width, height = size
    return height * 3 // 2, width


def _encode_segment(settings: _Settings, feed: queue.Queue, room: threading.Semaphore) -> _Segment:
    """Encode the frames ``feed`` gives until None with an encoder of its own (runs on a pool
    thread; PyAV releases the GIL inside swscale and x264)."""
    av = _av()
    packets, convert, encode, ended = [], 0.0, 0.0, False
    try:
        encoder = settings.open_encoder()
        # One converter for the segment, as the served stream keeps one: a frame's own
        # reformat() makes and frees a swscale context for every frame
        converter = av.video.reformatter.VideoReformatter()
        while (item := feed.get()) is not None:
            index, kind, image = item
            try:
                start = time.thread_time()
                if kind == "yuv420p":
                    frame = av.VideoFrame.from_numpy_buffer(image, format="yuv420p")
                else:
                    frame = converter.reformat(
                        av.VideoFrame.from_ndarray(image, format="rgb24"), format="yuv420p",
                        dst_colorspace=BT709, dst_color_range=LIMITED_RANGE, threads=1)
                frame.pts = index
                converted = time.thread_time()
                packets.extend(encoder.encode(frame))
                convert += converted - start
                encode += time.thread_time() - converted
            finally:
                room.release()
        ended = True
        start = time.thread_time()
        packets.extend(encoder.encode(None))  # the delayed frames
        encode += time.thread_time() - start
    except BaseException:
        while not ended and feed.get() is not None:  # give back the room of frames still coming
            room.release()
        raise
    return _Segment(packets, bytes(encoder.extradata or b""), convert, encode)


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


def _yield_to_renderer() -> None:
    """An encoder thread's start: this thread ENCODER_NICENESS nicer than it was, where threads
    have a niceness of their own (the movie is the same either way)."""
    portable.lower_thread_priority(ENCODER_NICENESS)


def _codec_options(codec: str, crf: int, preset: str, threads: int) -> dict:
    options = {"crf": str(crf), "preset": preset, "threads": str(threads)}
    from ...engine.cpu_features import available_simd_levels

    try:
        x264 = _av().Codec(codec, "w").name == "libx264"
    except (ValueError, _av().error.FFmpegError):
        return options  # the stream says which codec is unknown
    if x264 and "avx512" in available_simd_levels():
        options["x264-params"] = f"asm={X264_WITHOUT_AVX512}"
    return options


def _rate(fps: float) -> Fraction:
    return Fraction(fps).limit_denominator(1001)
