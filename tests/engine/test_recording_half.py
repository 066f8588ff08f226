"""float16 frames: the native narrowing gives numpy's bits at every SIMD level, and a recording's
frames come back within the stated bound (relative error <= 2**-11 in the normal range), frame
by frame, through whole-chunk writes."""

import numpy as np
import pytest

from orrery import _native
from orrery.engine.recording import Recorder, RecordingFile

# Round to nearest: at most half a unit in the last place of an 11-bit significand.
HALF_RELATIVE_ERROR = 2.0**-11
SMALLEST_NORMAL_HALF = 2.0**-14


def _hard_values() -> np.ndarray:
    rng = np.random.default_rng(7)
    every_kind = rng.integers(0, 2**32, size=300_000, dtype=np.uint64).astype(np.uint32)
    ties = np.array([65504, 65519.996, 65520, 65536, 2**-25, 2**-24, 1.5 * 2**-25, 1.5 * 2**-24,
                     2**-14, 2**-14 * (1 - 2**-11), 1 + 2**-11, 1 + 3 * 2**-11, 0.0, -0.0,
                     np.inf, -np.inf, 1e-45], np.float32)
    return np.concatenate([every_kind.view(np.float32), ties, -ties,
                           rng.standard_normal(1001).astype(np.float32)])


@pytest.mark.parametrize("level", _native.simd_levels())
def test_native_narrowing_gives_numpys_bits(level):
    values = _hard_values()
    out = np.empty(values.shape, np.float16)
    _native.narrow_to_half(values, out, level)
    with np.errstate(all="ignore"):
        expected = values.astype(np.float16)
    nan = np.isnan(values)
    assert np.array_equal(out.view(np.uint16)[~nan], expected.view(np.uint16)[~nan])
    assert np.isnan(out[nan]).all()
    assert (np.signbit(out[nan]) == np.signbit(values[nan])).all()


def test_native_narrowing_refuses_what_it_would_have_to_copy():
    with pytest.raises(ValueError, match="float32"):
        _native.narrow_to_half(np.zeros(6), np.empty(6, np.float16))
    with pytest.raises(ValueError, match="float16"):
        _native.narrow_to_half(np.zeros(6, np.float32), np.empty(6, np.float32))
    with pytest.raises(ValueError, match="as many"):
        _native.narrow_to_half(np.zeros(6, np.float32), np.empty(5, np.float16))
    with pytest.raises(ValueError, match="C-contiguous"):
        _native.narrow_to_half(np.zeros((6, 2), np.float32)[:, 0], np.empty(6, np.float16))


@pytest.mark.parametrize("n", [1000, 50_000])  # several frames per chunk; one (direct chunk writes)
def test_float16_frames_round_trip_within_the_bound(tmp_path, n):
    rng = np.random.default_rng(n)
    frames = [rng.standard_normal((n, 3)).astype(np.float32) * scale
              for scale in (1.0, 100.0, 1e-3)]
    path = tmp_path / "half.h5"
    with Recorder(path, masses=np.ones(n), dtype="float16") as recorder:
        for step, frame in enumerate(frames):
            recorder.append(frame, 0.1 * step, step)
    with RecordingFile(path) as recording:
        assert (recording.frames_per_chunk == 1) == (n == 50_000)
        for index, frame in enumerate(frames):
            stored = recording.read(index)
            assert np.array_equal(stored.view(np.uint16), frame.astype(np.float16).view(np.uint16))
            normal = np.abs(frame) >= SMALLEST_NORMAL_HALF
            error = np.abs(stored.astype(np.float64) - frame)
            assert (error[normal] <= HALF_RELATIVE_ERROR * np.abs(frame[normal])).all(), index
            assert (error[~normal] <= 2.0**-25).all(), index  # half of the subnormal spacing


def test_float32_frames_written_as_whole_chunks_are_exact(tmp_path):
    n = 30_000
    frames = [np.random.default_rng(k).standard_normal((n, 3)).astype(np.float32)
              for k in range(3)]
    path = tmp_path / "whole.h5"
    with Recorder(path, masses=np.ones(n), velocities=True) as recorder:
        for step, frame in enumerate(frames):
            recorder.append(frame, float(step), step, velocities=-frame)
    with RecordingFile(path) as recording:
        assert recording.frames_per_chunk == 1
        for index, frame in enumerate(frames):
            assert np.array_equal(recording.read(index), frame)
            assert np.array_equal(recording.read(index, velocities=True), -frame)
