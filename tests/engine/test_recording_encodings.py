"""Position encodings (float32, float16, fixed16) and compressed frames: each round trip within
its stated error, frame by frame; a full queue is waited for and counted, never dropped; files
of format versions 1 and 2 still open."""

import sys
import time

import h5py
import numpy as np
import pytest

from orrery.engine import Simulation, frame_encoding, ics, make_solver
from orrery.engine.compute import HostSnapshot
from orrery.engine.errors import InvalidInputError, RecordingError
from orrery.engine.recording import Recorder, RecordingFile
from orrery.engine.recording._writer import RecordingWriter

from ..extras import package


def _frames(count=4, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(scale=[1.0, 5.0, 30.0], size=(n, 3)).astype(np.float32)
    return [base + np.float32(0.01 * k) for k in range(count)]


def _record(path, frames, **options):
    with Recorder(path, masses=np.ones(frames[0].shape[0]), **options) as recorder:
        for index, positions in enumerate(frames):
            recorder.append(positions, 0.1 * index, index)
    return RecordingFile(path)


def test_host_states_stage_frames_with_the_device_encodings():
    sim = Simulation(ics.plummer(400, seed=5), make_solver("cpu-direct", softening=0.01),
                     dt=1e-3)
    for encoding in frame_encoding.ENCODINGS:
        staged = sim.stage_frame(encoding)
        assert isinstance(staged, HostSnapshot)
        assert np.array_equal(staged.host(), frame_encoding.encode_on_host(sim.positions(),
                                                                           encoding))


def test_fixed16_frames_read_back_within_each_frames_stated_error(tmp_path):
    frames = _frames()
    with _record(tmp_path / "r.h5", frames, dtype="fixed16") as recording:
        assert recording.encoding == "fixed16" and recording.dtype == np.float32
        assert recording.frame_bytes == 3000 * 6
        for index, positions in enumerate(frames):
            bound = recording.position_error(index)
            extent = positions.max(axis=0) - positions.min(axis=0)
            assert np.allclose(bound, extent / 65535 * (0.5 + 65535 * 2.0**-20))
            error = np.abs(recording.read(index).astype(np.float64) - positions)
            assert (error <= bound).all()


@pytest.mark.parametrize("compression", ["blosc2", "blosc2-bitshuffle"])
@pytest.mark.parametrize("dtype", ["f16", "f32", "fixed16"])
def test_lossless_compression_gives_back_the_stored_bits(tmp_path, compression, dtype):
    package("hdf5plugin")  # the 'compression' extra, installed in CI
    frames = _frames()
    with _record(tmp_path / "plain.h5", frames, dtype=dtype) as plain, \
            _record(tmp_path / "packed.h5", frames, dtype=dtype,
                    compression=compression) as packed:
        assert packed.compression == compression
        for index in range(len(frames)):
            assert np.array_equal(plain.read(index), packed.read(index))
    with h5py.File(tmp_path / "packed.h5") as file:
        assert file["positions"].id.get_create_plist().get_nfilters() == 1


def test_zfp_keeps_float32_frames_within_its_accuracy_and_refuses_others(tmp_path):
    package("hdf5plugin")
    frames = _frames()
    with _record(tmp_path / "r.h5", frames, compression="zfp=1e-3") as recording:
        for index, positions in enumerate(frames):
            assert np.abs(recording.read(index) - positions).max() <= 1e-3
    with pytest.raises(InvalidInputError, match="zfp compresses float32"):
        Recorder(tmp_path / "h.h5", masses=np.ones(3), dtype="f16", compression="zfp=1e-3")
    for bad in ("zfp=0", "zfp=x", "gzip"):
        with pytest.raises(InvalidInputError):
            Recorder(tmp_path / "b.h5", masses=np.ones(3), compression=bad)


def test_a_full_queue_is_waited_for_and_counted_and_no_frame_is_lost(tmp_path, monkeypatch):
    write = RecordingWriter._write_frame

    def slow_write(self, item):
        time.sleep(0.02)
        write(self, item)

    monkeypatch.setattr(RecordingWriter, "_write_frame", slow_write)
    frames = _frames(count=12, n=100)
    with Recorder(tmp_path / "r.h5", masses=np.ones(100), queue_bytes=1) as recorder:
        assert recorder.queue_capacity == 2
        for index, positions in enumerate(frames):
            recorder.append(positions, 0.1 * index, index)
        stats = recorder.stats()
    assert stats["queue_waits"] > 0 and stats["queue_wait_seconds"] > 0
    with RecordingFile(tmp_path / "r.h5") as recording:
        assert recording.frame_count == 12
        assert np.array_equal(recording.read(11), frames[11])


def test_velocities_are_refused_with_fixed16_positions(tmp_path):
    with pytest.raises(InvalidInputError, match="fixed16 stores positions only"):
        Recorder(tmp_path / "r.h5", masses=np.ones(3), dtype="fixed16", velocities=True)


@pytest.mark.parametrize("version", [1, 2])
def test_a_file_of_an_older_format_version_opens_by_its_dtype(tmp_path, version):
    frames = _frames(count=2, n=50)
    _record(tmp_path / "r.h5", frames, dtype="f16").close()
    with h5py.File(tmp_path / "r.h5", "r+") as file:
        file.attrs["format_version"] = version
        del file.attrs["position_encoding"]
        del file.attrs["compression"]
    with RecordingFile(tmp_path / "r.h5") as recording:
        assert recording.format_version == version and recording.encoding == "float16"
        assert np.array_equal(recording.read(1), frames[1].astype(np.float16))


@pytest.mark.parametrize("dtype", ["f16", "fixed16"])
def test_a_staged_frame_of_a_whole_chunk_is_written_from_its_read_only_buffer(tmp_path, dtype):
    """What a device frame is on the writer thread: a read-only (pinned) host copy, at least
    a chunk large, handed to the direct chunk write as it is."""
    n = 60000
    positions = _frames(count=1, n=n)[0]
    staged = HostSnapshot(frame_encoding.encode_on_host(positions, fmt_name(dtype)))
    with Recorder(tmp_path / "r.h5", masses=np.ones(n), dtype=dtype) as recorder:
        assert recorder._layout.frames_per_chunk == 1
        recorder.append(staged, 0.0, 0)
    with RecordingFile(tmp_path / "r.h5") as recording:
        if dtype == "f16":
            assert np.array_equal(recording.read(0), staged.host())
        else:
            assert (np.abs(recording.read(0) - positions) <= recording.position_error(0)).all()


def fmt_name(flag: str) -> str:
    return {"f16": "float16", "fixed16": "fixed16"}[flag]


def test_compressed_frames_without_hdf5plugin_are_a_clear_error(tmp_path, monkeypatch):
    package("hdf5plugin")
    _record(tmp_path / "r.h5", _frames(count=1, n=100), compression="blosc2").close()
    monkeypatch.setitem(sys.modules, "hdf5plugin", None)  # as if not installed
    with pytest.raises(RecordingError, match="pip install hdf5plugin"):
        RecordingFile(tmp_path / "r.h5")
    with pytest.raises(InvalidInputError, match="needs hdf5plugin"):
        Recorder(tmp_path / "new.h5", masses=np.ones(3), compression="blosc2")
