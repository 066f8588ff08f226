"""Shader sources from the ``shaders/`` folder beside the renderer, read once, and programs built
once per GL context."""

from __future__ import annotations

import functools
import weakref
from importlib import resources


@functools.cache
def shader_source(name: str) -> str:
    """The text of ``shaders/NAME`` (cached for the life of the process)."""
    return (resources.files(__package__) / "shaders" / name).read_text()


_programs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def program(ctx, vertex: str, fragment: str):
    """A linked program from two shader files, built once per context."""
    cache = _programs.setdefault(ctx, {})
    key = (vertex, fragment)
    if key not in cache:
        cache[key] = ctx.program(vertex_shader=shader_source(vertex),
                                 fragment_shader=shader_source(fragment))
    return cache[key]
