"""Recordings in priority order (ADR 0280): any prefix of a frame is a fair sample of it, the
whole frame is the run's frame permuted, and files without an order still read and play."""

import time

import h5py
import numpy as np
import pytest

from orrery.engine import frame_encoding, ics
from orrery.engine.compute import HostSnapshot
from orrery.engine.errors import InvalidInputError, RecordingError
from orrery.engine.recording import Player, Recorder, RecordingFile


def _sorted_plummer(n):
    """A Plummer sphere's positions sorted by radius: a natural order in which a prefix is the
    core, so only a real sample passes the profile check."""
    positions = ics.plummer(n, seed=3).pos.astype(np.float32)
    return positions[np.argsort(np.linalg.norm(positions, axis=1))]


def _record(path, frames, *, order, dtype="float32", velocities=False, population=None,
            names=("all",)):
    n = frames[0].shape[0]
    with Recorder(path, masses=np.linspace(1.0, 2.0, n), population=population,
                  population_names=names, dtype=dtype, order=order, velocities=velocities,
                  keyframe_dtype=np.float32) as recorder:
        for index, positions in enumerate(frames):
            recorder.append(positions, 0.1 * index, index,
                            velocities=-positions if velocities else None)
            recorder.append_keyframe(positions, -positions, 0.1 * index, index)
    return path


def _ks_distance(sample, whole):
    """The Kolmogorov-Smirnov distance between the empirical distributions of two samples."""
    grid = np.sort(whole)
    return float(np.max(np.abs(np.searchsorted(np.sort(sample), grid, side="right") / sample.size
                               - np.arange(1, grid.size + 1) / grid.size)))


def test_a_prefix_of_a_priority_frame_has_the_radial_profile_of_the_whole_frame(tmp_path):
    n, k = 40_000, 2_000
    frame = _sorted_plummer(n)
    radii = np.linalg.norm(frame, axis=1)
    # The KS distance of a sample of k from its population stays below 1.95 / sqrt(k) with
    # probability 0.999 (sampling without replacement only narrows it).
    limit = 1.95 / np.sqrt(k)
    # ten shells of equal mass: a fair sample puts k / 10 in each, within Poisson noise
    edges = np.quantile(radii, np.linspace(0, 1, 11))
    edges[-1] = np.inf
    for order, fair in (("priority", True), ("natural", False)):
        path = _record(tmp_path / f"{order}.h5", [frame], order=order)
        with RecordingFile(path) as recording:
            prefix_radii = np.linalg.norm(recording.read(0, count=k), axis=1)
        distance = _ks_distance(prefix_radii, radii)
        assert (distance < limit) == fair, (order, distance, limit)
        counts = np.histogram(prefix_radii, edges)[0]
        chi_square = np.sum((counts - k / 10) ** 2 / (k / 10))
        assert (chi_square < 27.9) == fair, (order, chi_square)  # 9 dof, p = 0.001


@pytest.mark.parametrize("dtype", ["float32", "float16", "fixed16"])
def test_reading_a_prefix_gives_exactly_the_first_particles_of_the_permuted_frame(tmp_path,
                                                                                  dtype):
    frames = [_sorted_plummer(3000) * (1 + 0.1 * i) for i in range(3)]
    velocities = dtype != "fixed16"
    path = _record(tmp_path / "r.h5", frames, order="priority", dtype=dtype,
                   velocities=velocities)
    with RecordingFile(path) as recording:
        assert recording.order == "priority"
        whole = recording.read(2)
        assert np.array_equal(whole, recording.read(2, count=3000))
        for k in (1, 17, 1000):
            assert np.array_equal(recording.read(2, count=k), whole[:k])
            out = np.empty((k, 3), recording.dtype)
            assert recording.read_into(2, out) is out and np.array_equal(out, whole[:k])
        if velocities:
            assert np.array_equal(recording.read(2, velocities=True, count=5),
                                  recording.read(2, velocities=True)[:5])
        # the whole frame is the run's frame through the stored permutation
        run_frame = recording.in_run_order(whole)
        if dtype == "float32":
            assert np.array_equal(run_frame, frames[2])
            assert np.array_equal(whole, frames[2][recording.permutation])
        else:
            natural = _record(tmp_path / "n.h5", frames, order="natural", dtype=dtype)
            with RecordingFile(natural) as reference:
                assert reference.order == "natural" and reference.permutation is None
                assert run_frame.tobytes() == reference.read(2).tobytes()
        with pytest.raises(InvalidInputError, match="shape"):
            recording.read(0, count=3001)


