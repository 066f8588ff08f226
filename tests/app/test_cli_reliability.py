"""The command line under hostile use (issue 42): what it cannot do well it refuses in one line
before the work starts, and what a run has written stays readable."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from orrery.app.cli import main
from orrery.engine.errors import RecordingError
from orrery.engine.recording import RecordingFile

from ..extras import package


def _far_snapshot(path, *, scale=1e5):
    """A Tipsy snapshot in kpc whose particles lie far beyond float16's 65,504."""
    pynbody = package("pynbody")
    rng = np.random.default_rng(0)
    snap = pynbody.new(dm=500)
    snap["pos"] = (rng.standard_normal((500, 3)) * scale).astype(np.float32)
    snap["vel"] = rng.standard_normal((500, 3)).astype(np.float32)
    snap["mass"] = np.full(500, 1e-4, np.float32)
    snap.properties["time"] = 0.5
    snap.write(fmt=pynbody.snapshot.tipsy.TipsySnap, filename=str(path))


def test_a_float16_recording_of_a_snapshot_beyond_65504_is_refused_in_one_line(tmp_path, capsys):
    snapshot = tmp_path / "far.tipsy"
    _far_snapshot(snapshot)
    recording = tmp_path / "x.h5"
    code = main(["run", "--load", str(snapshot), "--steps", "4", "--every", "2", "--quiet",
                 "--solver", "cpu-direct", "--record", str(recording),
                 "--record-precision", "f16"])
    err = capsys.readouterr().err
    assert code == 2
    assert "65,504" in err and "the largest is" in err and len(err.strip().splitlines()) == 1
    assert not recording.exists()


def test_the_same_snapshot_records_as_fixed16_without_inf(tmp_path):
    snapshot = tmp_path / "far.tipsy"
    _far_snapshot(snapshot)
    recording = tmp_path / "x.h5"
    assert main(["run", "--load", str(snapshot), "--steps", "4", "--every", "2", "--quiet",
                 "--solver", "cpu-direct", "--record", str(recording),
                 "--record-precision", "fixed16"]) == 0
    with RecordingFile(recording) as file:
        assert file.frame_count == 3
        assert np.isfinite(file.read(0)).all() and np.abs(file.read(0)).max() > 65504


def _orrery(*arguments, **popen):
    command = [sys.executable, "-c",
               "import sys; from orrery.app.cli import main; sys.exit(main(sys.argv[1:]))",
               *arguments]
    return subprocess.Popen(command, **popen)


def _wait_for_frames(path, process, count: int) -> int:
    """Frames a reader sees in the live recording ``path`` once it holds at least ``count``."""
    deadline = time.monotonic() + 120
    seen = 0
    while seen < count:
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "the recording never got going"
        time.sleep(0.05)
        if path.exists():
            try:
                with RecordingFile(path) as live:
                    seen = live.frame_count
            except RecordingError:
                pass  # created but not yet in SWMR mode
    return seen


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT])
def test_a_stop_signal_mid_record_closes_the_recording_with_every_frame(tmp_path, signum):
    path = tmp_path / "stopped.h5"
    process = _orrery("run", "--n", "128", "--solver", "cpu-direct", "--steps", "100000000",
                      "--every", "1", "--quiet", "--record", str(path), "--record-flush", "0.05",
                      stderr=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        seen = _wait_for_frames(path, process, 10)
        process.send_signal(signum)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 128 + signum, err.decode()
    assert err.decode().strip().splitlines()[-1] == \
        f"orrery run: stopped by {signal.Signals(signum).name}"
    with RecordingFile(path) as recording:
        assert recording.closed_cleanly and recording.frame_count >= seen
        np.testing.assert_array_equal(recording.steps, np.arange(recording.frame_count))
    info = subprocess.run([sys.executable, "-c", "import sys; from orrery.app.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", "info", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0 and "closed cleanly" in info.stdout


@pytest.mark.parametrize("arguments, message", [
    (["--output", "{dir}/table.json"], "--output only applies to --accuracy"),
    (["--device", "cuda:0", "--scenarios", "plummer"],
     "--scenarios, --device only apply to --accuracy"),
    (["--accuracy", "--n-min", "64"], "--n-min only applies to timing crossovers"),
    (["--accuracy", "--dry-run", "--output", "{dir}/table.json"],
     "--dry-run stores nothing, so --output has nothing to write"),
])
def test_calibrate_refuses_options_its_mode_would_ignore_before_measuring(
        tmp_path, monkeypatch, capsys, arguments, message):
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path / "cache"))
    arguments = [argument.format(dir=tmp_path) for argument in arguments]
    assert main(["calibrate", "--quiet", *arguments]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "table.json").exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("output", ["{dir}", "{dir}/missing/table.json", "{dir}/new/"])
def test_calibrate_accuracy_refuses_an_output_it_cannot_write_before_measuring(
        tmp_path, capsys, output):
    with pytest.raises(SystemExit) as exit_:
        main(["calibrate", "--accuracy", "--quiet", "--output", output.format(dir=tmp_path)])
    assert exit_.value.code == 2
    assert "argument --output" in capsys.readouterr().err


def test_record_to_a_name_ending_in_a_slash_is_refused_as_a_folder(tmp_path, capsys):
    folder = tmp_path / "newdir"
    assert main(["run", "--n", "16", "--steps", "2", "--quiet", "--record",
                 f"{folder}/"]) == 2
    assert "it names a folder" in capsys.readouterr().err
    assert not folder.exists()


BENCH = ["bench", "direct", "--n", "16", "--precision", "f64", "--trials", "1", "--warmup", "0",
         "--no-ceilings"]


@pytest.mark.parametrize("flag, target, message", [
    ("--csv", "{dir}", "must name a file, not a folder"),
    ("--csv", "{dir}/missing/rows.csv", "does not exist"),
    ("--csv", "{dir}/rows.json", "must end in .csv"),
    ("--json", "{dir}/rows.txt", "must end in .json"),
    ("--json", "/dev/full", "must name a regular file"),
])
def test_bench_refuses_an_output_it_cannot_write_before_the_work(tmp_path, capsys, flag, target,
                                                                  message):
    with pytest.raises(SystemExit) as exit_:
        main([*BENCH, flag, target.format(dir=tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and message in err
    assert list(tmp_path.iterdir()) == []


def test_bench_writes_its_table_whole_or_not_at_all(tmp_path, monkeypatch, capsys):
    from orrery.bench import command as bench

    def full_disk(rows, path, **options):
        Path(path).write_text("half a tab")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(bench, "write_rows", full_disk)
    assert main([*BENCH, "--csv", str(tmp_path / "rows.csv")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        f"orrery bench: error: cannot write {tmp_path / 'rows.csv'}: No space left on device"
    assert list(tmp_path.iterdir()) == []
