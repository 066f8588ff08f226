"""Recording under faults (issue 18): a full disk, a failing device, a killed writer's damaged
file, a second writer, bad paths and bad frames. Each test is one reproducer from the issue."""

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from orrery.engine.errors import InvalidInputError, RecordingError
from orrery.engine.recording import Player, Recorder, RecordingFile
from orrery.engine.recording._layout import RecordingLayout
from orrery.engine.recording._writer import RecordingWriter
from orrery.engine.recording._writer_lock import WriterLock

N = 2000  # 24 KB float32 frames: a 1 MiB disk fills after a few dozen


def frame(index):
    return np.full((N, 3), index, np.float32)


def mount_tmpfs(folder: Path, options: str) -> bool:
    """Mount a small tmpfs at ``folder`` where this process may (root on Linux), else False."""
    folder.mkdir()
    if sys.platform != "linux" or os.geteuid() != 0:
        return False
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                            capture_output=True)
    return result.returncode == 0


NO_TMPFS = "a real 1 MiB tmpfs needs root on Linux to mount (the injected case checks the same)"


@pytest.fixture
def small_disk(tmp_path, monkeypatch, request):
    """A folder on a 1 MiB file system: ``tmpfs``, a real one (skipped where it cannot be mounted:
    the ``injected`` case already runs there), or ``injected``, the Recorder told the free space
    a 1 MiB disk would have left (the same numbers fstatvfs gives)."""
    folder = tmp_path / "disk"
    if request.param == "tmpfs":
        if not mount_tmpfs(folder, "size=1m"):
            pytest.skip(NO_TMPFS)
        yield folder
        subprocess.run(["umount", "-l", str(folder)], check=True)
        return
    folder.mkdir(exist_ok=True)

    def free_bytes(lock):
        used = sum(entry.stat().st_blocks * 512 for entry in folder.iterdir())
        return max(0, (1 << 20) - used)

    monkeypatch.setattr(WriterLock, "free_bytes", free_bytes)
    yield folder


def append_until_it_fails(recorder, limit=2000):
    for index in range(limit):
        try:
            recorder.append(frame(index), float(index), index)
        except RecordingError as error:
            return index, error
        time.sleep(0.002)
    raise AssertionError("the disk never filled up")


@pytest.mark.parametrize("small_disk", ["tmpfs", "injected"], indirect=True)
def test_full_disk_keeps_every_committed_frame_and_says_so(small_disk):
    path = small_disk / "run.h5"
    recorder = Recorder(path, masses=np.ones(N), flush_seconds=0.02)
    appended, error = append_until_it_fails(recorder)
    assert "full" in str(error) and str(path) in str(error)
    with pytest.raises(RecordingError, match="full"):
        recorder.close()
    kept = recorder.frames_committed
    assert 10 < kept <= appended and f"keeps the {kept} frame(s) committed" in str(error)
    with RecordingFile(path) as recording:
        assert recording.closed_cleanly and recording.frame_count == kept
        for index in range(kept):
            np.testing.assert_array_equal(recording.read(index), frame(index))
        np.testing.assert_array_equal(recording.steps, np.arange(kept))


@pytest.mark.parametrize("small_disk", ["tmpfs", "injected"], indirect=True)
def test_starting_on_a_full_disk_leaves_nothing_that_blocks_a_retry(small_disk, monkeypatch):
    filler = small_disk / "filler"
    filler.write_bytes(b"\1" * (900 << 10))
    path = small_disk / "run.h5"
    with pytest.raises(RecordingError, match="full"):
        Recorder(path, masses=np.ones(N))
    assert not path.exists()
    filler.unlink()
    with Recorder(path, masses=np.ones(N)) as recorder:
        recorder.append(frame(0), 0.0, 0)
    with RecordingFile(path) as recording:
        assert recording.frame_count == 1


