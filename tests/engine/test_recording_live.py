"""Following a recording while another process writes it: every committed frame, in order,
never a partial one."""

import contextlib
import subprocess
import sys
import time

import numpy as np

from orrery.engine.recording import Player, RecordingFile

N = 500
FRAMES = 60

# Frame k holds the value k everywhere, so a partial frame (a torn write, or positions of
# another frame) shows as a wrong value.
_WRITER = f"""
import sys, time
import numpy as np
from orrery.engine.recording import Recorder
with Recorder(sys.argv[1], masses=np.ones({N}), flush_seconds=0.02, keyframe_dtype="float64",
              keyframe_every=0) as recorder:
    print("started", flush=True)
    sys.stdin.readline()
    for k in range({FRAMES}):
        recorder.append(np.full(({N}, 3), k, np.float32), 0.5 * k, 10 * k)
        if k % 7 == 0:
            recorder.append_keyframe(np.full(({N}, 3), k, np.float64),
                                     np.full(({N}, 3), -k, np.float64), 0.5 * k, 10 * k)
        time.sleep(0.01)
"""


@contextlib.contextmanager
def _writer(path):
    with subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as writer:
        try:
            assert writer.stdout.readline() == "started\n"
            yield writer
        finally:
            writer.kill()


def _go(writer):
    writer.stdin.write("\n")
    writer.stdin.flush()


def test_a_reader_following_a_live_file_sees_every_committed_frame_whole(tmp_path):
    path = tmp_path / "live.h5"
    with _writer(path) as writer:
        with RecordingFile(path) as recording:
            assert recording.being_written and recording.frame_count == 0
            _go(writer)
            seen, deadline = 0, time.monotonic() + 60
            counts = set()
            while time.monotonic() < deadline:
                writing = recording.being_written
                recording.refresh()
                counts.add(recording.frame_count)
                for index in range(seen, recording.frame_count):
                    assert recording.steps[index] == 10 * index
                    frame = recording.read(index)
                    assert (frame == index).all(), f"frame {index} is not whole"
                seen = recording.frame_count
                if not writing:
                    break
                time.sleep(0.005)
            assert seen == FRAMES and not recording.being_written
            assert len(counts) > 2  # frames arrived over several refreshes, not all at the end
            assert recording.keyframe_steps.tolist() == [10 * k for k in range(0, FRAMES, 7)]
            pos, vel = recording.read_keyframe(3)
            assert (pos == 21).all() and (vel == -21).all()
        assert writer.wait(timeout=30) == 0


def test_the_player_follows_a_live_file_to_its_end(tmp_path):
    path = tmp_path / "live.h5"
    with _writer(path) as writer:
        with Player(path, speed=1000) as player:
            assert player.live
            player.play()
            _go(writer)
            shown, deadline = [], time.monotonic() + 60
            while time.monotonic() < deadline:
                frame = player.latest()
                if frame is not None and (not shown or frame.step != shown[-1]):
                    assert (frame.positions == frame.step // 10).all()
                    shown.append(frame.step)
                if not player.live and not player.playing and shown and shown[-1] == 590:
                    break
                time.sleep(0.002)
            assert shown == sorted(shown) and shown[-1] == 10 * (FRAMES - 1)
            assert len(shown) > 5 and player.frame_count == FRAMES
        assert writer.wait(timeout=30) == 0


def test_a_player_in_the_writers_process_follows_its_recorder(tmp_path):
    """In the process that writes a file, HDF5 opens it by handing back the writer's own open
    file rather than refusing it as already open for write, so the reader once took it for a
    finished recording and never looked for new frames."""
    from orrery.engine.recording import Recorder

    path = tmp_path / "here.h5"
    with Recorder(path, masses=np.ones(N), flush_seconds=0.02) as recorder:
        recorder.append(np.full((N, 3), 0, np.float32), 0.0, 0)
        deadline = time.monotonic() + 30
        while recorder.frames_committed < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        player = Player(RecordingFile(path))
        try:
            assert player.live and player.frame_count == 1
            for k in range(1, 5):
                recorder.append(np.full((N, 3), k, np.float32), 0.5 * k, 10 * k)
            while player.frame_count < 5 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert player.frame_count == 5
            assert [player.read_frame(k)[0, 0] for k in range(5)] == [0, 1, 2, 3, 4]
            assert player.step_of(4) == 40
        finally:
            player.close()
