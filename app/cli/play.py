"""``orrery play FILE``: replay a recording in the viewer (``orrery-viewer --play FILE``)."""

from __future__ import annotations

from ...engine.recording import RecordingFile
from ..viewer import main as viewer_main


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("play", help="replay a recording in the viewer",
                                   description="Replay a recording in the viewer window "
                                               "(the same as orrery-viewer --play FILE).")
    parser.add_argument("file", help="recording file (.h5)")
    parser.set_defaults(handler=run)


def run(args) -> int:
    # Check the file first: a bad file gets the same clear error as `orrery info`, not a window.
    with RecordingFile(args.file):
        pass
    return int(viewer_main(["--play", args.file]) or 0)
