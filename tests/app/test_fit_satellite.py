"""``orrery fit-satellite``: from a perturbed guess, L-BFGS on whole-run gradients brings the
satellite's start back to the truth, and ``--record`` leaves the three runs as recordings the
viewer replays."""

import re

import numpy as np
import pytest

from orrery.app.cli import fit_satellite, main
from orrery.engine.recording import RecordingFile
from orrery.engine.satellite_fit import ORBIT

SMALL = ["fit-satellite", "--n", "24", "--steps", "40", "--dt", "0.02"]


def test_the_fit_recovers_the_start_and_records_the_three_runs(tmp_path, capsys):
    folder = tmp_path / "runs"
    assert main([*SMALL, "--perturbation", "0.1", "--seed", "2", "--record", str(folder),
                 "--every", "8"]) == 0
    out = capsys.readouterr().out
    position_misses = [float(x) for x in re.findall(r"off by (\S+) in position", out)]
    # The first guess's miss, each iteration's, then the recovered start's.
    assert position_misses[0] > 0.05 and position_misses[-1] < 1e-8
    assert len(re.findall(r"iteration +\d+: loss", out)) >= 3
    assert f"orrery play {folder / 'fitted.h5'}" in out
    runs = {}
    for name in ("target", "first-guess", "fitted"):
        with RecordingFile(folder / f"{name}.h5") as recording:
            assert recording.frame_count == 6 and recording.n == 24  # steps 0, 8, ..., 40
            assert recording.population_names == ("host", "satellite")
            runs[name] = (recording.attributes["satellite_fit"]["offset"],
                          recording.read(0), recording.read(5))
    np.testing.assert_array_equal(runs["target"][0], ORBIT)
    np.testing.assert_allclose(runs["fitted"][0], ORBIT, rtol=0, atol=1e-8)
    assert np.abs(np.subtract(runs["first-guess"][0], ORBIT)).max() > 0.05
    # The fitted run ends where the target's does (float32 frames); the first guess's did not.
    assert np.abs(runs["fitted"][2] - runs["target"][2]).max() < 1e-6
    assert np.abs(runs["first-guess"][2] - runs["target"][2]).max() > 1e-2
    assert np.abs(runs["fitted"][1] - runs["target"][1]).max() < 1e-6


def test_a_short_fit_shows_no_progress_bars(capsys):
    assert main([*SMALL, "--max-iterations", "2"]) == 0
    assert capsys.readouterr().err == ""


def test_a_pass_that_goes_on_past_the_delay_shows_a_progress_bar(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fit_satellite, "PROGRESS_DELAY_S", 0.0)  # every pass is "long"
    assert main([*SMALL, "--max-iterations", "1", "--record", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    # tqdm's bars, each named by its pass, counting that pass's steps.
    for label in ("target run", "run 1 forward", "run 1 backward", "recording the fitted run"):
        assert re.search(rf"{label}: +\d+%\|.*\| *\d+/40", err), (label, err)
    assert "Traceback" not in err


def test_quiet_shows_no_progress_bars_however_long_a_pass(capsys, monkeypatch):
    monkeypatch.setattr(fit_satellite, "PROGRESS_DELAY_S", 0.0)
    assert main([*SMALL, "--max-iterations", "1", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_every_without_record_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*SMALL, "--every", "8"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == ("orrery fit-satellite: error: --every spaces the frames of "
                                    "--record's recordings: give --record DIR too, or leave "
                                    "--every out")
    assert list(tmp_path.iterdir()) == []


def test_recordings_already_in_the_folder_are_refused_before_anything_runs(tmp_path, capsys):
    (tmp_path / "fitted.h5").write_bytes(b"")
    assert main([*SMALL, "--record", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (f"orrery fit-satellite: error: --record: fitted.h5 already "
                                    f"in {tmp_path}; choose another folder or remove them")


@pytest.mark.parametrize("argv, message", [
    (["--solver", "gpu-tree"], "argument --solver: solver must be one of ['cpu-direct', "),
    (["--solver", "auto"], "argument --solver: solver must be one of"),
    (["--n", "1"], "argument --n: n must be >= 2, got 1"),
    (["--n", "1e308"], "argument --n: n must be an integer, got '1e308'"),
    (["--steps", "0"], "argument --steps: steps must be >= 1, got 0"),
    (["--dt", "nan"], "argument --dt: dt must be a finite number"),
    (["--perturbation", "-1"], "argument --perturbation: perturbation must be >= 0.0, got -1.0"),
])
def test_bad_values_are_one_line_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["fit-satellite", *argv])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and message in err.strip().splitlines()[-1]


def test_a_system_too_large_for_memory_is_one_line(capsys):
    assert main(["fit-satellite", "--n", "1000000000000"]) == 2
    line, = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("orrery fit-satellite: error: ") and "particles need" in line
