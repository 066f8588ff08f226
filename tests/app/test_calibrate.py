"""``orrery calibrate`` end to end with tiny sizes and budgets."""

import json

import pytest

from orrery.app.cli import main


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_calibrate_measures_prints_and_stores(cache_dir, capsys):
    assert main(["calibrate", "--n-min", "32", "--n-max", "128", "--trials", "2", "--warmup", "0",
                 "--budget", "5", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "cpu-direct ms" in out and "Fastest here (f32)" in out and "Stored in" in out
    entry = json.loads((cache_dir / "calibration.json").read_text())["entries"][0]
    assert [n for n, _ in entry["curves"]["cpu-direct"]] == [32, 64, 128]
    assert all(seconds > 0 for _, seconds in entry["curves"]["cpu-direct"])
    assert "reference" not in entry["curves"] and "auto" not in entry["curves"]
    # Which solver wins at these sizes is the machine's business; the schedule only names
    # solvers that were measured.
    assert {segment[0] for segment in entry["crossovers"]} <= set(entry["curves"])


def test_an_evaluation_over_the_limit_stops_growing_n(cache_dir, capsys):
    assert main(["calibrate", "--n-min", "32", "--n-max", "4096", "--trials", "1",
                 "--warmup", "0", "--max-eval", "0", "--quiet"]) == 0
    entry = json.loads((cache_dir / "calibration.json").read_text())["entries"][0]
    assert [n for n, _ in entry["curves"]["cpu-direct"]] == [32]


def test_dry_run_stores_nothing(cache_dir, capsys):
    assert main(["calibrate", "--n-min", "32", "--n-max", "32", "--trials", "1", "--quiet",
                 "--dry-run"]) == 0
    assert "Not stored" in capsys.readouterr().out
    assert not (cache_dir / "calibration.json").exists()


def test_unknown_solver_names_are_an_error(cache_dir, capsys):
    assert main(["calibrate", "--solvers", "no-such-solver", "--quiet"]) == 2
    assert "cannot time" in capsys.readouterr().err


def test_calibrate_has_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["calibrate", "--help"])
    assert exit_info.value.code == 0
    assert "--budget" in capsys.readouterr().out
