"""The ``--record`` flags of ``orrery run`` and the recorder they open, kept apart from run.py so
recording stays one small, separate piece of that command."""

from __future__ import annotations

import argparse
import sys

from ...engine.errors import InvalidInputError, RecordingError
from ...engine.frame_encoding import FLOAT32
from ...engine.recording import (NATURAL, ORDER, ORDERS, Recorder, default_keyframe_every,
                                  keyframe_due)


DEFAULT_PRECISION = "f32"
# --record-precision's names of the stored position encodings (frame_encoding.ENCODINGS).
PRECISION_NAMES = {"float32": "f32", "float16": "f16", "fixed16": "fixed16"}


def inherit_record_format(args: argparse.Namespace, attributes: dict) -> None:
    """With --resume: record in the resumed recording's precision, compression and particle
    order unless --record-precision, --record-compression or --record-order say otherwise (a
    resumed f16 run wrote f32)."""
    if args.record_order is None:
        order = attributes.get(ORDER)
        args.record_order = order if isinstance(order, str) and order in ORDERS else NATURAL
    if args.record_precision is None:
        args.record_precision = PRECISION_NAMES.get(attributes.get("position_encoding"),
                                                    DEFAULT_PRECISION)
    if args.record_compression is None:
        compression = attributes.get("compression")
        args.record_compression = compression if isinstance(compression, str) else "none"


# Defaults of the recording flags whose argparse default is None, so that one given without
# --record is told apart from its default (resolve_record_arguments puts these in).
EVERY = 10
FLUSH_SECONDS = 2.0
FSYNC_EVERY = 0
# The flags that shape a recording, by their attribute: without --record they do nothing.
RECORDING_FLAGS = {"every": "--every", "record_precision": "--record-precision",
                   "record_compression": "--record-compression", "record_order": "--record-order",
                   "record_velocities": "--record-velocities", "record_flush": "--record-flush",
                   "keyframe_every": "--keyframe-every", "record_fsync": "--record-fsync"}


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("recording")
    group.add_argument("--record", metavar="FILE",
                       help="write a recording of the run to FILE (HDF5; must not exist yet)")
    group.add_argument("--every", type=int, default=None, metavar="K",
                       help=f"record a frame every K steps, plus the initial state (default: {EVERY})")
    group.add_argument("--record-precision", choices=("f32", "f16", "fixed16"), default=None,
                       help="stored precision of recorded positions (default: f32, or with "
                            "--resume the resumed recording's; f16 halves "
                            "the file; fixed16 too, as 16-bit integers on each frame's bounding "
                            "box: an absolute error of extent/131070 per axis). A GPU run "
                            "narrows frames on the device and downloads only these bytes")
    group.add_argument("--record-compression", default=None, metavar="NAME",
                       help="compress frames through hdf5plugin: none (default, or with "
                            "--resume the resumed recording's), blosc2, "
                            "blosc2-bitshuffle (lossless), or zfp=ACCURACY (f32 only, lossy "
                            "within ACCURACY)")
    group.add_argument("--record-order", choices=ORDERS, default=None,
                       help="order of the particles in the file: natural (default, or with "
                            "--resume the resumed recording's), or priority: one fixed random "
                            "permutation, so the first K particles of every frame are a fair "
                            "sample and a player can read only those (ADR 0280)")
    group.add_argument("--record-velocities", action="store_true",
                       help="also record velocities")
    group.add_argument("--record-flush", type=float, default=None, metavar="SECONDS",
                       help="commit recorded frames to disk at least this often (at most 3600); "
                            f"a killed run keeps every frame committed (default: {FLUSH_SECONDS:g})")
    group.add_argument("--keyframe-every", type=int, default=None, metavar="K",
                       help="store the whole state every K recorded frames and at the end, to "
                            "continue the run with --resume (0: only at the end; default: as "
                            "many frames as make keyframes a tenth of the file, 40 for f16 "
                            "frames of an f32 run, 20 for f32 frames)")
    group.add_argument("--record-fsync", type=int, default=None, metavar="N",
                       help="commit and fsync the recording every N frames, so a power loss "
                            f"keeps them too (default: {FSYNC_EVERY}, the OS writes back when it "
                            "chooses)")


def resolve_record_arguments(args: argparse.Namespace) -> None:
    """Refuse recording flags given without ``--record`` (they would do nothing, silently),
    then put in the defaults of those left unset."""
    if args.record is None:
        given = [flag for attribute, flag in RECORDING_FLAGS.items()
                 if vars(args)[attribute] not in (None, False)]
        if given:
            raise InvalidInputError(f"{', '.join(given)} shape{'s' if len(given) == 1 else ''} a "
                                    "recording: give --record FILE too, or leave "
                                    f"{'it' if len(given) == 1 else 'them'} out")
    for attribute, default in (("every", EVERY), ("record_flush", FLUSH_SECONDS),
                               ("record_fsync", FSYNC_EVERY)):
        if vars(args)[attribute] is None:
            vars(args)[attribute] = default


