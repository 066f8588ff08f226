"""Continuing a recorded run, by its public name; it is ``engine/live/resume.py``."""

from .live.resume import keyframe_start, resume

__all__ = ["keyframe_start", "resume"]
