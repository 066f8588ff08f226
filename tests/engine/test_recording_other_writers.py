"""Another program writing a live recording's file is kept out where HDF5 lets Orrery do so,
and noticed where it does not: the Recorder stops with an error naming what happened instead of
closing as if nothing had (ADR 0200)."""

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from orrery.engine import portable
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


def test_a_live_recording_is_read_only_to_others_until_it_closes(tmp_path):
    path = tmp_path / "live.h5"
    mode = _mode_of_a_new_file(tmp_path)
    recorder = _recording(path)
    withheld = portable.CHOSEN["write permission"] == "fchmod"
    assert path.stat().st_mode & 0o7777 == (mode & ~0o222 if withheld else mode)
    recorder.close()
    assert path.stat().st_mode & 0o7777 == mode


def _mode_of_a_new_file(folder):
    probe = folder / "probe"
    os.close(os.open(probe, os.O_CREAT | os.O_WRONLY, 0o666))
    mode = probe.stat().st_mode & 0o7777
    probe.unlink()
    return mode


NOBODY = 65534
# The exit code of a child whose work the Recorder refused (RecordingError).
REFUSED = 98


@pytest.fixture
def open_folder():
    """A folder the unprivileged user can reach: pytest's tmp_path lies in one only its owner
    (here root) may enter."""
    folder = Path(tempfile.mkdtemp())
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def _give_to_unprivileged(path) -> None:
    """Run as root, hand ``path`` to NOBODY: a file root owns is closed to NOBODY whatever its
    mode, so only as its owner does NOBODY show what the mode alone stops."""
    if os.geteuid() == 0:
        os.chown(path, NOBODY, NOBODY)


def test_an_unprivileged_program_cannot_empty_a_live_recording_and_no_frame_is_lost(open_folder):
    """HDF5's "w" opens the file with O_TRUNC before it looks at any lock; without write
    permission that open fails, so nothing is emptied. Where modes are left alone (another
    platform, ORRERY_PORTABLE=1) the open empties it, and the Recorder says so (ADR 0200)."""
    path = open_folder / "live.h5"
    recorder = _recording(path)
    _give_to_unprivileged(path)
    opened = _as_unprivileged(lambda: os.close(os.open(path, os.O_WRONLY | os.O_TRUNC)))
    if portable.CHOSEN["write permission"] != "fchmod":
        assert opened == 0
        assert "another program emptied or rewrote it" in _append_until_it_fails(recorder)
        return
    assert opened == errno.EACCES
    for step in range(1, 4):
        recorder.append(np.full((N, 3), step, np.float32), float(step), step)
    recorder.close()
    with RecordingFile(path) as recording:
        assert recording.closed_cleanly and recording.frame_count == 4
        assert [recording.read(step)[0, 0] for step in range(4)] == [0, 1, 2, 3]


def _as_unprivileged(work) -> int:
    """Run ``work`` in a child process, as the user NOBODY when this process is root; its exit
    code: 0 when ``work`` returned, the errno of an OSError it raised, REFUSED for a
    RecordingError, 99 for anything else."""
    with warnings.catch_warnings():  # Python 3.12 warns that forking a threaded process may hang
        warnings.simplefilter("ignore", DeprecationWarning)
        child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit code only
        code = 99
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            work()
            code = 0
        except RecordingError:
            code = REFUSED
        except OSError as error:
            code = error.errno
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


def test_overwriting_a_recording_left_read_only_by_a_killed_writer(open_folder):
    """A writer killed mid-recording leaves its file without write permission; overwrite=True
    gives its owner's write bit back (tested as an unprivileged owner, whom the mode stops).
    Where modes are left alone, such a file is the user's own doing, and it is refused."""
    from orrery.engine.recording._writer_lock import claim

    path = open_folder / "killed.h5"
    kept = b"the frames of a killed writer"
    path.write_bytes(kept)
    path.chmod(0o444)
    _give_to_unprivileged(path)
    overwritten = _as_unprivileged(lambda: claim(path, overwrite=True).release())
    if portable.CHOSEN["write permission"] != "fchmod":
        assert overwritten == REFUSED
        assert path.read_bytes() == kept and not path.stat().st_mode & 0o200
        return
    assert overwritten == 0
    assert path.stat().st_size == 0 and path.stat().st_mode & 0o200