@pytest.mark.parametrize("dtype", ["float16", "fixed16"])
def test_a_staged_device_frame_is_gathered_into_the_priority_order(tmp_path, dtype):
    """What a GPU run hands the writer: a read-only host copy already narrowed, a whole chunk
    (the direct chunk write), gathered on the writer thread like a host frame."""
    n = 60_000
    positions = _sorted_plummer(n)
    staged = HostSnapshot(frame_encoding.encode_on_host(positions, dtype))
    staged.host().flags.writeable = False
    with Recorder(tmp_path / "r.h5", masses=np.ones(n), dtype=dtype,
                  order="priority") as recorder:
        assert recorder._layout.frames_per_chunk == 1
        recorder.append(staged, 0.0, 0)
    natural = _record(tmp_path / "n.h5", [positions], order="natural", dtype=dtype)
    with RecordingFile(tmp_path / "r.h5") as recording, RecordingFile(natural) as reference:
        assert recording.in_run_order(recording.read(0)).tobytes() == reference.read(0).tobytes()


def test_masses_populations_and_keyframes_follow_the_frames_order(tmp_path):
    n = 500
    frame = _sorted_plummer(n)
    population = (np.arange(n) >= 400).astype(np.uint8)
    path = _record(tmp_path / "r.h5", [frame], order="priority", population=population,
                   names=("core", "halo"))
    with RecordingFile(path) as recording:
        order = recording.permutation
        assert np.array_equal(recording.population, population[order])
        assert np.array_equal(recording.masses, np.linspace(1.0, 2.0, n)[order])
        # a keyframe is the run's state as the run held it, whatever the file's order
        positions, velocities = recording.read_keyframe(0)
        assert positions.tobytes() == frame.tobytes()
        assert velocities.tobytes() == (-frame).tobytes()
    with h5py.File(path, "r") as file:  # and in the file itself, row for row with the frames
        assert np.array_equal(file["keyframe_positions"][0], frame[order])


def test_a_damaged_permutation_is_refused(tmp_path):
    path = _record(tmp_path / "r.h5", [_sorted_plummer(100)], order="priority")
    with h5py.File(path, "r+") as file:
        file["particle_permutation"][1] = file["particle_permutation"][0]
    with RecordingFile(path) as recording:  # frames play; the rows cannot be put back
        assert recording.read(0, count=10).shape == (10, 3)
        with pytest.raises(RecordingError, match="not a permutation"):
            recording.read_keyframe(0)


@pytest.mark.parametrize("value", ["random", "", np.array([1.0, 2.0]), np.nan, 5])
def test_a_file_naming_an_unknown_order_is_refused_as_damaged(tmp_path, value):
    path = _record(tmp_path / "r.h5", [_sorted_plummer(20)], order="natural")
    with h5py.File(path, "r+") as file:
        file.attrs["particle_order"] = value
    with pytest.raises(RecordingError, match="particle order .* is none of"):
        RecordingFile(path)


def test_a_priority_file_without_its_permutation_is_refused_as_damaged(tmp_path):
    path = _record(tmp_path / "r.h5", [_sorted_plummer(20)], order="priority")
    with h5py.File(path, "r+") as file:
        del file["particle_permutation"]
    with pytest.raises(RecordingError, match="without 'particle_permutation'"):
        RecordingFile(path)


def test_an_unknown_order_is_refused_before_a_file_is_made(tmp_path):
    with pytest.raises(InvalidInputError, match="order must be one of"):
        Recorder(tmp_path / "r.h5", masses=np.ones(4), order="random")
    assert not (tmp_path / "r.h5").exists()