def test_creation_failing_inside_hdf5_removes_the_file(tmp_path, monkeypatch):
    def no_space(self, *args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(RecordingLayout, "_create", no_space)
    path = tmp_path / "run.h5"
    with pytest.raises(RecordingError, match="No space left"):
        Recorder(path, masses=np.ones(4))
    assert not path.exists()


_FAILING_DEVICE = """
import json, os, resource, signal, sys, time
import numpy as np
from orrery.engine.recording import Recorder, RecordingError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
recorder = Recorder(sys.argv[1], masses=np.ones({n}), flush_seconds=0.02)
limit = int(sys.argv[2]) or os.path.getsize(sys.argv[1])  # 0: not one byte more
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
error = None
for index in range(2000):
    try:
        recorder.append(np.full(({n}, 3), index, np.float32), float(index), index)
    except RecordingError as caught:
        error = str(caught)
        break
    time.sleep(0.002)
try:
    recorder.close()
except RecordingError:
    pass
print(json.dumps({{"error": error, "committed": recorder.frames_committed}}))
"""


def test_a_write_failing_inside_hdf5_stops_the_recording_without_a_crash(tmp_path):
    """The disk filling between the free-space check and HDF5's write (here: a file size limit,
    so HDF5's own write fails): no crash, no flood of ignored exceptions, a clear error, and
    every frame committed before the failure still reads back."""
    path = tmp_path / "run.h5"
    report = run_failing_device(path, limit=1 << 20)
    assert f"{path} keeps the {report['committed']} frame(s) committed" in report["error"]
    with RecordingFile(path) as recording:
        assert not recording.closed_cleanly and not recording.being_written
        assert recording.frame_count == report["committed"] > 10
        for index in range(recording.frame_count):
            np.testing.assert_array_equal(recording.read(index), frame(index))


def test_hdf5_meeting_a_full_disk_keeps_the_committed_frames(tmp_path, monkeypatch):
    """The free-space check bypassed, so HDF5 itself meets ENOSPC on a real small tmpfs (where
    one can be mounted; elsewhere the file-size limit test above is the nearest case)."""
    folder = tmp_path / "disk"
    if not mount_tmpfs(folder, "size=1m"):
        pytest.skip("a real 1 MiB tmpfs needs root on Linux to mount")
    try:
        monkeypatch.setattr(WriterLock, "free_bytes", lambda lock: 1 << 40)
        path = folder / "run.h5"
        recorder = Recorder(path, masses=np.ones(N), flush_seconds=0.02)
        appended, error = append_until_it_fails(recorder)
        assert "No space left on device" in str(error)
        with pytest.raises(RecordingError, match="No space left"):
            recorder.close()
        kept = recorder.frames_committed
        assert f"keeps the {kept} frame(s) committed" in str(error)
        with RecordingFile(path) as recording:
            assert recording.frame_count == kept > 10
            for index in range(kept):
                np.testing.assert_array_equal(recording.read(index), frame(index))
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_recording_failing_before_its_first_commit_leaves_no_file(tmp_path):
    path = tmp_path / "run.h5"
    report = run_failing_device(path, limit=0)
    assert report["committed"] == 0
    assert f"no frame had been committed, so {path} was removed" in report["error"]
    assert not path.exists()


def run_failing_device(path, *, limit):
    result = subprocess.run([sys.executable, "-c", _FAILING_DEVICE.format(n=N), str(path),
                             str(limit)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Exception ignored" not in result.stderr
    report = json.loads(result.stdout)
    assert report["error"] and "File too large" in report["error"]
    return report


# -- a killed writer's damaged file ---------------------------------------------------------

@pytest.fixture(scope="module")
def killed_recording(tmp_path_factory):
    """A recording whose writer was killed after committing its frames (with run attributes,
    so the file has the fractal heap, B-tree and extensible array of a real run)."""
    spec = importlib.util.spec_from_file_location(
        "recording_fuzz_cases", Path(__file__).with_name("recording_fuzz_cases.py"))
    cases = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cases)
    return cases.make_killed(tmp_path_factory.mktemp("killed") / "killed.h5")


@pytest.mark.parametrize("signature", [b"FRHP", b"EAHD", b"BTHD"])
def test_damaged_file_of_a_killed_writer_is_refused_within_seconds(tmp_path, killed_recording,
                                                                    signature):
    with RecordingFile(killed_recording) as recording:  # intact, it reads
        assert recording.frame_count > 0 and not recording.being_written
    path = tmp_path / "damaged.h5"
    data = bytearray(killed_recording.read_bytes())
    offset = data.find(signature) + 6
    assert offset > 6
    data[offset] ^= 0xFF
    path.write_bytes(data)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-c", "import sys; from orrery.app.cli import main; "
                             "sys.exit(main(sys.argv[1:]))", "info", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert time.monotonic() - start < 20
    assert result.returncode == 2, result.stderr
    assert "damaged" in result.stderr and "Traceback" not in result.stderr


# -- a second writer ---------------------------------------------------------------------------

def test_overwrite_refuses_a_file_another_recorder_is_writing(tmp_path):
    path = tmp_path / "run.h5"
    first = Recorder(path, masses=np.ones(N), flush_seconds=0.02)
    first.append(frame(0), 0.0, 0)
    with pytest.raises(RecordingError, match="being recorded by another Recorder"):
        Recorder(path, masses=np.ones(N), overwrite=True)
    for index in range(1, 5):
        first.append(frame(index), float(index), index)
    first.close()
    with RecordingFile(path) as recording:
        assert recording.frame_count == 5 and recording.closed_cleanly
    with Recorder(path, masses=np.ones(N), overwrite=True) as second:  # free again
        second.append(frame(7), 7.0, 7)
    with RecordingFile(path) as recording:
        assert list(recording.steps) == [7]


_LIVE_WRITER = """
import sys, time
import numpy as np
from orrery.engine.recording import Recorder
with Recorder(sys.argv[1], masses=np.ones(8), flush_seconds=0.02) as recorder:
    for step in range(3):
        recorder.append(np.zeros((8, 3)), float(step), step)
    while recorder.frames_committed < 3:
        time.sleep(0.01)
    print("ready", flush=True)
    sys.stdin.readline()
"""


def test_overwrite_refuses_a_file_another_process_is_recording(tmp_path):
    path = tmp_path / "run.h5"
    writer = subprocess.Popen([sys.executable, "-c", _LIVE_WRITER, str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "ready\n"
        with pytest.raises(RecordingError, match="being recorded"):
            Recorder(path, masses=np.ones(8), overwrite=True)
        with RecordingFile(path) as live:  # a reader is welcome
            assert live.frame_count == 3 and not live.closed_cleanly and live.being_written
        result = subprocess.run([sys.executable, "-c", "import sys; from orrery.app.cli import "
                                 "main; sys.exit(main(sys.argv[1:]))", "info", str(path)],
                                capture_output=True, text=True, timeout=60)
        assert "being recorded now" in result.stdout, result.stderr
        writer.stdin.write("\n")
        writer.stdin.flush()
        assert writer.wait(timeout=30) == 0
    finally:
        writer.kill()
        writer.wait()
        writer.stdin.close()
        writer.stdout.close()
    with RecordingFile(path) as recording:
        assert recording.frame_count == 3 and recording.closed_cleanly


_HDF5_WRITER = """
import sys, h5py
with h5py.File(sys.argv[1], "a"):  # another HDF5 program writing the file (locked, not SWMR)
    print("ready", flush=True)
    sys.stdin.readline()
"""


def test_a_file_another_program_holds_open_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("HDF5_USE_FILE_LOCKING", raising=False)
    path = tmp_path / "run.h5"
    with Recorder(path, masses=np.ones(4)) as recorder:
        recorder.append(np.zeros((4, 3)), 0.0, 0)
    other = subprocess.Popen([sys.executable, "-c", _HDF5_WRITER, str(path)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "HDF5_USE_FILE_LOCKING": "TRUE"})
    try:
        assert other.stdout.readline() == "ready\n"
        with pytest.raises(RecordingError, match="open elsewhere, in this or another program"):
            Recorder(path, masses=np.ones(4), overwrite=True)
        with pytest.raises(RecordingError, match="locked by another program"):
            RecordingFile(path)
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.wait(timeout=30) == 0
    finally:
        other.kill()
        other.wait()
        other.stdin.close()
        other.stdout.close()
    with RecordingFile(path) as recording:
        assert recording.frame_count == 1


# -- the writer never hangs and never writes what its reader refuses ---------------------------

def test_close_returns_when_the_final_commit_fails(tmp_path, monkeypatch):
    def failing_commit(self, pending):
        if pending:
            raise OSError("the device went away")

    monkeypatch.setattr(RecordingWriter, "_commit", failing_commit)
    recorder = Recorder(tmp_path / "x.h5", masses=np.ones(100))
    recorder.append(np.zeros((100, 3)), 0.0, 0)
    outcome = []

    def close():
        try:
            recorder.close()
        except RecordingError as error:
            outcome.append(error)

    closer = threading.Thread(target=close, daemon=True)
    closer.start()
    closer.join(timeout=10)
    assert not closer.is_alive(), "close() hung"
    assert "the device went away" in str(outcome[0])
    recorder.close()  # idempotent


def test_close_returns_when_the_writer_died_with_a_full_queue(tmp_path, monkeypatch):
    def failing_write(self, item):
        raise OSError("the device went away")

    monkeypatch.setattr(RecordingWriter, "_write_frame", failing_write)
    recorder = Recorder(tmp_path / "x.h5", masses=np.ones(64), queue_bytes=1)
    with pytest.raises(RecordingError, match="went away"):
        for step in range(100):
            recorder.append(np.zeros((64, 3)), float(step), step)
    start = time.monotonic()
    with pytest.raises(RecordingError, match="went away"):
        recorder.close()
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("time_, step, message", [
    (float("inf"), 0, "times must be finite"),
    (float("nan"), 0, "times must be finite"),
    (0.0, -1, "outside 0.."),
    (0.0, 2**70, "outside 0.."),
    (0.0, 1.5, "must be an integer"),
])
def test_recorder_refuses_frames_its_reader_would_refuse(tmp_path, time_, step, message):
    with Recorder(tmp_path / "r.h5", masses=np.ones(4)) as recorder:
        with pytest.raises(InvalidInputError, match=message):
            recorder.append(np.zeros((4, 3)), time_, step)
        recorder.append(np.zeros((4, 3)), 1.0, 3)
        with pytest.raises(InvalidInputError, match="before the previous"):
            recorder.append(np.zeros((4, 3)), 0.5, 4)
    with RecordingFile(tmp_path / "r.h5") as recording:
        assert list(recording.steps) == [3]


def test_population_names_follow_the_readers_limits(tmp_path):
    labels = np.arange(256) % 256
    with pytest.raises(InvalidInputError, match="1 to 256 names"):
        Recorder(tmp_path / "a.h5", masses=np.ones(300), population=np.arange(300) % 256,
                 population_names=[f"p{i}" for i in range(300)])
    with pytest.raises(InvalidInputError, match="at most 256 bytes"):
        Recorder(tmp_path / "b.h5", masses=np.ones(2), population_names=["x" * 257])
    with pytest.raises(InvalidInputError, match="non-empty"):
        Recorder(tmp_path / "c.h5", masses=np.ones(2), population_names=[""])
    assert not any(tmp_path.iterdir())  # refused before any file was made
    widest = [f"{i:03d}" + "é" * 126 for i in range(256)]  # 256 names of 255 bytes
    with Recorder(tmp_path / "d.h5", masses=np.ones(256), population=labels,
                  population_names=widest) as recorder:
        recorder.append(np.zeros((256, 3)), 0.0, 0)
    with RecordingFile(tmp_path / "d.h5") as recording:
        assert recording.population_names == tuple(widest)


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), 0.0, -1.0, 1e9])
def test_flush_interval_must_be_positive_and_finite(tmp_path, seconds):
    with pytest.raises(InvalidInputError, match="flush_seconds"):
        Recorder(tmp_path / "r.h5", masses=np.ones(4), flush_seconds=seconds)
    assert not (tmp_path / "r.h5").exists()


# -- paths that cannot be recorded to ----------------------------------------------------------

def test_a_read_only_folder_is_a_clear_error(tmp_path, monkeypatch):
    folder = tmp_path / "readonly"
    mounted = mount_tmpfs(folder, "size=1m,ro")
    if not mounted:
        if os.geteuid() != 0:
            folder.chmod(0o555)
        else:  # root ignores permissions and may not mount here: what the kernel would say
            real_open = os.open

            def refusing_open(path, flags, *args, **kwargs):
                if Path(path).parent == folder and flags & os.O_CREAT:
                    raise PermissionError(30, "Read-only file system", str(path))
                return real_open(path, flags, *args, **kwargs)

            monkeypatch.setattr(os, "open", refusing_open)
    try:
        with pytest.raises(RecordingError, match=r"cannot record to .*(Read-only|Permission)"):
            Recorder(folder / "run.h5", masses=np.ones(4))
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=True)
        folder.chmod(0o755)


