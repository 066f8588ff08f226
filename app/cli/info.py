"""``orrery info FILE``: what a recording (or another code's snapshot) holds, without opening a
window."""

from __future__ import annotations

import numpy as np

from ...engine import snapshots
from ...engine.errors import NotARecordingError
from ...engine.recording import RecordingFile


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("info", help="print what a recording or snapshot holds",
                                   description="Print what a recording file holds: particles, "
                                               "frames, times, precision and the run's settings; "
                                               "or, for another code's snapshot (read through "
                                               "pynbody), its format, families and properties.")
    parser.add_argument("file", help="recording file (.h5) or snapshot")
    parser.set_defaults(handler=run)


def run(args) -> int:
    try:
        recording = RecordingFile(args.file)
    except NotARecordingError as not_a_recording:
        # Another code's snapshot, when pynbody reads it (a damaged recording is not tried).
        if not snapshots.looks_like_snapshot(args.file):
            raise not_a_recording
        print(snapshots.describe(args.file))
        return 0
    with recording:
        print(describe(recording))
    return 0


def describe(recording: RecordingFile) -> str:
    """A human-readable summary of ``recording``."""
    attrs = dict(recording.attributes)
    for shown in ("position_encoding", "compression", "particle_order"):  # on their lines
        attrs.pop(shown, None)
    count = recording.frame_count
    lines = [
        f"file:          {recording.path} ({recording.file_size / 1e6:.1f} MB)",
        f"format:        {attrs.pop('format')} version {attrs.pop('format_version')}, written by "
        f"Orrery {attrs.pop('orrery_version', '?')} on {attrs.pop('created_utc', '?')}",
        f"state:         {_state(recording)}",
        f"particles:     {recording.n}, total mass {float(np.sum(recording.masses)):.6g}",
        "populations:   " + ", ".join(
            f"{name} ({int(np.count_nonzero(recording.population == label))})"
            for label, name in enumerate(recording.population_names)),
        f"frames:        {count} x {recording.encoding} positions"
        + (" + velocities" if recording.has_velocities else "")
        + ("" if recording.compression == "none" else f", compressed ({recording.compression})")
        + f" ({recording.frame_bytes / 1e6:.3g} MB a frame, {recording.frames_per_chunk} a chunk)",
        f"order:         {_ORDER_TEXT[recording.order]}",
    ]
    if count:
        strides = np.unique(np.diff(recording.steps)) if count > 1 else np.array([], dtype=int)
        every = f", every {strides[0]} steps" if strides.size == 1 else ""
        lines.append(f"time:          {recording.times[0]:g} .. {recording.times[-1]:g} "
                     f"(steps {recording.steps[0]} .. {recording.steps[-1]}{every})")
    if recording.keyframe_count:
        steps = recording.keyframe_steps
        lines.append(f"keyframes:     {recording.keyframe_count} x {recording.keyframe_dtype.name} "
                     f"states at steps {steps[0]} .. {steps[-1]} (orrery run --resume)")
    for name in ("scenario", "solver", "solver_params", "integrator", "dt", "softening", "G",
                 "units"):
        if name in attrs:
            lines.append(f"{name + ':':<15}{_text(attrs.pop(name))}")
    lines += [f"{name + ':':<15}{_text(value)}" for name, value in sorted(attrs.items())]
    return "\n".join(lines)


_ORDER_TEXT = {
    "natural": "natural (the run's order)",
    "priority": "priority (one fixed random permutation: the first K particles of every frame "
                "are a fair sample)"}

_UNCLEAN = ("writer stopped without closing (killed, or a write failed): holds the frames "
            "committed before that; plain h5py opens it with h5py.File(path, 'r', swmr=True)")


def _state(recording: RecordingFile) -> str:
    if recording.closed_cleanly:
        return "closed cleanly"
    if recording.being_written:
        return "being recorded now: shows the frames committed so far"
    return _UNCLEAN


def _text(value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    return str(value)
