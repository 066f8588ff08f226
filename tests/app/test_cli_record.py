import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from orrery.app.cli import main, play
from orrery.engine import Simulation, ics, make_solver
from orrery.engine.recording import RecordingError, RecordingFile

from ..extras import package

RUN = ["run", "--ic", "plummer", "--n", "128", "--seed", "3", "--dt", "0.002",
       "--solver", "cpu-direct", "--precision", "f32", "--softening", "0.05", "--quiet"]


def rerun(frames, every):
    """The same run in this process: positions and times of the first ``frames`` frames."""
    sim = Simulation(ics.plummer(128, seed=3), make_solver("cpu-direct", precision="f32",
                                                           softening=0.05), dt=0.002)
    kept = []
    for _ in range(frames):
        kept.append((sim.positions(), sim.time, sim.steps))
        sim.step(every)
    return kept


def test_run_records_the_simulations_own_frames(tmp_path, capsys):
    path = tmp_path / "run.h5"
    assert main(RUN + ["--steps", "23", "--every", "5", "--record", str(path),
                       "--record-velocities"]) == 0
    with RecordingFile(path) as recording:
        # Steps 0, 5, 10, 15, 20: the initial state and every 5th step; 23 is not a multiple.
        assert list(recording.steps) == [0, 5, 10, 15, 20] and recording.has_velocities
        for index, (pos, t, step) in enumerate(rerun(5, 5)):
            np.testing.assert_array_equal(recording.read(index), pos)
            assert recording.times[index] == t
        assert recording.attributes["scenario"] == "plummer"
        assert recording.attributes["solver_params"]["precision"] == "f32"


