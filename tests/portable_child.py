"""What tests/test_portable.py runs in a child Python, once with ``ORRERY_PORTABLE=1`` and once
without (the paths are chosen when ``orrery.engine.portable`` is imported, so each mode needs a
fresh process). Writes into the folder named by its argument:

- ``chosen.json``: ``portable.CHOSEN``;
- ``run.h5``: a recording made by ``orrery run --record``;
- ``replayed.npz``: every frame of it as the Player reads it, with its times and steps;
- ``followed.json``: what a Player saw of a recording while this process's Recorder wrote it.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from orrery.app.cli import main
from orrery.engine import portable
from orrery.engine.recording import Player

RUN = ["run", "--scenario", "plummer", "--n", "300", "--solver", "cpu-direct", "--seed", "4",
       "--steps", "40", "--every", "4", "--keyframe-every", "3"]
FOLLOWED_FRAMES = 30
FOLLOWED_N = 64


def record_and_replay(folder: Path) -> None:
    assert main([*RUN, "--record", str(folder / "run.h5")]) == 0
    with Player(folder / "run.h5") as player:
        frames = np.stack([player.read_frame(i) for i in range(player.frame_count)])
        times = [player.time_of(i) for i in range(player.frame_count)]
        steps = [player.step_of(i) for i in range(player.frame_count)]
    np.savez(folder / "replayed.npz", frames=frames, times=times, steps=steps)


# A writer in its own process (it inherits ORRERY_PORTABLE): commits its first frame, says so,
# then writes one every 20 ms and closes the file.
_WRITER = f"""
import sys, time
import numpy as np
from orrery.engine.recording import Recorder
with Recorder(sys.argv[1], masses=np.ones({FOLLOWED_N}), flush_seconds=0.01) as recorder:
    recorder.append(np.zeros(({FOLLOWED_N}, 3), np.float32), 0.0, 0)
    while recorder.frames_committed < 1:
        time.sleep(0.01)
    print("started", flush=True)
    sys.stdin.readline()
    for step in range(1, {FOLLOWED_FRAMES}):
        time.sleep(0.02)
        recorder.append(np.full(({FOLLOWED_N}, 3), step, np.float32), float(step), step)
"""


def follow_a_live_recording(folder: Path) -> dict:
    """While another process records, a Player plays the file: it must see it live, show its
    frames as they arrive, and see it end."""
    path = folder / "live.h5"
    seen = {"steps_shown": []}
    with subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as writer:
        assert writer.stdout.readline() == "started\n"
        with Player(path, speed=1000.0) as player:
            seen["live_at_open"] = player.live
            writer.stdin.write("\n")
            writer.stdin.flush()
            player.play()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (player.live or
                                                   player.position < FOLLOWED_FRAMES - 1):
                frame = player.latest()
                if frame is not None and frame.step not in seen["steps_shown"]:
                    seen["steps_shown"].append(frame.step)
                time.sleep(0.005)
            seen["live_at_end"] = player.live
            seen["frames"] = player.frame_count
            seen["last_frame"] = np.unique(player.read_frame(player.frame_count - 1)).tolist()
    return seen


if __name__ == "__main__":
    out = Path(sys.argv[1])
    (out / "chosen.json").write_text(json.dumps(portable.CHOSEN))
    record_and_replay(out)
    (out / "followed.json").write_text(json.dumps(follow_a_live_recording(out)))
