"""GL contexts without a window: EGL on a GPU driver or on Mesa's software renderer."""

from __future__ import annotations

import os


def headless_context(*, libgl: str | None = None, libegl: str | None = None):
    """A standalone moderngl context through EGL (OpenGL 3.3 core or later).

    ``libgl``/``libegl`` name the GL and EGL libraries where the loader cannot find them (the
    H200 machine's image lacks the glvnd loaders); ``ORRERY_LIBGL``/``ORRERY_LIBEGL`` do the
    same from the environment.
    """
    import moderngl

    options = {"backend": "egl", "require": 330}
    libgl = libgl or os.environ.get("ORRERY_LIBGL")
    libegl = libegl or os.environ.get("ORRERY_LIBEGL")
    if libgl:
        options["libgl"] = libgl
    if libegl:
        options["libegl"] = libegl
    return moderngl.create_standalone_context(**options)


def describe(ctx) -> str:
    info = ctx.info
    return f"{info.get('GL_RENDERER', '?')} (OpenGL {info.get('GL_VERSION', '?')})"
