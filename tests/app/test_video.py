"""The video writer: segments encoded in parallel and muxed into one file that depends on the
frames only (decoded back with PyAV), and the same frames encoding to the same bytes every time."""

import hashlib
import os
import sys
import threading

import numpy as np
import pytest

from ..extras import package

av = package("av")

from orrery.app.export import VideoWriter, read_video, segment_plan  # noqa: E402
from orrery.app.export._video import (ENCODER_NICENESS, PARALLEL_SEGMENTS,  # noqa: E402
                                      yuv420_layout)
from orrery.engine.errors import InvalidInputError  # noqa: E402


def _moving_stars(width, height, count, seed=5):
    """Frames of a star field sliding by several pixels a frame: motion that x264 searches."""
    rng = np.random.default_rng(seed)
    sky = np.zeros((3 * height, 3 * width, 3), np.uint8)
    rows, columns = rng.integers(0, 3 * height, 4000), rng.integers(0, 3 * width, 4000)
    sky[rows, columns] = rng.integers(60, 255, (4000, 3))
    return [np.ascontiguousarray(sky[(7 * i) % height:(7 * i) % height + height,
                                     (13 * i) % width:(13 * i) % width + width])
            for i in range(count)]


def _write(path, frames, **options):
    height, width = frames[0].shape[:2]
    with VideoWriter(path, size=(width, height), fps=30, **options) as video:
        for frame in frames:
            video.write(frame)
    return video


def _digest(path):
    return hashlib.sha1(path.read_bytes()).hexdigest()


def test_the_file_does_not_depend_on_how_many_encoders_ran(tmp_path):
    frames = _moving_stars(96, 64, 11)
    one = _write(tmp_path / "one.mp4", frames, segment_frames=3, encoders=1)
    three = _write(tmp_path / "three.mp4", frames, segment_frames=3, encoders=3)
    assert one.times.segments == three.times.segments == 4
    assert _digest(tmp_path / "one.mp4") == _digest(tmp_path / "three.mp4")
    decoded, rate, _ = read_video(tmp_path / "three.mp4")
    assert len(decoded) == 11 and rate == 30
    # the decoded frames follow the input (x264 at crf 18 on a sparse star field)
    errors = [np.abs(a.astype(int) - b).mean() for a, b in zip(decoded, frames)]
    assert max(errors) < 6
    with av.open(str(tmp_path / "three.mp4")) as container:
        packets = [p for p in container.demux(video=0) if p.size]
        stream = container.streams.video[0]
        assert stream.codec_context.colorspace == 1  # tagged BT.709
    assert [p.is_keyframe for p in sorted(packets, key=lambda p: p.pts)][::3] == [True] * 4
    dts = [p.dts for p in packets]
    assert dts == sorted(set(dts)) and all(p.dts <= p.pts for p in packets)
    assert sorted(round(p.pts * p.time_base * 30) for p in packets) == list(range(11))


def test_encoders_run_nicer_than_the_thread_that_renders(tmp_path):
    """On Linux, where a thread has its own niceness, each encoder thread is ENCODER_NICENESS
    nicer; elsewhere the call would change the whole process's, so nothing changes."""
    frames = _moving_stars(96, 64, 8)
    linux = sys.platform.startswith("linux")
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id() if linux else 0) \
        if hasattr(os, "getpriority") else None
    with VideoWriter(tmp_path / "nice.mp4", size=(96, 64), fps=30, segment_frames=2,
                     encoders=2) as video:
        for frame in frames:
            video.write(frame)
        encoders = [thread.native_id for thread in threading.enumerate()
                    if thread.name.startswith("orrery-encoder")]
        assert encoders
        if linux:
            assert {os.getpriority(os.PRIO_PROCESS, thread) for thread in encoders} == \
                {min(19, base + ENCODER_NICENESS)}
    if linux:
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base
    elif base is not None:
        assert os.getpriority(os.PRIO_PROCESS, 0) == base  # the process's own, unchanged
    assert len(read_video(tmp_path / "nice.mp4")[0]) == 8


def test_the_same_frames_encode_to_the_same_bytes_every_time(tmp_path):
    # 160x120 stars moving by 7-13 pixels a frame: with x264's AVX-512 routines on, 3 of 6
    # such encodes in one process differed (measured)
    frames = _moving_stars(160, 120, 10)
    digests = set()
    for attempt in range(10):
        _write(tmp_path / f"{attempt}.mp4", frames, segment_frames=5, encoders=2)
        digests.add(_digest(tmp_path / f"{attempt}.mp4"))
    assert len(digests) == 1


def test_yuv420_frames_go_in_as_they_are(tmp_path):
    width, height = 64, 48
    frame = np.full(yuv420_layout((width, height)), 128, np.uint8)
    frame[:height] = np.linspace(16, 235, width, dtype=np.uint8)  # a grey ramp, left to right
    with VideoWriter(tmp_path / "ramp.mp4", size=(width, height), fps=10) as video:
        for _ in range(3):
            video.write_yuv420(frame)
        with pytest.raises(InvalidInputError, match="yuv420p frame"):
            video.write_yuv420(frame[:-1])
    decoded, _, _ = read_video(tmp_path / "ramp.mp4")
    assert len(decoded) == 3
    grey = decoded[0].astype(int)
    assert np.abs(grey[..., 0] - grey[..., 2]).max() <= 2  # no colour
    assert grey[:, 0].mean() < 8 and grey[:, -1].mean() > 247  # limited range: 16 black, 235 white


def test_odd_sizes_are_padded_and_a_closed_writer_refuses_frames(tmp_path):
    frames = _moving_stars(33, 17, 2)
    video = _write(tmp_path / "odd.mp4", frames)
    assert video.encoded_size == (34, 18)
    decoded, _, _ = read_video(tmp_path / "odd.mp4")
    assert decoded[0].shape == (18, 34, 3)
    with pytest.raises(Exception, match="closed"):
        video.write(frames[0])


def test_segments_are_a_second_at_most_many_and_short_towards_the_end():
    assert segment_plan(60) == (60,)  # unknown length: a second each
    for frames in (1, 9, 121, 600, 3600, 100_000):
        plan = segment_plan(60, frames)
        *lengths, repeated = plan
        assert sum(lengths) == frames and repeated == 60
        assert max(lengths) <= 60 and (frames < 8 or min(lengths) >= 4)
        # at least 32 segments where 4-frame ones allow it
        assert len(lengths) >= min(PARALLEL_SEGMENTS, frames // 4)
        # towards the end no segment is longer than an eighth of the frames after it (or 4)
        behind = 0
        for length in reversed(lengths[1:]):
            assert length <= max(4, -(-behind // 8))
            behind += length
    assert segment_plan(60, 121)[:-1] == (5,) + (4,) * 29
    assert segment_plan(2, 100)[:-1] == (2,) * 50  # a second at most, even under 4 frames


def test_a_movie_follows_its_segment_plan(tmp_path):
    video = _write(tmp_path / "plan.mp4", _moving_stars(32, 32, 12), segment_frames=(5, 3))
    assert video.times.segments == 4  # 5, 3, 3, 1
    with av.open(str(tmp_path / "plan.mp4")) as container:
        keys = sorted(round(p.pts * p.time_base * 30) for p in container.demux(video=0)
                      if p.size and p.is_keyframe)
    assert {0, 5, 8, 11} <= set(keys)  # each segment starts with an IDR frame