class CommandLineRecording:
    """The recording of one ``orrery run``: when writing fails (a full disk, say) the error is
    printed once, the file keeps the frames committed before, and the run goes on without
    recording; ``failed`` then tells the command to exit with status 1.

    Without a recorder (the ranks of a distributed run other than 0, or after a failure) it
    still reads the state a recorder would: in a distributed run each read is a gather every
    rank takes part in, so every rank follows the same frame and keyframe schedule."""

    def __init__(self, recorder: Recorder | None, *, velocities: bool, keyframe_every: int):
        self._recorder = recorder
        self._velocities = velocities
        self._keyframe_every = keyframe_every
        self._frames = 0
        self._last_keyframe_step: int | None = None
        self._closed: Recorder | None = None
        self.failed = False

    def append_simulation(self, simulation) -> None:
        keyframe = keyframe_due(self._frames, self._keyframe_every)
        self._frames += 1
        if keyframe:
            self._last_keyframe_step = simulation.steps
        if self._recorder is None:  # the reads Recorder.append_simulation makes, in its order
            if self._velocities:
                simulation.particles  # noqa: B018 - the gather
                return
            if keyframe:
                simulation.stage_state()
            simulation.stage_frame(FLOAT32)  # float32: a frame no encoding limit refuses
            return
        try:
            self._recorder.append_simulation(simulation)
        except (RecordingError, InvalidInputError) as error:  # InvalidInputError: a frame the
            self._stop(error)                                  # recording cannot represent

    def append_last_keyframe(self, simulation) -> None:
        """The run's final state as a keyframe (unless the last frame came with one)."""
        if self._last_keyframe_step == simulation.steps:
            return
        self._last_keyframe_step = simulation.steps
        if self._recorder is None:
            simulation.stage_state()
            return
        try:
            self._recorder.append_last_keyframe(simulation)
        except RecordingError as error:
            self._stop(error)

    def summary(self) -> str | None:
        """One line on what the recording cost the run: frames, how many came narrowed from
        the device, and whether the simulation ever waited for the disk (None on ranks that
        do not write)."""
        recorder = self._recorder or self._closed
        if recorder is None:
            return None
        stats = recorder.stats()
        waited = (f"the simulation waited for the disk {stats['queue_waits']} time(s), "
                  f"{stats['queue_wait_seconds']:.2f} s in all (queue of "
                  f"{stats['queue_capacity']} frames full)" if stats["queue_waits"]
                  else "the simulation never waited for the disk")
        writer = ", ".join(f"{stage} {stats[f'writer_{stage}_seconds']:.3f} s"
                           for stage in ("wait_for_copies", "write", "commit",
                                         "device_narrowing"))
        return (f"recorded {stats['frames_committed']} frame(s) ({stats['device_frames']} "
                f"narrowed on the device) and {stats['keyframes_appended']} keyframe(s) to "
                f"{recorder.path}: {waited}; writer thread: {writer}")

    def close(self) -> None:
        if self._recorder is not None:
            try:
                self._recorder.close()
            except RecordingError as error:
                self._stop(error)
            self._closed, self._recorder = self._recorder, None

    def _stop(self, error: Exception) -> None:
        recorder, self._recorder = self._recorder, None
        self.failed = True
        try:
            recorder.close()
        except RecordingError:
            pass  # the same failure, already in hand
        kept = "" if isinstance(error, RecordingError) else \
            f"; {recorder.path} keeps the {recorder.frames_committed} frame(s) before it"
        print(f"orrery run: {error}{kept}; the run goes on without recording",
              file=sys.stderr)

    def __enter__(self) -> CommandLineRecording:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def open_recorder(args: argparse.Namespace, simulation, *, scenario: str,
                  source: dict | None = None) -> CommandLineRecording | None:
    """The recording ``args`` ask for (None without ``--record``); ``source`` as for
    :meth:`Recorder.for_simulation`. A path that cannot be recorded to is a
    :class:`RecordingError` here, before the run starts."""
    if args.record is None:
        return None
    check_record_arguments(args)
    recorder = Recorder.for_simulation(
        args.record, simulation, scenario=scenario, source=source,
        dtype=args.record_precision or DEFAULT_PRECISION,
        compression=args.record_compression or "none", order=args.record_order or NATURAL,
        velocities=args.record_velocities, flush_seconds=args.record_flush,
        keyframe_every=args.keyframe_every, fsync_every=args.record_fsync)
    return CommandLineRecording(recorder, velocities=args.record_velocities,
                                keyframe_every=recorder.keyframe_every)


def keyframe_every(args: argparse.Namespace, simulation) -> int:
    """``--keyframe-every``, or the recorder's default cadence for this run's frames (what a
    rank that does not write needs to follow rank 0's keyframes)."""
    if args.keyframe_every is not None:
        return args.keyframe_every
    return default_keyframe_every(args.record_precision or DEFAULT_PRECISION,
                                  args.record_velocities,
                                  simulation.solver.dtype)


def check_record_arguments(args: argparse.Namespace) -> None:
    if args.every < 1:
        raise InvalidInputError(f"--every must be at least 1, got {args.every}")
    for flag, value in (("--keyframe-every", args.keyframe_every),
                        ("--record-fsync", args.record_fsync)):
        if value is not None and value < 0:
            raise InvalidInputError(f"{flag} must be 0 or more, got {value}")
