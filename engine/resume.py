"""Continuing a recorded run, by its public name; it is ``engine/live/resume.py``."""

from .live.resume import resume

__all__ = ["resume"]
