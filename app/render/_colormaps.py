"""Colour maps: matplotlib's perceptually uniform maps, shipped as 256-entry tables in
``assets/colormaps/`` (so the viewer needs no matplotlib), and their 1D textures."""

from __future__ import annotations

import functools
import weakref
from importlib import resources

import numpy as np


def _folder():
    return resources.files("orrery") / "assets" / "colormaps"


@functools.cache
def colour_maps() -> tuple[str, ...]:
    """The names of the shipped colour maps."""
    return tuple(sorted(entry.name[:-4] for entry in _folder().iterdir()
                        if entry.name.endswith(".csv")))


@functools.cache
def colour_map(name: str) -> np.ndarray:
    """(256, 3) float32 display colours of the map ``name``."""
    text = (_folder() / f"{name}.csv").read_text()
    return np.loadtxt(text.splitlines(), delimiter=",", comments="#", dtype=np.float32)


_textures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def colour_map_texture(ctx, name: str):
    """The map as a 256 x 1 RGB float texture with linear filtering, made once per context."""
    cache = _textures.setdefault(ctx, {})
    if name not in cache:
        texture = ctx.texture((256, 1), 3, colour_map(name).tobytes(), dtype="f4")
        texture.repeat_x = texture.repeat_y = False
        cache[name] = texture
    return cache[name]
