"""Narrowed frames never store inf: a float16 frame with a coordinate beyond 65,504 (or a fixed16
frame without a finite box) is refused where it is narrowed, on the caller's thread for host
frames and on the writer thread for frames a device narrowed, and the recording keeps every
frame before it."""

import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver
from orrery.engine.compute import HostSnapshot
from orrery.engine.errors import InvalidInputError, RecordingError
from orrery.engine.recording import Recorder, RecordingFile

N = 64


def _frames():
    rng = np.random.default_rng(3)
    good = rng.standard_normal((N, 3)).astype(np.float32)
    far = good.copy()
    far[7, 2] = 70_000.0  # above 65,519.99: float16 would round it to inf
    return good, far


def test_a_float16_frame_beyond_65504_is_refused_naming_its_largest_coordinate(tmp_path):
    good, far = _frames()
    path = tmp_path / "half.h5"
    with Recorder(path, masses=np.ones(N), dtype="float16") as recorder:
        recorder.append(good, 0.0, 0)
        with pytest.raises(InvalidInputError, match=r"65,504 \(the largest is 70000\)"):
            recorder.append(far, 1.0, 1)
        recorder.append(good, 2.0, 2)  # the refused frame left the recording usable
    with RecordingFile(path) as recording:
        assert recording.frame_count == 2 and recording.closed_cleanly
        assert all(np.isfinite(recording.read(index)).all() for index in range(2))


def test_float16_velocities_beyond_65504_are_refused_too(tmp_path):
    good, far = _frames()
    with Recorder(tmp_path / "v.h5", masses=np.ones(N), dtype="float16",
                  velocities=True) as recorder:
        with pytest.raises(InvalidInputError, match="velocities beyond float16"):
            recorder.append(good, 0.0, 0, velocities=far)


def test_a_float16_frame_within_rounding_of_65504_is_kept(tmp_path):
    good, _ = _frames()
    good[0, 0] = 65519.0  # rounds to 65504, not to inf
    with Recorder(tmp_path / "edge.h5", masses=np.ones(N), dtype="float16") as recorder:
        recorder.append(good, 0.0, 0)
    with RecordingFile(tmp_path / "edge.h5") as recording:
        assert recording.read(0)[0, 0] == 65504.0


def test_a_frame_narrowed_elsewhere_with_inf_stops_the_writer_keeping_the_frames_before(tmp_path):
    good, far = _frames()
    path = tmp_path / "staged.h5"
    recorder = Recorder(path, masses=np.ones(N), dtype="float16", flush_seconds=0.01)
    recorder.append(good, 0.0, 0)
    with np.errstate(over="ignore"):
        recorder.append(HostSnapshot(far.astype(np.float16)), 1.0, 1)  # as a device hands it
    with pytest.raises(RecordingError, match="frame 1 of .* refused: positions beyond float16.*"
                                             "keeps the 1 frame"):
        recorder.close()
    with RecordingFile(path) as recording:
        assert recording.frame_count == 1 and recording.closed_cleanly


def test_a_fixed16_frame_with_a_non_finite_coordinate_is_refused(tmp_path):
    good, _ = _frames()
    good[5, 1] = np.inf
    with Recorder(tmp_path / "fixed.h5", masses=np.ones(N), dtype="fixed16") as recorder:
        with pytest.raises(InvalidInputError, match="no fixed16 box"):
            recorder.append(good, 0.0, 0)


def test_a_float16_recording_of_a_simulation_beyond_65504_is_refused_before_the_file_exists(
        tmp_path):
    particles = ics.plummer(N, seed=1)
    particles.pos[:] *= 1e5
    simulation = Simulation(particles, make_solver("cpu-direct"), dt=1e-3)
    path = tmp_path / "sim.h5"
    with pytest.raises(InvalidInputError, match="cannot record .* as float16: positions beyond"):
        Recorder.for_simulation(path, simulation, scenario="far", dtype="float16")
    assert not path.exists()

