import threading
import time
import tracemalloc

import h5py
import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver
from orrery.engine.errors import InvalidInputError, RecordingError
from orrery.engine.recording._writer import RecordingWriter
from orrery.engine.recording import (FORMAT_VERSION, MAX_PARTICLES, Player, Recorder,
                                     RecordingFile, run_attributes)


def simulate_and_record(path, *, dtype, n=96, frames=12, every=2, velocities=True):
    """Run a small simulation, recording every ``every`` steps; return what was recorded."""
    sim = Simulation(ics.plummer(n, seed=5), make_solver("cpu-direct", precision="f32",
                                                         softening=0.05), dt=2e-3)
    kept = []
    with Recorder(path, masses=sim.particles.mass, attributes=run_attributes(sim, scenario="t"),
                  dtype=dtype, velocities=velocities, flush_seconds=0.05) as recorder:
        for _ in range(frames):
            state = sim.particles
            kept.append((state.pos.copy(), state.vel.copy(), sim.time, sim.steps))
            recorder.append(state.pos, sim.time, sim.steps,
                            velocities=state.vel if velocities else None)
            sim.step(every)
    return kept


@pytest.fixture
def recorded(tmp_path):
    path = tmp_path / "run.h5"
    return path, simulate_and_record(path, dtype="float32")


def test_float32_round_trip_is_exact(recorded):
    path, kept = recorded
    with RecordingFile(path) as recording:
        assert recording.frame_count == len(kept) and recording.closed_cleanly
        assert recording.dtype == np.float32 and recording.n == 96
        for index, (pos, vel, t, step) in enumerate(kept):
            np.testing.assert_array_equal(recording.read(index), pos)
            np.testing.assert_array_equal(recording.read(index, velocities=True), vel)
            assert recording.times[index] == t and recording.steps[index] == step
        assert recording.attributes["solver"] == "cpu-direct"
        assert recording.attributes["solver_params"]["softening"] == 0.05
        assert recording.attributes["dt"] == 2e-3 and recording.attributes["G"] == 1.0
        assert recording.attributes["format_version"] == FORMAT_VERSION
        assert recording.population_names == ("all",)
        np.testing.assert_allclose(recording.masses, ics.plummer(96, seed=5).mass)


def test_float16_round_trip_is_within_half_precision_rounding(tmp_path):
    kept = simulate_and_record(tmp_path / "half.h5", dtype="float16", velocities=False)
    with RecordingFile(tmp_path / "half.h5") as recording:
        assert recording.dtype == np.float16 and not recording.has_velocities
        for index, (pos, _, _, _) in enumerate(kept):
            stored = recording.read(index)
            assert stored.dtype == np.float16
            # Round to nearest: at most half a unit in the last place (2**-11 relative).
            error = np.abs(stored.astype(np.float64) - pos)
            assert (error <= np.abs(pos) * 2.0**-11 + 2.0**-25).all()
            np.testing.assert_array_equal(stored, pos.astype(np.float16))


def test_plain_h5py_reads_a_recording(recorded):
    path, kept = recorded
    with h5py.File(path, "r") as file:
        np.testing.assert_array_equal(file["positions"][3], kept[3][0])
        assert file["step"][-1] == kept[-1][3]
        assert file.attrs["format"] == "orrery-recording"


def test_append_blocks_when_the_writer_falls_behind(tmp_path, monkeypatch):
    release = threading.Event()
    original = RecordingWriter._write_frame

    def stalled_write(self, item):
        release.wait()
        original(self, item)

    monkeypatch.setattr(RecordingWriter, "_write_frame", stalled_write)
    frame = np.zeros((64, 3), np.float32)
    recorder = Recorder(tmp_path / "slow.h5", masses=np.ones(64), queue_bytes=1)
    capacity = recorder.queue_capacity
    assert capacity == 2
    appended = []

    def producer():
        for step in range(capacity + 3):
            recorder.append(frame + step, float(step), step)
            appended.append(step)

    thread = threading.Thread(target=producer)
    thread.start()
    deadline = time.monotonic() + 10
    while len(appended) < capacity + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    # One frame is held by the stalled writer, `capacity` wait in the queue, the next append waits.
    assert thread.is_alive() and len(appended) == capacity + 1
    assert recorder._writer.queue.qsize() == capacity
    release.set()
    thread.join(timeout=10)
    recorder.close()
    with RecordingFile(tmp_path / "slow.h5") as recording:
        assert recording.frame_count == capacity + 3
        assert [recording.read(i)[0, 0] for i in range(capacity + 3)] == list(range(capacity + 3))


