"""Pictures that leave Orrery: movies (PyAV) of recordings, snapshot sequences and live runs,
rendered off screen along camera paths."""

from ._movie import (FileFrames, FrameSequence, LiveFrames, MovieRenderer, MovieSettings,
                     MovieTimes, parse_size, render_movie, source_index, splat_device)
from ._video import EncodeTimes, VideoError, VideoWriter, read_video, segment_plan

__all__ = ["EncodeTimes", "FileFrames", "FrameSequence", "LiveFrames", "MovieRenderer",
           "MovieSettings", "MovieTimes", "VideoError", "VideoWriter", "parse_size", "read_video",
           "render_movie", "segment_plan", "source_index", "splat_device"]
