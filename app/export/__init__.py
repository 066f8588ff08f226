"""Pictures that leave Orrery: movies (PyAV) of recordings, snapshot sequences and live runs,
rendered off screen along camera paths."""

from ._movie import (FileFrames, FrameSequence, LiveFrames, MovieRenderer, MovieSettings,
                     parse_size, render_movie, source_index)
from ._video import VideoError, VideoWriter, read_video

__all__ = ["FileFrames", "FrameSequence", "LiveFrames", "MovieRenderer", "MovieSettings",
           "VideoError", "VideoWriter", "parse_size", "read_video", "render_movie",
           "source_index"]
