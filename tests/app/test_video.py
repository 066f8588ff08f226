"""The video writer: segments encoded in parallel and muxed into one file that depends on the
frames only (decoded back with PyAV), and the same frames encoding to the same bytes every time."""

import hashlib

import numpy as np
import pytest

av = pytest.importorskip("av", reason="the video extra (PyAV) is not installed")

from orrery.app.export import VideoWriter, read_video, segment_length  # noqa: E402
from orrery.app.export._video import PARALLEL_SEGMENTS, yuv420_layout  # noqa: E402
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


def test_segments_are_a_second_at_most_and_short_movies_still_have_many():
    assert segment_length(60) == 60
    assert segment_length(60, 100_000) == 60
    assert segment_length(60, 640) == 20  # 32 segments keep 16 encoders busy
    assert -(-640 // segment_length(60, 640)) == PARALLEL_SEGMENTS
    assert segment_length(60, 121) == 4   # but never shorter than 4 frames
    assert segment_length(2, 100) == 2   # nor longer than a second


def test_an_encoder_that_fails_stops_the_movie_with_its_error_and_nothing_hangs(tmp_path,
                                                                               monkeypatch):
    from orrery.app.export import _video

    opened = _video._Settings.open_encoder
    calls = []

    def second_fails(settings):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("encoder broke")
        return opened(settings)

    monkeypatch.setattr(_video._Settings, "open_encoder", second_fails)
    frames = _moving_stars(32, 32, 9)
    with pytest.raises(RuntimeError, match="encoder broke"):
        # room for 2 frames only: the writer would wait for ever on a dead encoder's frames
        monkeypatch.setattr(_video, "FRAMES_IN_FLIGHT_BYTES", 2 * 3 * 32 * 32)
        _write(tmp_path / "broken.mp4", frames, segment_frames=2, encoders=1)