def test_writer_starts_the_disk_on_its_frames_as_they_arrive(tmp_path, monkeypatch):
    """Every WRITEBACK_BYTES of frames the writer asks the OS to write back the recording's own
    file, so the disk works beside the run rather than all at once at its end."""
    from orrery.engine import portable
    from orrery.engine.recording import _writer

    started = []
    start_writeback = portable.start_writeback
    monkeypatch.setattr(_writer, "WRITEBACK_BYTES", 3 * 64 * 3 * 4)  # three frames
    monkeypatch.setattr(portable, "start_writeback",
                        lambda fd: started.append((fd, start_writeback(fd))))
    path = tmp_path / "run.h5"
    with Recorder(path, masses=np.ones(64)) as recorder:
        for step in range(10):
            recorder.append(np.full((64, 3), step, np.float32), float(step), step)
    descriptors = {fd for fd, _ in started}
    assert len(started) == 3 and len(descriptors) == 1
    fd = descriptors.pop()
    assert isinstance(fd, int) and fd >= 0
    # Linux has the call and takes it on a regular file of tmp_path's file system.
    assert all(done for _, done in started) == (portable.CHOSEN["write-back"] == "sync_file_range")
    with RecordingFile(path) as recording:
        assert recording.frame_count == 10


def test_writer_failure_is_reported_to_the_caller(tmp_path, monkeypatch):
    def failing_write(self, item):
        raise OSError("disk full")

    monkeypatch.setattr(RecordingWriter, "_write_frame", failing_write)
    recorder = Recorder(tmp_path / "fail.h5", masses=np.ones(8))
    recorder.append(np.zeros((8, 3)), 0.0, 0)
    with pytest.raises(RecordingError, match="disk full"):
        for step in range(1, 100):
            recorder.append(np.zeros((8, 3)), float(step), step)
            time.sleep(0.01)
    with pytest.raises(RecordingError, match="disk full"):
        recorder.close()


def test_recorder_rejects_bad_frames(tmp_path):
    with Recorder(tmp_path / "r.h5", masses=np.ones(4), velocities=True) as recorder:
        with pytest.raises(InvalidInputError, match="shape"):
            recorder.append(np.zeros((5, 3)), 0.0, 0, velocities=np.zeros((5, 3)))
        with pytest.raises(InvalidInputError, match="velocities"):
            recorder.append(np.zeros((4, 3)), 0.0, 0)
        recorder.append(np.zeros((4, 3)), 0.0, 10, velocities=np.zeros((4, 3)))
        with pytest.raises(InvalidInputError, match="increasing step"):
            recorder.append(np.zeros((4, 3)), 1.0, 10, velocities=np.zeros((4, 3)))
    with pytest.raises(RecordingError, match="already exists"):
        Recorder(tmp_path / "r.h5", masses=np.ones(4))
    with pytest.raises(InvalidInputError, match="float32, float16 or fixed16"):
        Recorder(tmp_path / "other.h5", masses=np.ones(4), dtype="float64")


