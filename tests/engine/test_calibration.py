"""Crossovers from synthetic timing curves (no timing here) and the calibration cache."""

import json
import math

import numpy as np
import pytest

from orrery.engine.errors import InvalidInputError
from orrery.engine.tuning import calibration
from orrery.engine.tuning.calibration import (CACHE_FORMAT, Calibration, CalibrationCacheWarning,
                                       cache_path, load_calibration, machine_key,
                                       save_calibration)
from orrery.engine.tuning.crossovers import Schedule, Segment, find_schedule

SIZES = [2 ** k for k in range(6, 19)]


def direct(n):
    return 1e-9 * n * n


def tree(n):
    # N^1.24, scaled to cross direct summation at exactly 4000 particles
    return 1e-9 * 4000 ** 0.76 * n ** 1.24


def curve(model, sizes=SIZES, noise=None):
    return [(n, model(n) * (1 if noise is None else noise[i])) for i, n in enumerate(sizes)]


def test_power_laws_cross_where_they_are_equal():
    schedule = find_schedule({"cpu-direct": curve(direct), "cpu-tree": curve(tree)})
    assert schedule.solvers == ("cpu-direct", "cpu-tree")
    assert schedule.crossovers == (4000,)
    assert schedule.choose(3999) == "cpu-direct" and schedule.choose(4000) == "cpu-tree"
    assert schedule.choose(1) == "cpu-direct" and schedule.choose(10 ** 9) == "cpu-tree"


def test_noise_within_the_tolerance_does_not_flip_the_choice():
    # Two equal costs up to 2048 with +-4 % alternating noise, then the second clearly wins.
    wobble = [0.96 if i % 2 else 1.04 for i in range(len(SIZES))]
    steady = curve(direct)
    challenger = [(n, direct(n) * (w if n <= 2048 else 0.5)) for n, w in zip(SIZES, wobble)]
    schedule = find_schedule({"a": steady, "b": challenger})
    assert schedule.solvers == ("a", "b")
    # the boundary sits where the curves were last equal: between 1024 (b 4 % slower) and 2048
    assert len(schedule.crossovers) == 1
    assert 1024 < schedule.crossovers[0] < 2048


def test_random_noise_gives_one_crossover_near_the_true_one():
    rng = np.random.default_rng(3)
    noisy = {"cpu-direct": curve(direct, noise=rng.lognormal(0, 0.08, len(SIZES))),
             "cpu-tree": curve(tree, noise=rng.lognormal(0, 0.08, len(SIZES)))}
    schedule = find_schedule(noisy)
    assert schedule.solvers == ("cpu-direct", "cpu-tree")
    assert 4000 / 1.5 < schedule.crossovers[0] < 4000 * 1.5


def test_a_dip_in_one_measurement_does_not_invent_a_range():
    # The tree's 1024 point measured 30 % fast (a quiet moment): still slower than direct there
    # once the curve is made monotone, so no extra tree range below the real crossover.
    dip = [0.7 if n == 1024 else 1.0 for n in SIZES]
    tree_points = curve(tree, noise=dip)
    schedule = find_schedule({"cpu-direct": curve(direct), "cpu-tree": tree_points})
    assert schedule.solvers == ("cpu-direct", "cpu-tree")
    assert len(schedule.crossovers) == 1
    assert 2048 <= schedule.crossovers[0] <= 4096


def test_curves_that_never_cross_give_one_range():
    schedule = find_schedule({"cpu-direct": curve(direct),
                              "slow": curve(lambda n: 3 * direct(n))})
    assert schedule.segments == (Segment("cpu-direct", 0, None),)
    assert schedule.describe() == "cpu-direct is fastest at every size"


def test_curves_that_cross_twice_give_the_first_solver_two_ranges():
    # a: N^1.2; b: launch cost plus N^2: b wins only in the middle.
    a = curve(lambda n: 1e-6 * n ** 1.2)
    b = curve(lambda n: 2e-3 + 1e-10 * n * n)
    schedule = find_schedule({"a": a, "b": b})
    assert [s.solver for s in schedule.segments] == ["a", "b", "a"]
    low, high = schedule.crossovers
    # exact crossings of the two models are near 575 and 99,700
    assert 400 < low < 800 and 70_000 < high < 140_000
    assert "b is fastest from" in schedule.describe()


def test_three_solvers_in_turn():
    cpu = curve(direct)
    gpu_direct = curve(lambda n: 1e-3 + direct(n) / 50)
    gpu_tree = curve(lambda n: 2e-3 + 5e-8 * n ** 1.24)
    schedule = find_schedule({"cpu-direct": cpu, "gpu-direct": gpu_direct, "gpu-tree": gpu_tree})
    assert schedule.solvers == ("cpu-direct", "gpu-direct", "gpu-tree")
    assert schedule.crossovers[0] < schedule.crossovers[1]


def test_a_curve_stopped_early_is_extended_at_its_own_slope():
    # direct summation ran out of budget at 2048; its N^2 slope carries it past the crossing.
    short = curve(direct, sizes=[n for n in SIZES if n <= 2048])
    schedule = find_schedule({"cpu-direct": short, "cpu-tree": curve(tree)})
    assert schedule.crossovers == (4000,)


def test_unusable_points_are_dropped_and_an_empty_input_is_an_error():
    messy = curve(direct) + [(100, float("nan")), (200, 0.0), (300, -1.0), (0, 1.0)]
    assert find_schedule({"cpu-direct": messy, "cpu-tree": curve(tree)}).crossovers == (4000,)
    with pytest.raises(InvalidInputError, match="no usable timing"):
        find_schedule({"cpu-direct": [(100, float("nan"))]})
    with pytest.raises(InvalidInputError, match="tolerance"):
        find_schedule({"cpu-direct": curve(direct)}, tolerance=1.5)


