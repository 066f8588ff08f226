import pytest

from orrery.app.cli import main


def test_run_end_to_end(capsys):
    assert main(["run", "--ic", "plummer", "--n", "256", "--steps", "20", "--dt", "0.001",
                 "--solver", "cpu-direct", "--softening", "0.01", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "256 particles, 20 steps" in out and "steps/s" in out and "energy error" in out


def test_run_rejects_option_values_the_solver_lacks(capsys):
    assert main(["run", "--n", "16", "--steps", "1", "--solver", "reference", "--precision", "f32",
                 "--quiet"]) == 2
    assert "precision must be one of" in capsys.readouterr().err


def test_run_rejects_negative_softening(capsys):
    assert main(["run", "--n", "16", "--steps", "1", "--softening", "-1", "--quiet"]) == 2
    assert "softening" in capsys.readouterr().err


def test_devices_lists_solvers(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "cpu-direct" in out and "reference" in out


@pytest.mark.parametrize("command", ["run", "devices"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage" in capsys.readouterr().out
