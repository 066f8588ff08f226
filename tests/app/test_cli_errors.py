"""Hostile command lines (issue 18): every one ends with one line on stderr and exit code 2
(argparse's usage error for a bad flag value, ``PROG: error: ...`` for what the engine refuses),
never a traceback."""

import json
import os
import time

import pytest

from orrery.app.cli import main
from orrery.app.viewer import main as viewer_main

QUICK_RUN = ["run", "--n", "16", "--steps", "2", "--solver", "cpu-direct", "--quiet"]


def _last_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def _usage_error(call, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        call(argv)
    assert exit_info.value.code == 2
    return _last_line(capsys)


@pytest.mark.parametrize("argv, message", [
    (["run", "--seed", "-1"], "argument --seed: must be >= 0, got -1"),
    (["run", "--steps", "-5"], "argument --steps: must be >= 0, got -5"),
    (["run", "--n", "0"], "argument --n: must be >= 1, got 0"),
    (["run", "--n", "1e3"], "argument --n: must be an integer, got '1e3'"),
    (["calibrate", "--trials", "0"], "argument --trials: must be >= 1, got 0"),
    (["calibrate", "--factor", "nan"], "argument --factor: must be a finite number, got 'nan'"),
    (["calibrate", "--factor", "1"], "argument --factor: must be > 1, got 1"),
    (["calibrate", "--budget", "inf"], "argument --budget: must be a finite number"),
    (["bench", "render", "--size", "0x0"], "argument --size: each side must be 1 to 8192 pixels"),
])
def test_bad_flag_values_are_usage_errors(argv, message, capsys):
    assert message in _usage_error(main, argv, capsys)


@pytest.mark.parametrize("extra, message", [
    (["--n", "1000000000000"], "1,000,000,000,000 particles need at least 51.8 TiB"),
    (["--threads", "4294967296"], "threads must be <= 1024, got 4294967296"),
    (["--threads", "1000000"], "threads must be <= 1024"),
    (["--softening", "nan"], "softening must be a finite number, got nan"),
    (["--softening", "1e200"], "softening must be <= 1e+06"),
    (["--dt", "inf"], "time step dt must be a positive finite number, got inf"),
    (["--solver", "cpu-tree", "--theta", "nan"], "theta must be a finite number, got nan"),
])
def test_values_the_engine_refuses_are_one_line_errors(extra, message, capsys):
    assert main([*QUICK_RUN, *extra]) == 2
    line = _last_line(capsys)
    assert line.startswith("orrery run: error: ") and message in line


def test_one_particle_runs_and_reports_zero_energy_error(capsys):
    assert main(["run", "--n", "1", "--steps", "3", "--quiet"]) == 0
    assert "1 particles, 3 steps" in capsys.readouterr().out


def test_zero_steps_report_a_rate_not_a_division_by_zero(capsys):
    assert main([*QUICK_RUN[:3], "--steps", "0", "--quiet"]) == 0
    assert "0 steps" in capsys.readouterr().out


def test_an_orrery_simd_that_is_not_text_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(os.environb, b"ORRERY_SIMD", b"\xff")
    for argv in (["devices"], QUICK_RUN):
        assert main(argv) == 2
        assert "ORRERY_SIMD must be scalar, avx2, avx512, neon or sve" in _last_line(capsys)


def test_a_bad_orrery_simd_stops_only_the_commands_that_use_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(os.environb, b"ORRERY_SIMD", b"\xff")
    assert main(["info", str(tmp_path / "missing.h5")]) == 2
    assert "no such file" in _last_line(capsys)
    assert main(["--version"]) == 2
    assert _last_line(capsys).startswith("orrery: error: ORRERY_SIMD must be")


def test_running_out_of_memory_is_one_line(monkeypatch, capsys):
    from orrery.engine import ics

    def exhausted(*args, **kwargs):
        raise MemoryError("Unable to allocate 7.28 TiB for an array")

    monkeypatch.setattr(ics, "plummer", exhausted)
    monkeypatch.setitem(ics.GENERATORS, "plummer", exhausted)
    assert main(QUICK_RUN) == 2
    assert _last_line(capsys) == "orrery run: error: out of memory (Unable to allocate 7.28 TiB for an array)"


def test_unexpected_errors_keep_their_traceback(monkeypatch):
    from orrery.app.cli import run

    monkeypatch.setattr(run, "_setup", lambda args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        main(QUICK_RUN)


@pytest.mark.parametrize("bad", ["under-a-file", "a-folder"])
def test_calibrate_with_an_unwritable_cache_fails_before_measuring(tmp_path, monkeypatch, capsys, bad):
    blocker = tmp_path / "file"
    blocker.write_text("")
    if bad == "under-a-file":
        monkeypatch.setenv("ORRERY_CACHE_DIR", str(blocker / "cache"))
    else:
        monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path))
        (tmp_path / "calibration.json").mkdir()
    start = time.perf_counter()
    assert main(["calibrate", "--budget", "60", "--quiet"]) == 2
    assert time.perf_counter() - start < 5
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "cpu-direct ms" not in captured.out
    assert "cannot write the calibration cache" in captured.err.strip().splitlines()[-1]


