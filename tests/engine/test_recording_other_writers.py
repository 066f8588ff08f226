"""Another program writing a live recording's file is kept out where HDF5 lets Orrery do so,
and noticed where it does not: the Recorder stops with an error naming what happened instead of
closing as if nothing had (ADR 0200)."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from orrery.engine.errors import RecordingError
from orrery.engine.recording import Recorder, RecordingFile

N = 100


def _recording(path):
    recorder = Recorder(path, masses=np.ones(N), flush_seconds=0.01)
    recorder.append(np.zeros((N, 3), np.float32), 0.0, 0)
    while recorder.frames_committed < 1:
        time.sleep(0.01)
    return recorder


def _append_until_it_fails(recorder, first_step=1):
    with pytest.raises(RecordingError) as failure:
        for step in range(first_step, first_step + 1000):
            recorder.append(np.full((N, 3), step, np.float32), float(step), step)
            time.sleep(0.01)
        recorder.close()
    with pytest.raises(RecordingError):
        recorder.close()  # an append met the failure first: close reports it too
    return str(failure.value)


def test_an_hdf5_writer_in_another_program_fails_and_the_recorder_says_its_file_changed(tmp_path):
    path = tmp_path / "live.h5"
    recorder = _recording(path)
    other = subprocess.run([sys.executable, "-c", "import sys, h5py; h5py.File(sys.argv[1], 'w')"
                            ".close()", str(path)], capture_output=True, text=True, timeout=60)
    assert other.returncode != 0 and "unable to lock file" in other.stderr
    message = _append_until_it_fails(recorder)
    assert "changed while it was being recorded: another program emptied or rewrote it" \
        in message


@pytest.mark.parametrize("mode", ["a", "r+"])
def test_an_hdf5_program_opening_a_live_recording_to_change_it_is_refused_and_no_frame_is_lost(
        tmp_path, mode):
    path = tmp_path / "live.h5"
    recorder = _recording(path)
    other = subprocess.run([sys.executable, "-c", "import sys, h5py; h5py.File(sys.argv[1], "
                            "sys.argv[2]).close()", str(path), mode],
                           capture_output=True, text=True, timeout=60)
    assert other.returncode != 0 and "unable to lock file" in other.stderr
    for step in range(1, 4):
        recorder.append(np.full((N, 3), step, np.float32), float(step), step)
    recorder.close()
    with RecordingFile(path) as recording:
        assert recording.frame_count == 4
        assert [recording.read(step)[0, 0] for step in range(4)] == [0, 1, 2, 3]


def test_a_recording_replaced_under_its_writer_is_noticed(tmp_path):
    path = tmp_path / "live.h5"
    recorder = _recording(path)
    stranger = tmp_path / "stranger"
    stranger.write_bytes(b"somebody else's data")
    os.replace(stranger, path)
    message = _append_until_it_fails(recorder)
    assert "the path now names another file" in message
    assert path.read_bytes() == b"somebody else's data"  # neither written nor removed


def test_a_recording_whose_file_was_removed_is_noticed_at_close(tmp_path):
    path = tmp_path / "live.h5"
    recorder = _recording(path)
    path.unlink()
    with pytest.raises(RecordingError, match="changed while it was being recorded: it was "
                                             "removed"):
        recorder.close()
