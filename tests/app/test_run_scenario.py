"""``orrery run --scenario``: a preset's settings apply unless a flag overrides them."""

import numpy as np
import pytest

from orrery.app.cli import main
from orrery.engine.solvers import solver_specs


def test_scenario_runs_with_the_presets_settings(capsys):
    assert main(["run", "--scenario", "galaxy-collision", "--n", "600", "--steps", "2",
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    # Preset: dt = 0.05, softening = 0.05, solver auto (cpu-direct until auto is registered).
    assert "600 particles, 2 steps" in captured.out and "t = 0.1," in captured.out
    assert "softening=0.05" in captured.out
    if "auto" not in solver_specs():
        assert "using cpu-direct" in captured.err and "cpu-direct" in captured.out


def test_flags_override_the_preset(capsys):
    assert main(["run", "--scenario", "disk-galaxy", "--n", "300", "--steps", "2", "--dt", "0.01",
                 "--softening", "0.02", "--solver", "reference", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "300 particles" in out and "t = 0.02," in out
    assert "reference" in out and "softening=0.02" in out


def test_ic_and_scenario_are_alternatives(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--ic", "plummer", "--scenario", "disk-galaxy"])
    assert exit_info.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_unknown_scenario_is_an_error(capsys):
    assert main(["run", "--scenario", "andromeda-in-a-teacup", "--steps", "1", "--quiet"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_a_flock_preset_runs_headless_and_records(capsys, tmp_path):
    from orrery.engine.recording import RecordingFile

    path = tmp_path / "school.h5"
    assert main(["run", "--scenario", "school", "--n", "300", "--steps", "4", "--quiet",
                 "--record", str(path), "--every", "2"]) == 0
    out = capsys.readouterr().out
    assert "300 boids, 4 steps" in out and "flock, coherent-grid" in out and "t = 0.8," in out
    with RecordingFile(path) as recording:
        assert recording.attributes["model"] == "flock" and recording.frame_count == 3
        first, last = recording.read(0), recording.read(2)
        assert first.shape == (300, 3) and not np.array_equal(first, last)


def test_the_satellite_scenario_runs(capsys):
    assert main(["run", "--scenario", "satellite", "--n", "240", "--steps", "3",
                 "--solver", "cpu-direct", "--quiet"]) == 0
    out = capsys.readouterr().out
    # Preset: dt = 0.004, softening = 0.02.
    assert "240 particles, 3 steps" in out and "t = 0.012," in out
    assert "softening=0.02" in out
