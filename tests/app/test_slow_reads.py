"""A recording or snapshot on a slow or stalled file system is never read without a word: each
time input_files.SLOW_READ_SECONDS passes before the read ends, one line on stderr says what is
still being read and for how long, and once the process has neither read nor computed anything
for input_files.stall_seconds() the command ends with one line and exit code 1 (issue 42). A
stalled read is stood in for by one that sleeps."""

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from orrery.app.cli import main
from orrery.engine import input_files
from orrery.engine.recording import Recorder, _reader

from ..extras import package

NOTICE = re.compile(r"orrery: still reading (recording|snapshot) (\S+) after \d+ s "
                    r"\(a slow or stalled file system\?\)")
INTERVAL = 0.3  # seconds between notices here
STALL = 1.0  # seconds a stalled read takes here: about three notices


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "run.h5"
    with Recorder(path, masses=np.ones(4), keyframe_dtype="float64") as recorder:
        recorder.append(np.zeros((4, 3), np.float32), 0.0, 0)
        recorder.append_keyframe(np.zeros((4, 3)), np.zeros((4, 3)), 0.0, 0)
    return path


def _stall(monkeypatch, module, name):
    read = getattr(module, name)

    def stalled(*args, **kwargs):
        time.sleep(STALL)
        return read(*args, **kwargs)
    monkeypatch.setattr(module, name, stalled)
    monkeypatch.setattr(input_files, "SLOW_READ_SECONDS", INTERVAL)


def _notices(err: str, what: str, path) -> int:
    found = [match.groups() for match in map(NOTICE.fullmatch, err.splitlines()) if match]
    assert found and all(found_ == (what, str(path)) for found_ in found), err
    return len(found)


def _timed(arguments):
    """main(arguments)'s exit code, and the most notices one watcher can give in its time."""
    start = time.monotonic()
    code = main(arguments)
    return code, (time.monotonic() - start) / INTERVAL


def test_orrery_info_says_it_is_still_reading_a_recording_that_stalls(
        recording, monkeypatch, capsys):
    _stall(monkeypatch, _reader, "_open_hdf5")
    code, most = _timed(["info", str(recording)])
    assert code == 0
    captured = capsys.readouterr()
    assert "state:         closed cleanly" in captured.out
    assert 1 <= _notices(captured.err, "recording", recording) <= most


def test_resume_says_so_once_an_interval_though_its_reads_nest(recording, monkeypatch, capsys):
    _stall(monkeypatch, _reader, "_open_hdf5")
    code, most = _timed(["run", "--quiet", "--steps", "1", "--resume", str(recording)])
    assert code == 2
    err = capsys.readouterr().err
    assert "lacks the run setting(s)" in err  # read, then refused: a bare Recorder's file
    assert 1 <= _notices(err, "recording", recording) <= most  # nested reads: one watcher


def test_run_load_says_it_is_still_reading_a_snapshot_that_stalls(tmp_path, monkeypatch,
                                                                  capsys):
    package("pynbody")
    from orrery.engine import snapshots

    from ..engine.snapshot_files import write_tipsy

    path = tmp_path / "galaxy.tipsy"
    write_tipsy(path, {"gas": 4, "dm": 20, "star": 8})
    _stall(monkeypatch, snapshots, "_load")
    assert main(["run", "--quiet", "--steps", "1", "--solver", "cpu-direct", "--load",
                 str(path)]) == 0
    assert _notices(capsys.readouterr().err, "snapshot", path) >= 1


def test_a_read_that_ends_in_time_says_nothing(recording, capsys):
    assert main(["info", str(recording)]) == 0
    assert "still reading" not in capsys.readouterr().err


def _info_with_open(recording, stand_in: str) -> subprocess.CompletedProcess:
    """``orrery info`` of ``recording`` in a child whose recordings open by calling
    ``stand_in`` (Python source of a function of the path) first, waiting at most 1.5 s
    without progress."""
    script = ("import ctypes, pathlib, sys, time; from orrery.engine.recording import _reader; "
              f"opened = _reader._open_hdf5; stand_in = {stand_in}; "
              "_reader._open_hdf5 = lambda path: (stand_in(path), opened(path))[1]; "
              "from orrery.app.cli import main; sys.exit(main(['info', sys.argv[1]]))")
    return subprocess.run([sys.executable, "-c", script, str(recording)], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, input_files.STALL_VARIABLE: "1.5"})


def _gave_up(recording) -> str:
    return (f"orrery: gave up reading recording {recording}: nothing was read or computed for "
            "1.5 s (a stalled file system?); ORRERY_READ_STALL_SECONDS sets how long to wait\n")


def test_a_read_stalled_for_good_ends_the_command_with_one_line_and_exit_code_1(recording):
    # libc's sleep called through PyDLL keeps the GIL, as h5py does while HDF5 waits in the
    # kernel: no Python thread runs until it returns.
    started = time.monotonic()
    ended = _info_with_open(recording, "lambda path: ctypes.PyDLL(None).sleep(600)")
    assert (ended.returncode, ended.stderr) == (1, _gave_up(recording))
    assert time.monotonic() - started < 60


def test_a_stalled_read_that_lets_other_threads_run_ends_the_same_way(recording):
    ended = _info_with_open(recording, "lambda path: time.sleep(600)")
    assert (ended.returncode, ended.stderr) == (1, _gave_up(recording))


def test_a_slow_read_that_keeps_reading_is_not_ended(recording):
    # Four seconds of small reads, a fifth of a second apart: never 1.5 s without progress.
    ended = _info_with_open(recording, "lambda path: [(pathlib.Path(path).read_bytes(), "
                                       "time.sleep(0.2)) for _ in range(20)]")
    assert ended.returncode == 0, ended.stderr
    assert "state:         closed cleanly" in ended.stdout


@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan", "inf"])
def test_a_stall_limit_that_is_not_a_positive_number_of_seconds_is_refused(
        recording, monkeypatch, capsys, value):
    monkeypatch.setenv(input_files.STALL_VARIABLE, value)
    assert main(["info", str(recording)]) == 2
    assert f"ORRERY_READ_STALL_SECONDS={value!r}: expected a number of seconds above 0" \
        in capsys.readouterr().err