@pytest.mark.parametrize("layout", ["gzip", "contiguous", "big-endian"])
def test_files_rewritten_by_other_tools_still_read_exactly(recorded, tmp_path, layout):
    path, kept = recorded
    copy = tmp_path / f"{layout}.h5"
    with h5py.File(path, "r") as source, h5py.File(copy, "w") as target:
        target.attrs.update(source.attrs)
        for name, dataset in source.items():
            data = dataset[()]
            if name in ("positions", "velocities"):
                options = {"gzip": {"compression": "gzip", "chunks": (1,) + data.shape[1:]},
                           "contiguous": {},
                           "big-endian": {"dtype": data.dtype.newbyteorder(">")}}[layout]
                target.create_dataset(name, data=data, **options)
            else:
                target.create_dataset(name, data=data, dtype=dataset.dtype)
    with RecordingFile(copy) as recording:
        assert recording.frame_count == len(kept)
        for index, (pos, vel, _, _) in enumerate(kept):
            np.testing.assert_array_equal(recording.read(index), pos)
            np.testing.assert_array_equal(recording.read(index, velocities=True), vel)


# -- replay --------------------------------------------------------------------------------------

def frame_at(player, index, timeout=5.0):
    """Seek and wait (polling the non-blocking latest()) until the frame at ``index`` arrives."""
    player.seek(index)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = player.latest()
        if frame is not None and frame.stats.index == index:
            return frame
        time.sleep(0.001)
    raise AssertionError(f"frame {index} did not arrive")


def test_player_replays_in_order_backwards_and_at_random(recorded):
    path, kept = recorded
    with Player(path, buffers=4) as player:
        assert player.frame_count == len(kept) and player.population_names == ("all",)
        order = (list(range(len(kept))) + list(reversed(range(len(kept))))
                 + list(np.random.default_rng(1).permutation(len(kept))))
        sequences = []
        for index in order:
            frame = frame_at(player, int(index))
            pos, _, t, step = kept[index]
            np.testing.assert_array_equal(frame.positions, pos)
            assert (frame.time, frame.step) == (t, step) == (player.time_of(index),
                                                             kept[index][3])
            assert not frame.positions.flags.writeable
            sequences.append(frame.sequence)
        assert sequences == sorted(sequences)


def test_player_plays_by_the_clock_stops_at_the_end_and_loops(recorded):
    path, kept = recorded
    with Player(path, speed=200.0) as player:
        player.play()
        assert player.playing
        time.sleep(len(kept) / 200.0 + 0.2)
        assert not player.playing and player.position == len(kept) - 1
        player.loop = True
        player.speed = -400.0
        player.play()
        time.sleep(0.1)  # 40 frames back from the end of 12 wraps around at least once
        assert player.playing and 0 <= player.position < len(kept)
        player.step(-1)
        assert not player.playing
        paused_at = player.position
        time.sleep(0.05)
        assert player.position == paused_at
        player.seek(0)
        player.step(-1)
        assert player.position == len(kept) - 1  # wraps with loop


def test_a_held_frame_is_never_overwritten(recorded):
    path, kept = recorded
    with Player(path, buffers=4) as player:
        held = frame_at(player, 0)
        copy = np.array(held.positions)
        for index in range(1, len(kept)):
            frame_at(player, index)
        np.testing.assert_array_equal(held.positions, copy)


def test_float16_frames_stay_float16_in_the_player(tmp_path):
    kept = simulate_and_record(tmp_path / "half.h5", dtype="float16", velocities=False, frames=4)
    with Player(tmp_path / "half.h5") as player:
        frame = frame_at(player, 2)
        assert frame.positions.dtype == np.float16
        np.testing.assert_array_equal(frame.positions, kept[2][0].astype(np.float16))


# -- bad files -----------------------------------------------------------------------------------

def small_recording(path):
    simulate_and_record(path, dtype="float32", n=32, frames=3, velocities=False)
    return path


def edit(path, change):
    with h5py.File(path, "r+") as file:
        change(file)
    return path


