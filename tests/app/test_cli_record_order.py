"""``orrery run --record-order priority``: the same run as in the natural order, stored through
one permutation, continued bit for bit by --resume, and named by ``orrery info``."""

import numpy as np

from orrery.app.cli import main
from orrery.engine.recording import RecordingFile

_RUN = ["--solver", "cpu-direct", "--n", "64", "--every", "10", "--keyframe-every", "5",
        "--dt", "0.01"]


def _run(tmp_path, name, *extra):
    path = tmp_path / name
    assert main(["run", "--quiet", "--record", str(path), *extra]) == 0
    return path


def test_a_priority_run_is_the_natural_run_with_its_particles_permuted(tmp_path):
    natural = _run(tmp_path, "natural.h5", "--steps", "60", "--scenario", "galaxy-collision",
                   *_RUN)
    priority = _run(tmp_path, "priority.h5", "--steps", "60", "--scenario", "galaxy-collision",
                    "--record-order", "priority", *_RUN)
    with RecordingFile(natural) as a, RecordingFile(priority) as b:
        assert (a.order, b.order) == ("natural", "priority")
        assert a.frame_count == b.frame_count == 7
        assert not np.array_equal(a.read(3), b.read(3))  # stored in another order ...
        for index in range(a.frame_count):                # ... the same frames, bit for bit
            assert b.in_run_order(b.read(index)).tobytes() == a.read(index).tobytes()
        assert np.array_equal(b.in_run_order(b.population), a.population)
        assert b.in_run_order(b.masses).tobytes() == a.masses.tobytes()
        for index in range(a.keyframe_count):
            for state_a, state_b in zip(a.read_keyframe(index), b.read_keyframe(index)):
                assert state_a.tobytes() == state_b.tobytes()


def test_resume_from_a_priority_recording_continues_it_bit_for_bit(tmp_path):
    whole = _run(tmp_path, "whole.h5", "--steps", "100", "--record-order", "priority", *_RUN)
    with RecordingFile(whole) as recording:
        frame = int(np.flatnonzero(recording.steps == 50)[0])
    resumed = _run(tmp_path, "resumed.h5", "--resume", str(whole), "--from-frame",
                   str(frame + 2), "--steps", "30", "--every", "10", "--keyframe-every", "5")
    with RecordingFile(whole) as a, RecordingFile(resumed) as b:
        assert b.order == "priority"  # inherited, through the same permutation
        assert np.array_equal(a.permutation, b.permutation)
        offset = int(np.flatnonzero(a.steps == 70)[0])
        assert b.steps[0] == 70 and b.steps[-1] == 100
        for index in range(b.frame_count):
            assert a.read(offset + index).tobytes() == b.read(index).tobytes()
        last_a, last_b = a.keyframe_count - 1, b.keyframe_count - 1
        assert a.keyframe_steps[last_a] == b.keyframe_steps[last_b] == 100
        for state_a, state_b in zip(a.read_keyframe(last_a), b.read_keyframe(last_b)):
            assert state_a.tobytes() == state_b.tobytes()


def test_a_resumed_run_may_change_the_order(tmp_path):
    whole = _run(tmp_path, "whole.h5", "--steps", "20", "--record-order", "priority", *_RUN)
    resumed = _run(tmp_path, "natural.h5", "--resume", str(whole), "--steps", "10",
                   "--record-order", "natural")
    with RecordingFile(whole) as a, RecordingFile(resumed) as b:
        assert b.order == "natural"
        assert a.in_run_order(a.read(a.frame_count - 1)).tobytes() == b.read(0).tobytes()


def test_info_says_which_order_a_recording_uses(tmp_path, capsys):
    for order in ("natural", "priority"):
        path = _run(tmp_path, f"{order}.h5", "--steps", "10", "--record-order", order, *_RUN)
        capsys.readouterr()
        assert main(["info", str(path)]) == 0
        lines = [line for line in capsys.readouterr().out.splitlines()
                 if line.startswith("order:")]
        assert len(lines) == 1 and lines[0].split()[1] == order