def test_bad_paths_are_clear_errors_that_leave_nothing_behind(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    dangling = tmp_path / "link.h5"
    dangling.symlink_to(tmp_path / "nowhere" / "target.h5")
    cases = {
        notes / "run.h5": "notes.txt is a file, not a folder",
        notes / "deeper" / "run.h5": "notes.txt is a file, not a folder",
        tmp_path / ("x" * 300 + ".h5"): "File name too long",
        dangling: "symbolic link to .*nowhere.*which does not exist",
        tmp_path: "it is a folder",
        "": "needs a file name",
        "   ": "needs a file name",
    }
    for path, message in cases.items():
        for overwrite in (False, True):
            with pytest.raises(RecordingError, match=message):
                Recorder(path, masses=np.ones(4), overwrite=overwrite)
    assert notes.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.h5", "notes.txt"]


def test_player_refuses_an_absurd_ring(tmp_path):
    with Recorder(tmp_path / "r.h5", masses=np.ones(4)) as recorder:
        recorder.append(np.zeros((4, 3)), 0.0, 0)
    for buffers in (10**7, 3, 65, 8.5):
        with pytest.raises(InvalidInputError, match="buffers must be an integer from 4 to 64"):
            Player(tmp_path / "r.h5", buffers=buffers)
    with Player(tmp_path / "r.h5", buffers=64) as player:
        assert player.frame_count == 1


def test_overwrite_refuses_a_file_this_process_is_replaying(tmp_path, monkeypatch):
    monkeypatch.delenv("HDF5_USE_FILE_LOCKING", raising=False)
    path = tmp_path / "run.h5"
    with Recorder(path, masses=np.ones(4)) as recorder:
        recorder.append(np.zeros((4, 3)), 0.0, 0)
    with Player(path) as player:
        with pytest.raises(RecordingError, match="open elsewhere"):
            Recorder(path, masses=np.ones(4), overwrite=True)
        assert player.read_frame(0).shape == (4, 3)
    with RecordingFile(path) as recording:
        assert recording.frame_count == 1


def test_a_file_system_without_locks_still_records(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, command, argument=0):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "fcntl", no_locks)
    monkeypatch.setattr(fcntl, "flock", no_locks)
    path = tmp_path / "run.h5"
    path.write_bytes(b"old")
    with Recorder(path, masses=np.ones(4), overwrite=True) as recorder:
        recorder.append(np.zeros((4, 3)), 0.0, 0)
    with RecordingFile(path) as recording:
        assert recording.frame_count == 1 and not recording.being_written
