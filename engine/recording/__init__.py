"""Recording and replaying runs: one HDF5 file per run (layout in ``docs/recording-format.md``).

``Recorder`` writes frames on its own thread behind a bounded queue, crash-safe up to the last
flush; ``Player`` replays a file as a :class:`~orrery.engine.frames.FrameSource`;
``RecordingFile`` opens and validates a file for reading frames directly. Continuing a recorded
run is ``engine.resume``: this package builds no simulation.
"""

from ..errors import NotARecordingError, RecordingError
from ._format import (FORMAT_NAME, FORMAT_VERSION, MAX_FRAMES, MAX_PARTICLES, NATURAL, ORDER,
                      ORDERS, PRIORITY, default_keyframe_every)
from ._player import Player
from ._reader import RecordingFile
from ._recorder import Recorder, keyframe_due, run_attributes

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "MAX_FRAMES", "MAX_PARTICLES", "NATURAL", "ORDER",
           "ORDERS", "PRIORITY", "NotARecordingError", "Player", "Recorder", "RecordingError",
           "RecordingFile", "keyframe_due", "run_attributes"]
