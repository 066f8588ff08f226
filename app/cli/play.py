"""``orrery play FILE``: replay a recording in the viewer (``orrery-viewer --play FILE``)."""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

from ...engine.recording import RecordingFile


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
    viewer_main, why_not = _viewer_entry_point()
    if viewer_main is None:
        print(f"orrery play: the viewer is not available here ({why_not}); install it with "
              f"pip install 'orrery[viewer]', or print what the recording holds with "
              f"`orrery info {args.file}`", file=sys.stderr)
        return 1
    return int(viewer_main(["--play", args.file]) or 0)


def _viewer_entry_point():
    """``(function, None)`` for the ``orrery-viewer`` console entry point, or ``(None, why)``."""
    found = entry_points(group="console_scripts", name="orrery-viewer")
    if not found:
        return None, "no orrery-viewer entry point is installed"
    try:
        return next(iter(found)).load(), None
    except ImportError as error:
        return None, f"its packages are missing: {error}"
