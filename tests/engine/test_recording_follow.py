"""Following a live recording never reports damage on a healthy file: a size looked up before
the writer's latest commit is looked up again, and many short follow sessions against a writer
in another process all succeed."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from orrery.engine.recording import Player, Recorder, RecordingFile

N = 5000


class _StaleOnce(type(Path())):
    """A path whose first ``stat`` answers the size the file had when it was made (what a
    reader sees when the writer commits between its size lookup and its read of the frames)."""

    stale_size: int

    def stat(self, *args, **kwargs):
        result = super().stat(*args, **kwargs)
        size, self.stale_size = self.stale_size, None
        if size is None:
            return result
        return os.stat_result((*result[:6], size, *result[7:]))


# Commits frames 0, then (after a line on stdin) frames 1 to 39, saying when each batch is
# committed; exits after one more line.
_BATCHES = f"""
import sys, time
import numpy as np
from orrery.engine.recording import Recorder
with Recorder(sys.argv[1], masses=np.ones({N}), flush_seconds=0.01) as recorder:
    for first, end in ((0, 1), (1, 40)):
        for step in range(first, end):
            recorder.append(np.full(({N}, 3), step, np.float32), float(step), step)
        while recorder.frames_committed < end:
            time.sleep(0.01)
        print(end, flush=True)
        sys.stdin.readline()
"""


def test_a_refresh_whose_size_lookup_came_before_the_writers_commit_takes_in_the_frames(
        tmp_path):
    path = tmp_path / "live.h5"
    with subprocess.Popen([sys.executable, "-c", _BATCHES, str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as writer:
        try:
            assert writer.stdout.readline() == "1\n"
            with RecordingFile(path) as recording:
                assert recording.frame_count == 1 and recording.being_written
                before = path.stat().st_size
                writer.stdin.write("\n")
                writer.stdin.flush()
                assert writer.stdout.readline() == "40\n"
                stale = _StaleOnce(path)
                stale.stale_size = before
                recording.path = stale
                assert recording.refresh() == 39
                assert (recording.read(39) == 39).all()
            writer.stdin.write("\n")
            writer.stdin.flush()
        finally:
            writer.kill()


_WRITER = f"""
import sys, time
import numpy as np
from orrery.engine.recording import Recorder
with Recorder(sys.argv[1], masses=np.ones({N}), flush_seconds=0.005) as recorder:
    print("started", flush=True)
    step = 0
    deadline = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < deadline:
        recorder.append(np.full(({N}, 3), step, np.float32), 0.1 * step, step)
        step += 1
        time.sleep(0.005)
"""


def test_many_short_follow_sessions_against_a_writer_report_no_damage(tmp_path):
    path = tmp_path / "live.h5"
    with subprocess.Popen([sys.executable, "-c", _WRITER, str(path), "5"],
                          stdout=subprocess.PIPE, text=True) as writer:
        try:
            assert writer.stdout.readline() == "started\n"
            sessions = 0
            while writer.poll() is None:
                with RecordingFile(path) as recording:  # a fresh open: the size races too
                    for _ in range(3):
                        recording.refresh()
                        last = recording.frame_count - 1
                        if last >= 0:
                            assert (recording.read(last) == recording.steps[last]).all()
                        time.sleep(0.003)
                if sessions % 5 == 0:
                    with Player(path) as player:
                        time.sleep(0.05)
                        player.latest()  # raises what the follower's thread met
                sessions += 1
        finally:
            writer.kill()
    assert writer.returncode == 0 and sessions > 20