def test_calibrate_dry_run_needs_no_writable_cache(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(blocker / "cache"))
    assert main(["calibrate", "--n-min", "32", "--n-max", "32", "--trials", "1", "--warmup", "0",
                 "--solvers", "cpu-direct", "--dry-run", "--quiet"]) == 0
    assert "Not stored" in capsys.readouterr().out


def test_run_with_a_damaged_calibration_cache_warns_and_uses_defaults(tmp_path, monkeypatch, capsys):
    from orrery.engine.tuning.calibration import CACHE_FORMAT, device_key, machine_key

    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path))
    entry = {"precision": "f32", "created": "2026-01-01T00:00:00+00:00", "machine": machine_key(),
             "device": device_key(), "curves": {"cpu-direct": [[64, 0.0], [128, -1.0]]}}
    (tmp_path / "calibration.json").write_text(json.dumps({"format": CACHE_FORMAT,
                                                           "entries": [entry]}))
    with pytest.warns(UserWarning, match="damaged entry"):
        assert main(["run", "--n", "16", "--steps", "2", "--quiet"]) == 0
    assert "default thresholds" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--size", "0x0"], "argument --size: each side must be 1 to 8192 pixels, got '0x0'"),
    (["--size", "100000x100000"], "argument --size: each side must be 1 to 8192 pixels"),
    (["--size", "wide"], "argument --size: must look like 1280x720"),
    (["--exposure", "-1"], "argument --exposure: must be > 0, got -1"),
    (["--exposure", "nan"], "argument --exposure: must be a finite number"),
    (["--max-fps", "-1"], "argument --max-fps: must be >= 0"),
    (["--frames", "0"], "argument --frames: must be >= 1"),
    (["--seed", "-1"], "argument --seed: must be >= 0"),
])
def test_viewer_flag_values_are_usage_errors(argv, message, capsys):
    assert message in _usage_error(viewer_main, argv, capsys)


@pytest.mark.parametrize("flag", ["--stats", "--screenshot"])
def test_viewer_output_files_must_be_files_in_a_folder_that_exists(flag, tmp_path, capsys):
    assert "must name a file, not a folder" in _usage_error(
        viewer_main, [flag, str(tmp_path), "--frames", "1"], capsys)
    assert "does not exist" in _usage_error(
        viewer_main, [flag, str(tmp_path / "missing" / "out"), "--frames", "1"], capsys)


def test_viewer_turns_engine_errors_into_one_line(monkeypatch, capsys):
    monkeypatch.setenv("DISPLAY", ":0")  # never opened: the run fails to build first
    assert viewer_main(["--scenario", "plummer", "--n", "1000000000000"]) == 2
    line = _last_line(capsys)
    assert line.startswith("orrery-viewer: error: ") and "51.8 TiB" in line



def test_a_closed_pipe_ends_a_command_quietly():
    import subprocess
    import sys

    # a command whose output (1 MB) outlives the reader (`head -c 1`): a broken pipe for sure
    program = ("import sys; from orrery.app import cli; from orrery.app.cli import info; "
               "info.run = lambda args: print('x' * 1_000_000) or 0; "
               "sys.exit(cli.main(['info', 'any.h5']))")
    shell = f"{sys.executable} -c \"{program}\" | head -c 1 >/dev/null; echo ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "141", done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_recording_flags_without_record_are_refused_before_the_run(capsys):
    """--every and the other flags that shape a recording did nothing without --record, and
    said nothing of it."""
    assert main(["run", "--n", "64", "--steps", "2", "--every", "5", "--quiet"]) == 2
    assert capsys.readouterr().err.strip() == (
        "orrery run: error: --every shapes a recording: give --record FILE too, or leave it out")
    assert main(["run", "--n", "64", "--steps", "2", "--record-velocities", "--record-flush", "1",
                 "--quiet"]) == 2
    assert "--record-velocities, --record-flush shape a recording" in capsys.readouterr().err
    assert main(["run", "--n", "64", "--steps", "2", "--quiet"]) == 0
