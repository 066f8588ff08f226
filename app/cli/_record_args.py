"""The ``--record`` flags of ``orrery run`` and the recorder they open, kept apart from run.py so
recording stays one small, separate piece of that command."""

from __future__ import annotations

import argparse

from ...engine.errors import InvalidInputError
from ...engine.recording import Recorder


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("recording")
    group.add_argument("--record", metavar="FILE",
                       help="write a recording of the run to FILE (HDF5; must not exist yet)")
    group.add_argument("--every", type=int, default=10, metavar="K",
                       help="record a frame every K steps, plus the initial state (default: 10)")
    group.add_argument("--record-precision", choices=("f32", "f16"), default="f32",
                       help="stored precision of recorded positions (default: f32; f16 halves "
                            "the file)")
    group.add_argument("--record-velocities", action="store_true",
                       help="also record velocities")
    group.add_argument("--record-flush", type=float, default=2.0, metavar="SECONDS",
                       help="commit recorded frames to disk at least this often; a killed run "
                            "keeps every frame committed (default: 2)")


def open_recorder(args: argparse.Namespace, simulation, *, scenario: str,
                  source: dict | None = None) -> Recorder | None:
    """The recorder ``args`` ask for (None without ``--record``)."""
    if not args.record:
        return None
    if args.every < 1:
        raise InvalidInputError(f"--every must be at least 1, got {args.every}")
    return Recorder.for_simulation(args.record, simulation, scenario=scenario, source=source,
                                   dtype=args.record_precision, velocities=args.record_velocities,
                                   flush_seconds=args.record_flush)