def test_schedule_from_thresholds_and_its_descriptions():
    schedule = Schedule.from_thresholds([("cpu-tree", 5900), ("cpu-direct", 0)])
    assert schedule.describe_segment(schedule.segment_for(10_000)) == \
        "cpu-tree is fastest above 5,900 particles"
    assert schedule.describe_segment(schedule.segment_for(10)) == \
        "cpu-direct is fastest below 5,900 particles"
    with pytest.raises(InvalidInputError):
        Schedule((Segment("a", 0, 10), Segment("b", 20, None)))


# --- the cache ---------------------------------------------------------------------------


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path))
    return tmp_path


def sample(precision="f32", **overrides):
    return Calibration(precision=precision,
                       curves={"cpu-direct": curve(direct), "cpu-tree": curve(tree)}, **overrides)


def test_cache_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("ORRERY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_path() == tmp_path / "orrery" / "calibration.json"
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path / "override"))
    assert cache_path() == tmp_path / "override" / "calibration.json"


def test_a_saved_calibration_loads_back_with_its_crossovers(cache_dir):
    path = save_calibration(sample())
    assert path == cache_dir / "calibration.json"
    loaded = load_calibration("f32")
    assert loaded.schedule().crossovers == (4000,)
    assert loaded.machine == machine_key()
    assert json.loads(path.read_text())["entries"][0]["crossovers"][1] == ["cpu-tree", 4000, None]
    assert load_calibration("f64") is None


def test_missing_cache_is_quietly_absent(cache_dir):
    assert load_calibration("f32") is None


def test_corrupt_cache_is_ignored_with_a_warning(cache_dir):
    (cache_dir / "calibration.json").write_text("{ not json")
    with pytest.warns(CalibrationCacheWarning, match="cannot be read"):
        assert load_calibration("f32") is None


def test_older_format_is_ignored_with_a_warning(cache_dir):
    (cache_dir / "calibration.json").write_text(
        json.dumps({"format": CACHE_FORMAT - 1, "entries": []}))
    with pytest.warns(CalibrationCacheWarning, match="format"):
        assert load_calibration("f32") is None


def test_another_machines_calibration_is_ignored_with_a_warning(cache_dir):
    save_calibration(sample(machine={"cpu": "some other CPU", "threads": 64}))
    with pytest.warns(CalibrationCacheWarning, match="another machine or device"):
        assert load_calibration("f32") is None


def test_another_devices_calibration_is_ignored_with_a_warning(cache_dir):
    save_calibration(sample(device={"gpus": ["cuda: a GPU this machine lacks"]}))
    with pytest.warns(CalibrationCacheWarning, match="another machine or device"):
        assert load_calibration("f32") is None


def test_saving_replaces_this_machines_entry_and_keeps_the_others(cache_dir):
    save_calibration(sample(machine={"cpu": "elsewhere", "threads": 8}))
    save_calibration(sample())
    faster_tree = Calibration(precision="f32", curves={
        "cpu-direct": curve(direct), "cpu-tree": curve(lambda n: tree(n) / 2)})
    save_calibration(faster_tree)
    entries = json.loads((cache_dir / "calibration.json").read_text())["entries"]
    assert len(entries) == 2
    crossover = load_calibration("f32").schedule().crossovers[0]
    assert crossover == pytest.approx(4000 / 2 ** (1 / 0.76), rel=0.01)
    assert math.isclose(entries[0]["machine"]["threads"], 8)


def test_the_machine_key_records_the_cpus_simd_level_not_the_compiled_ones(monkeypatch):
    from orrery import _native

    info = {**_native.build_info(), "simd_compiled": ["scalar", "avx2", "avx512"],
            "simd_cpu": "avx2", "simd_env": "scalar"}
    monkeypatch.setattr(_native, "build_info", lambda: info)
    calibration.machine_key.cache_clear()
    try:
        key = machine_key()
        assert key["simd"] == "avx2" and key["threads"] == _native.hardware_threads()
    finally:
        calibration.machine_key.cache_clear()


@pytest.mark.parametrize("point", ["[1e999, 0.001]", "[64, 1e999]", "[64, 0]", "[64, -0.5]",
                                   "[0, 0.001]", "[2.5, 0.001]", "[64, NaN]", "[true, 0.001]",
                                   "[64]", "\"64\""])
def test_an_entry_with_an_unusable_timing_point_is_ignored_with_a_warning(cache_dir, point):
    path = save_calibration(sample())
    payload = json.loads(path.read_text())
    payload["entries"][0]["curves"]["cpu-direct"][0] = "@point@"
    path.write_text(json.dumps(payload).replace('"@point@"', point))
    with pytest.warns(CalibrationCacheWarning, match="damaged entry"):
        assert load_calibration("f32") is None


def test_a_cache_that_cannot_be_written_is_a_calibration_cache_error(tmp_path):
    from orrery.engine.tuning.calibration import check_cache_writable
    from orrery.engine.errors import CalibrationCacheError, OrreryError

    blocker = tmp_path / "file"
    blocker.write_text("")
    for path in (blocker / "calibration.json", tmp_path):
        with pytest.raises(CalibrationCacheError, match="cannot write the calibration cache"):
            check_cache_writable(path=path)
        with pytest.raises(OrreryError):
            save_calibration(sample(), path=path)
    assert check_cache_writable(path=tmp_path / "new" / "calibration.json").parent.is_dir()
