"""GL contexts without a window: EGL on a GPU driver or on Mesa's software renderer, and the
platform's own standalone context where EGL is not the way (``engine.portable``)."""

from __future__ import annotations

import os

from ...engine import portable
from ...engine._optional import require
from ...engine.errors import OrreryError

EGL_PACKAGES = "apt: libegl1 libegl-mesa0 libgl1-mesa-dri"


class GLContextError(OrreryError, RuntimeError):
    """No OpenGL context could be created (no EGL driver, or a library path that does not load)."""


def headless_context(*, libgl: str | None = None, libegl: str | None = None):
    """A standalone moderngl context (OpenGL 3.3 core or later) through EGL on Linux, else the
    platform's own (CGL on macOS, WGL on Windows; under ``ORRERY_PORTABLE=1`` on Linux, GLX,
    which needs a display).

    ``libgl``/``libegl`` name the GL and EGL libraries where the loader cannot find them (the
    H200 machine's image lacks the glvnd loaders); ``ORRERY_LIBGL``/``ORRERY_LIBEGL`` do the
    same from the environment. Raises :class:`GLContextError` saying what to fix.
    """
    moderngl = require("moderngl")
    options = {"require": 330}
    if portable.HEADLESS_GL_BACKEND:
        options["backend"] = portable.HEADLESS_GL_BACKEND
    libgl = libgl or os.environ.get("ORRERY_LIBGL")
    libegl = libegl or os.environ.get("ORRERY_LIBEGL")
    if libgl:
        options["libgl"] = libgl
    if libegl:
        options["libegl"] = libegl
    try:
        return moderngl.create_standalone_context(**options)
    except Exception as error:  # glcontext raises a bare Exception ("/x not loaded", "eglInitialize failed")
        chosen = ", ".join(f"{key}={options[key]}" for key in ("libgl", "libegl") if key in options)
        if chosen:
            hint = f"check {chosen} (--libgl/--libegl or ORRERY_LIBGL/ORRERY_LIBEGL)"
        elif portable.HEADLESS_GL_BACKEND == "egl":
            hint = f"install EGL and Mesa ({EGL_PACKAGES})"
        else:  # GLX on Linux under ORRERY_PORTABLE=1 needs an X server
            hint = "check the OpenGL driver (and on Linux DISPLAY, or run under xvfb-run)"
        # The backend is moderngl's name ("egl"); the message names the API.
        through = (portable.HEADLESS_GL_BACKEND or "").upper() or "the platform's own standalone context"
        raise GLContextError(f"no headless OpenGL 3.3 context through {through} ({error}); "
                             f"{hint}") from None


# GL_RENDERER names of rasterisers that run on the CPU (Mesa's llvmpipe, softpipe, swrast).
SOFTWARE_RENDERERS = ("llvmpipe", "softpipe", "swrast")


def is_software(ctx) -> bool:
    """Whether ``ctx`` draws on the CPU: there a full-screen pass costs what the CPU would."""
    renderer = str(ctx.info.get("GL_RENDERER", "")).lower()
    return any(name in renderer for name in SOFTWARE_RENDERERS)


def describe(ctx) -> str:
    info = ctx.info
    return f"{info.get('GL_RENDERER', '?')} (OpenGL {info.get('GL_VERSION', '?')})"