def write_declaring(path, *, n, frames, with_series=False):
    """An HDF5 file whose positions declare more frames than it holds. Without ``with_series`` no
    data is written at all; with it, masses, labels, times and steps are real."""
    with h5py.File(path, "w") as file:
        file.attrs.update({"format": "orrery-recording", "format_version": FORMAT_VERSION})
        file.create_dataset("positions", shape=(frames, n, 3), chunks=(1, min(n, 2**20), 3),
                            dtype="f4")
        for name, dtype in (("time", "f8"), ("step", "i8")):
            if with_series:
                file.create_dataset(name, data=np.arange(frames, dtype=dtype))
            else:
                file.create_dataset(name, shape=(frames,), chunks=(min(frames, 1024),), dtype=dtype)
        for name, dtype in (("masses", "f8"), ("population", "u1")):
            if with_series:
                file.create_dataset(name, data=np.ones(n, dtype=dtype) * (dtype == "f8"))
            else:
                file.create_dataset(name, shape=(n,), chunks=(min(n, 2**20),), dtype=dtype)
        file.create_dataset("population_names", data=["all"], dtype=h5py.string_dtype())
    return path


def truncated(path):
    small_recording(path)
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.truncate(size // 2)
    return path


BAD_FILES = {
    "not HDF5": (lambda p: (p.write_text("x,y,z\n1,2,3\n"), p)[1], "not an HDF5 file"),
    "empty": (lambda p: (p.write_bytes(b""), p)[1], "not an HDF5 file"),
    "truncated": (truncated, "truncated"),
    "future version": (lambda p: edit(small_recording(p),
                                      lambda f: f.attrs.modify("format_version", 99)),
                       "newer Orrery"),
    "version not a number": (lambda p: edit(small_recording(p),
                                            lambda f: f.attrs.__setitem__("format_version", "one")),
                             "not a valid version"),
    "not a recording": (lambda p: edit(small_recording(p), lambda f: f.attrs.__delitem__("format")),
                        "not an Orrery recording"),
    "missing dataset": (lambda p: edit(small_recording(p), lambda f: f.__delitem__("step")),
                        r"missing dataset\(s\) \['step'\]"),
    "masses of the wrong length": (
        lambda p: edit(small_recording(p), lambda f: (f.__delitem__("masses"),
                                                      f.create_dataset("masses", data=np.ones(7)))),
        "shape"),
    "label without a name": (
        lambda p: edit(small_recording(p), lambda f: f["population"].__setitem__(0, 5)),
        "population labels exceed"),
    "more particles than the limit": (
        lambda p: write_declaring(p, n=MAX_PARTICLES + 1, frames=1), "outside 1.."),
    "particles the file cannot hold": (
        lambda p: write_declaring(p, n=2**20, frames=10**6), "more than the file's"),
    "scalar population_names": (
        lambda p: edit(small_recording(p), lambda f: (
            f.__delitem__("population_names"),
            f.create_dataset("population_names", data="all", dtype=h5py.string_dtype()))),
        r"'population_names' has shape \(\), expected 1 to 256 names"),
    "positions a soft link to itself": (
        lambda p: edit(small_recording(p), lambda f: (
            f.__delitem__("positions"), f.__setitem__("positions", h5py.SoftLink("/positions")))),
        "'positions' is a SoftLink, not a dataset"),
    "names of 100 MB each": (  # 200 of them, compressed to almost nothing: 20 GB to read
        lambda p: edit(small_recording(p), lambda f: (
            f.__delitem__("population_names"),
            f.create_dataset("population_names", shape=(200,), chunks=(1,), compression="gzip",
                             dtype=h5py.string_dtype(length=100 << 20)))),
        "population names of 104857600 bytes each, more than the limit of 256"),
    "frames the file cannot hold": (
        lambda p: write_declaring(p, n=1000, frames=200_000, with_series=True),
        "declares 200000 frames of 1000 particles"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_gives_a_clear_error_without_large_allocations(tmp_path, case):
    make, message = BAD_FILES[case]
    path = make(tmp_path / "bad.h5")
    tracemalloc.start()
    try:
        with pytest.raises(RecordingError, match=message):
            RecordingFile(path)
        with pytest.raises(RecordingError, match=message):
            Player(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_missing_file_is_a_recording_error(tmp_path):
    with pytest.raises(RecordingError, match="no such file"):
        RecordingFile(tmp_path / "nothing.h5")