def _frame_at(player, index, rows, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = player.latest()
        if frame is not None and frame.stats.index == index and frame.positions.shape[0] == rows:
            return frame
        time.sleep(0.005)
    raise AssertionError(f"frame {index} with {rows} particles never arrived")


def test_a_player_reads_k_particles_while_playing_and_the_whole_frame_when_paused(tmp_path):
    n, k = 2000, 150
    frames = [_sorted_plummer(n) * (1 + 0.01 * i) for i in range(40)]
    path = _record(tmp_path / "r.h5", frames, order="priority")
    with RecordingFile(path) as recording:
        whole = [recording.read(i) for i in range(len(frames))]
    with Player(path, speed=20, max_particles=k) as player:
        assert player.order == "priority" and player.max_particles == k
        _frame_at(player, 0, n)  # paused at the start: the whole frame
        player.play()
        deadline = time.monotonic() + 10
        while (frame := player.latest()).stats.index < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert frame.positions.shape == (k, 3)
        assert np.array_equal(frame.positions, whole[frame.stats.index][:k])
        player.pause()
        index = player.position
        paused = _frame_at(player, index, n)
        assert np.array_equal(paused.positions, whole[index])
        player.max_particles = None
        player.step(1)
        assert np.array_equal(_frame_at(player, index + 1, n).positions, whole[index + 1])


def test_a_file_written_before_particle_orders_still_reads_and_plays(tmp_path):
    """A version-3 file, as Orrery wrote it before orders existed: no order attribute, no
    permutation; it reads in the run's order, prefixes included, and plays."""
    frames = [_sorted_plummer(300) + i for i in range(4)]
    path = tmp_path / "old.h5"
    with h5py.File(path, "w") as file:
        file.attrs.update({"format": "orrery-recording", "format_version": 3,
                           "position_encoding": "float32", "compression": "none"})
        file.create_dataset("positions", data=np.stack(frames), maxshape=(None, 300, 3),
                            chunks=(1, 300, 3))
        file.create_dataset("time", data=np.arange(4) * 0.5)
        file.create_dataset("step", data=np.arange(4) * 10)
        file.create_dataset("masses", data=np.ones(300))
        file.create_dataset("population", data=np.zeros(300, np.uint8))
        file.create_dataset("population_names", data=["all"], dtype=h5py.string_dtype())
    with RecordingFile(path) as recording:
        assert recording.format_version == 3 and recording.order == "natural"
        assert recording.in_run_order(recording.masses) is recording.masses
        assert np.array_equal(recording.read(3, count=10), frames[3][:10])
    with Player(path, max_particles=50) as player:
        assert player.order == "natural"
        assert np.array_equal(_frame_at(player, 0, 300).positions, frames[0])
        player.seek(2)
        assert np.array_equal(_frame_at(player, 2, 300).positions, frames[2])


def test_a_version_3_file_is_natural_whatever_attribute_it_carries(tmp_path):
    """The order is a version-4 rule: an older file that happens to carry the attribute (added
    by another tool) is still read in the run's order."""
    path = _record(tmp_path / "r.h5", [_sorted_plummer(50)], order="natural")
    with h5py.File(path, "r+") as file:
        file.attrs["format_version"] = 3
        file.attrs["particle_order"] = "priority"
    with RecordingFile(path) as recording:
        assert recording.order == "natural" and recording.permutation is None


def test_max_particles_past_the_frame_reads_whole_frames_and_nonsense_is_refused(tmp_path):
    frames = [_sorted_plummer(200) for _ in range(3)]
    path = _record(tmp_path / "r.h5", frames, order="priority")
    with Player(path, max_particles=10_000) as player:
        player.play()
        assert _frame_at(player, 0, 200).positions.shape == (200, 3)
        for value in (0, -5, 2.5, True, "10"):
            with pytest.raises(InvalidInputError, match="max_particles"):
                player.max_particles = value
        assert player.max_particles == 10_000
    with pytest.raises(InvalidInputError, match="max_particles"):
        Player(path, max_particles=0)
