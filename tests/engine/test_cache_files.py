"""The calibration cache and the accuracy table are read through the one layer that refuses
what is not a small regular file, and a file nested without end is ignored with a warning
instead of a RecursionError (issue 42)."""

import os

import pytest

from orrery.engine.tuning import accuracy_table, calibration
from orrery.engine.tuning.calibration import CalibrationCacheWarning, load_calibration

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_a_calibration_cache_nested_without_end_is_ignored_with_a_warning(cache_dir):
    path = calibration.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP)
    with pytest.warns(CalibrationCacheWarning, match="nests lists or tables too deeply"):
        assert load_calibration("f32") is None


def test_a_calibration_cache_that_is_a_fifo_is_ignored_without_blocking(cache_dir):
    path = calibration.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    with pytest.warns(CalibrationCacheWarning, match="is a FIFO"):
        assert load_calibration("f32") is None


def test_an_accuracy_table_nested_without_end_is_ignored_with_a_warning(cache_dir):
    path = accuracy_table.cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP)
    with pytest.warns(UserWarning, match="nests lists or tables too deeply"):
        table = accuracy_table.load_table()
    assert table.rows  # the shipped defaults still hold


def test_an_accuracy_table_nested_without_end_is_replaced_when_saving(cache_dir):
    path = accuracy_table.cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP)
    accuracy_table.save_table({}, {})
    assert "[[[[" not in path.read_text()
