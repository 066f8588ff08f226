"""Snapshots from other codes: formats written by pynbody itself and by h5py in the documented
layouts load with the right masses, positions, velocities, families and units."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from ..extras import package

package("pynbody")

from orrery.engine import scenarios  # noqa: E402
from orrery.engine.contracts import StoredFrames  # noqa: E402
from orrery.engine.errors import OrreryError  # noqa: E402
from orrery.engine.recording import Player  # noqa: E402
from orrery.engine.snapshot_series import SnapshotSeries  # noqa: E402
from orrery.engine.snapshots import (  # noqa: E402
    SnapshotError, UnitSystem, describe, load_snapshot)

from .snapshot_files import (  # noqa: E402
    SWIFT_TIME_S, write_gadget2_binary, write_gadget4_hdf5, write_swift_hdf5, write_tipsy)

# G = 1 with kpc and 1e10 Msol: the velocity unit in km/s (GADGET's G = 43007.1 in these units).
VELOCITY_UNIT_KM_S = math.sqrt(43007.1)


def test_the_default_unit_system_is_gadgets_with_g_equal_one():
    units = UnitSystem.of("kpc", "1e10 Msol")
    assert units.velocity_km_s == pytest.approx(VELOCITY_UNIT_KM_S, rel=1e-4)
    # kpc / (207.4 km/s) = 4.715 Myr
    assert units.time_gyr == pytest.approx(4.715e-3, rel=1e-3)


def test_tipsy_loads_every_family_with_its_masses_positions_and_velocities(tmp_path):
    path = tmp_path / "run.tipsy"
    data = write_tipsy(path)
    snapshot = load_snapshot(str(path))
    particles = snapshot.particles
    assert particles.n == sum(len(d[0]) for d in data.values())
    assert set(particles.population_names) == {"gas", "dm", "star"}
    for family, (pos, vel, mass) in data.items():
        label = particles.population_names.index(family)
        chosen = particles.population == label
        np.testing.assert_allclose(particles.pos[chosen], pos, rtol=1e-6)
        np.testing.assert_allclose(particles.mass[chosen], mass, rtol=1e-6)
        # Tipsy velocities are in G = 1 units of kpc and 1e10 Msol already
        np.testing.assert_allclose(particles.vel[chosen], vel, rtol=1e-4)
    assert snapshot.attributes()["units"]["length"] == "kpc"


def test_a_family_can_be_chosen_and_a_missing_one_is_named(tmp_path):
    path = tmp_path / "run.tipsy"
    data = write_tipsy(path)
    stars = load_snapshot(str(path), family="star").particles
    assert stars.n == len(data["star"][0]) and stars.population_names == ("star",)
    with pytest.raises(SnapshotError, match="no 'bh' particles; it has"):
        load_snapshot(str(path), family="bh")


def test_gadget4_hdf5_converts_header_units_to_nbody_units(tmp_path):
    path = tmp_path / "snap_000.hdf5"
    data = write_gadget4_hdf5(path)
    snapshot = load_snapshot(str(path))
    particles = snapshot.particles
    assert particles.population_names == ("dm", "star")
    pos, vel, mass = data["dm"]
    dm = particles.population == 0
    np.testing.assert_allclose(particles.pos[dm], pos, rtol=1e-5)       # kpc -> kpc
    np.testing.assert_allclose(particles.mass[dm], mass, rtol=1e-5)     # 1e10 Msol
    np.testing.assert_allclose(particles.vel[dm], vel / VELOCITY_UNIT_KM_S, rtol=1e-3)
    assert particles.dtype == np.float32  # the file's precision is kept


def test_swift_hdf5_converts_each_arrays_own_units_to_nbody_units(tmp_path):
    path = tmp_path / "swift_0000.hdf5"
    data = write_swift_hdf5(path, time=0.01)
    snapshot = load_snapshot(str(path))
    particles = snapshot.particles
    assert snapshot.format == "SwiftSnap"
    assert particles.population_names == ("gas", "dm", "star")
    for family, (pos, vel, mass) in data.items():
        chosen = particles.population == particles.population_names.index(family)
        assert chosen.sum() == len(pos)
        np.testing.assert_allclose(particles.pos[chosen], pos * 1000, rtol=1e-5)    # Mpc -> kpc
        np.testing.assert_allclose(particles.mass[chosen], mass, rtol=1e-5)         # 1e10 Msol
        np.testing.assert_allclose(particles.vel[chosen], vel / VELOCITY_UNIT_KM_S, rtol=1e-3)
    gyr_s = 3.15576e16
    expected_time = 0.01 * SWIFT_TIME_S / gyr_s / snapshot.units.time_gyr
    assert snapshot.time == pytest.approx(expected_time, rel=1e-3)
    stars = load_snapshot(str(path), family="star").particles
    assert stars.n == len(data["star"][0])


def test_gadget2_binary_written_by_pynbody_loads_in_its_configured_units(tmp_path):
    import pynbody

    path = tmp_path / "snapshot_000"
    data = write_gadget2_binary(path)
    snapshot = load_snapshot(str(path))
    particles = snapshot.particles
    assert snapshot.format == "GadgetSnap"
    assert particles.population_names == ("gas", "dm", "star")
    raw = pynbody.load(str(path))  # the file has no units: pynbody's GADGET defaults apply
    length = float(raw["pos"].units.ratio("kpc", **raw.conversion_context()))
    mass_unit = float(raw["mass"].units.ratio("1e10 Msol", **raw.conversion_context()))
    speed = float(raw["vel"].units.ratio("km s^-1", **raw.conversion_context()))
    for family, (pos, vel, mass) in data.items():
        chosen = particles.population == particles.population_names.index(family)
        assert chosen.sum() == len(pos)
        np.testing.assert_allclose(particles.pos[chosen], pos * length, rtol=1e-5)
        np.testing.assert_allclose(particles.mass[chosen], mass * mass_unit, rtol=1e-5)
        np.testing.assert_allclose(particles.vel[chosen], vel * speed / VELOCITY_UNIT_KM_S,
                                   rtol=1e-3)


def test_other_units_scale_positions_and_masses(tmp_path):
    path = tmp_path / "snap_000.hdf5"
    data = write_gadget4_hdf5(path)
    snapshot = load_snapshot(str(path), length_unit="Mpc", mass_unit="1e12 Msol")
    np.testing.assert_allclose(snapshot.particles.pos[:5], data["dm"][0][:5] / 1000, rtol=1e-5)
    np.testing.assert_allclose(snapshot.particles.mass[:5], data["dm"][2][:5] / 100, rtol=1e-5)


def test_bad_files_get_clear_errors(tmp_path):
    junk = tmp_path / "junk.dat"
    junk.write_bytes(b"not a snapshot at all" * 10)
    with pytest.raises(SnapshotError, match="not a snapshot pynbody can read"):
        load_snapshot(str(junk))
    with pytest.raises(SnapshotError, match="no such file"):
        load_snapshot(str(tmp_path / "missing.hdf5"))
    assert issubclass(SnapshotError, OrreryError)


def test_describe_names_the_format_and_families_without_loading_arrays(tmp_path):
    path = tmp_path / "snap_000.hdf5"
    write_gadget4_hdf5(path)
    text = describe(str(path))
    assert "GadgetHDFSnap" in text and "dm (1000)" in text and "star (500)" in text


def test_a_snapshot_scenario_estimates_softening_and_dt_and_can_subsample(tmp_path):
    path = tmp_path / "run.tipsy"
    write_tipsy(path)
    full = scenarios.load(scenarios.SnapshotScenario(str(path)))
    assert full.softening > 0 and full.dt > 0
    assert full.metadata["source_format"] == "TipsySnap"
    subset = scenarios.load(scenarios.SnapshotScenario(str(path)), n=100, seed=3)
    assert subset.particles.n == 100
    assert subset.particles.mass.sum() == pytest.approx(full.particles.mass.sum(), rel=1e-5)


def _series_files(tmp_path, count=3):
    """Snapshots one N-body time unit apart of bodies moving on straight lines."""
    import h5py

    units = UnitSystem.of("kpc", "1e10 Msol")
    first = tmp_path / "snap_000.hdf5"
    data = write_gadget4_hdf5(first, time=0.0)
    paths = [first]
    for i in range(1, count):
        path = tmp_path / f"snap_{i:03d}.hdf5"
        shutil.copy(first, path)
        with h5py.File(path, "r+") as h5:
            h5["Header"].attrs["Time_GYR"] = i * units.time_gyr
            for group in ("PartType1", "PartType4"):
                velocity = h5[group]["Velocities"][...] / units.velocity_km_s  # N-body units
                h5[group]["Coordinates"][...] += velocity * i
        paths.append(path)
    return paths, data


def test_a_series_is_stored_frames_as_a_recording_is(tmp_path):
    _series_files(tmp_path)
    series = SnapshotSeries(str(tmp_path / "snap_*.hdf5"))
    assert isinstance(series, StoredFrames)
    assert series.refresh() == 0 and not series.being_written


def test_a_series_plays_as_a_timeline_and_interpolates_between_snapshots(tmp_path):
    paths, _ = _series_files(tmp_path)
    series = SnapshotSeries(str(tmp_path / "snap_*.hdf5"), frames_between=4)
    assert series.frame_count == 9
    times = series.times
    np.testing.assert_allclose(times[[0, 4, 8]], [0.0, 1.0, 2.0], atol=1e-9)
    exact = [load_snapshot(str(p)).particles.pos for p in paths]
    np.testing.assert_allclose(series.read(4), exact[1], rtol=1e-5, atol=1e-5)
    # straight-line motion: Hermite interpolation with the snapshots' velocities is exact
    halfway = series.read(2)
    np.testing.assert_allclose(halfway, 0.5 * (exact[0] + exact[1]), rtol=1e-4, atol=1e-4)
    with Player(series) as player:
        assert player.frame_count == 9
        player.seek(6)
        for _ in range(200):
            frame = player.latest()
            if frame is not None and frame.stats.index == 6:
                break
            import time

            time.sleep(0.01)
        np.testing.assert_allclose(frame.positions, series.read(6))


def test_a_series_needs_the_same_particles_in_every_snapshot(tmp_path):
    write_gadget4_hdf5(tmp_path / "snap_000.hdf5")
    write_gadget4_hdf5(tmp_path / "snap_001.hdf5", counts={"dm": 10})
    series = SnapshotSeries(str(tmp_path / "snap_*.hdf5"))
    with pytest.raises(SnapshotError, match="needs the same particles"):
        series.read(series.frame_count - 1)