def test_run_refuses_to_overwrite_a_recording(tmp_path, capsys):
    path = tmp_path / "run.h5"
    path.write_bytes(b"keep me")
    assert main(RUN + ["--steps", "2", "--record", str(path)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert path.read_bytes() == b"keep me"


def test_killed_run_leaves_every_committed_frame_complete_and_in_order(tmp_path):
    path = tmp_path / "killed.h5"
    every = 3
    command = [sys.executable, "-c",
               "import sys; from orrery.app.cli import main; sys.exit(main(sys.argv[1:]))",
               *RUN, "--steps", "100000000", "--every", str(every), "--record", str(path),
               "--record-flush", "0.05"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    try:
        seen = 0
        deadline = time.monotonic() + 120
        while seen < 20:  # read the live file until a reader has seen a few flushes
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the recording never got going"
            time.sleep(0.05)
            if path.exists():
                try:
                    with RecordingFile(path) as live:
                        seen = live.frame_count
                except RecordingError:
                    pass  # created but not yet in SWMR mode
        time.sleep(0.2)
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.wait()
        process.stderr.close()

    with RecordingFile(path) as recording:
        assert not recording.closed_cleanly
        count = recording.frame_count
        # Nothing a reader once saw is lost; no frame doubled or skipped.
        assert count >= seen
        np.testing.assert_array_equal(recording.steps, np.arange(count) * every)
        for index, (pos, t, step) in enumerate(rerun(count, every)):
            np.testing.assert_array_equal(recording.read(index), pos)
            assert recording.times[index] == t
    # The same file cut short (a copy interrupted) is refused, not misread.
    cut = tmp_path / "cut.h5"
    shutil.copy(path, cut)
    os.truncate(cut, cut.stat().st_size // 2)
    with pytest.raises(RecordingError, match="truncated|damaged|frame"):
        RecordingFile(cut)


def test_info_prints_what_a_recording_holds(tmp_path, capsys):
    path = tmp_path / "run.h5"
    assert main(RUN + ["--steps", "20", "--every", "10", "--record", str(path),
                       "--record-precision", "f16"]) == 0
    capsys.readouterr()
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    for expected in ("particles:     128", "frames:        3 x float16 positions",
                     "steps 0 .. 20, every 10 steps", "scenario:      plummer",
                     "solver:        cpu-direct", "closed cleanly", "dt:            0.002",
                     "keyframes:     2 x float32 states at steps 0 .. 20"):
        assert expected in out, (expected, out)


def test_info_and_play_reject_a_bad_file(tmp_path, capsys):
    path = tmp_path / "notes.h5"
    path.write_text("not a recording")
    assert main(["info", str(path)]) == 2
    assert main(["play", str(path)]) == 2
    assert capsys.readouterr().err.count("not an HDF5 file") == 2


def test_play_runs_the_viewer_entry_point(tmp_path, monkeypatch):
    path = tmp_path / "run.h5"
    assert main(RUN + ["--steps", "2", "--every", "1", "--record", str(path)]) == 0
    calls = []
    monkeypatch.setattr(play, "viewer_main", calls.append)
    assert main(["play", str(path)]) == 0
    assert calls == [["--play", str(path)]]


def test_play_with_a_viewer_package_missing_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    path = tmp_path / "run.h5"
    assert main(RUN + ["--steps", "2", "--every", "1", "--record", str(path)]) == 0
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "moderngl", None)
    assert main(["play", str(path)]) == 2
    assert capsys.readouterr().err == ("orrery-viewer: error: moderngl is not installed, though "
                                       "orrery depends on it: reinstall orrery from its checkout "
                                       "(bash scripts/setup.sh, or pip install .)\n")


@pytest.mark.parametrize("command", ["info", "play"])
def test_recording_commands_have_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    assert "usage" in capsys.readouterr().out


@pytest.mark.parametrize("flags, message", [
    (["--record", ""], "needs a file name"),
    (["--record", "   "], "needs a file name"),
    (["--record", "{tmp}/run.h5", "--record-flush", "inf"], "flush_seconds must be"),
    (["--record", "{tmp}/run.h5", "--record-flush", "0"], "flush_seconds must be"),
    (["--record", "{tmp}/notes.txt/run.h5"], "notes.txt is a file, not a folder"),
    (["--record", "{tmp}/" + "x" * 300 + ".h5"], "File name too long"),
    (["--record", "{tmp}"], "it is a folder"),
])
def test_run_refuses_a_recording_it_cannot_make_before_it_starts(tmp_path, capsys, flags,
                                                                 message):
    (tmp_path / "notes.txt").write_text("keep me")
    flags = [flag.replace("{tmp}", str(tmp_path)) for flag in flags]
    assert main(RUN + ["--steps", "2"] + flags) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_run_goes_on_when_the_disk_fills_and_keeps_the_committed_frames(tmp_path, capsys,
                                                                        monkeypatch):
    from orrery.engine.recording._writer_lock import WriterLock

    path = tmp_path / "run.h5"
    budget = 1 << 20  # a 1 MiB disk: 128 particles are 1.5 KB a frame, chunks 256 KiB

    def free_bytes(lock):
        return max(0, budget - path.stat().st_blocks * 512)

    monkeypatch.setattr(WriterLock, "free_bytes", free_bytes)
    assert main(RUN + ["--steps", "3000", "--every", "1", "--record", str(path),
                       "--record-flush", "0.01"]) == 1
    captured = capsys.readouterr()
    assert "orrery run: the disk holding" in captured.err
    assert "the recording stopped" in captured.err
    assert "the run goes on without recording" in captured.err
    assert "128 particles, 3000 steps" in captured.out  # the run finished
    with RecordingFile(path) as recording:
        count = recording.frame_count
        assert 0 < count < 3001 and f"keeps the {count} frame(s) committed" in captured.err
        for index, (pos, t, step) in enumerate(rerun(count, 1)):
            if index % 97 == 0:
                np.testing.assert_array_equal(recording.read(index), pos)
        np.testing.assert_array_equal(recording.steps, np.arange(count))


def test_info_reports_a_damaged_recording_without_trying_it_as_a_snapshot(tmp_path, capsys,
                                                                          monkeypatch):
    from orrery.engine import snapshots

    path = tmp_path / "run.h5"
    assert main(RUN + ["--steps", "2", "--every", "1", "--record", str(path)]) == 0
    data = bytearray(path.read_bytes())
    data[data.find(b"OHDR") + 6] ^= 0xFF  # the root group's header
    path.write_bytes(data)
    monkeypatch.setattr(snapshots, "looks_like_snapshot",
                        lambda path: pytest.fail("a damaged recording was tried as a snapshot"))
    capsys.readouterr()
    assert main(["info", str(path)]) == 2
    assert "damaged" in capsys.readouterr().err


def test_run_records_fixed16_compressed_frames_and_says_what_recording_cost(tmp_path, capsys):
    package("hdf5plugin")
    path = tmp_path / "run.h5"
    assert main(RUN + ["--steps", "10", "--every", "5", "--record", str(path),
                       "--record-precision", "fixed16", "--record-compression", "blosc2"]) == 0
    out = capsys.readouterr().out
    assert "recorded 3 frame(s)" in out and "never waited for the disk" in out
    with RecordingFile(path) as recording:
        assert (recording.encoding, recording.compression) == ("fixed16", "blosc2")
        for index, (pos, _, _) in enumerate(rerun(3, 5)):
            assert (np.abs(recording.read(index) - pos) <= recording.position_error(index)).all()
