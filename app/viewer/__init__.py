"""The desktop viewer (``orrery-viewer``): pyglet window, moderngl renderer, imgui-bundle panels.
Importing this package needs no display; ``main`` checks for one before opening a window."""

from ._main import main

__all__ = ["main"]
