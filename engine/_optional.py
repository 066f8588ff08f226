"""Importing packages that a feature needs but Orrery may run without: every such import goes
through :func:`require`, which turns a missing package into one line naming the pip extra that
installs it (or, for a dependency of orrery itself, saying the install is incomplete), instead of
a bare ``ModuleNotFoundError`` and its traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import OrreryError

# Top-level import name -> (the name users know it by, the extra that installs it; None: a core
# dependency, missing only from a broken or partial install).
PACKAGES = {
    "cupy": ("CuPy", "cuda"),
    "cuda": ("cuda-python", "cuda"),  # cuda.bindings: CUDA-GL interop
    "dpctl": ("dpctl", "sycl"),
    "pynbody": ("pynbody", "formats"),
    "av": ("PyAV", "video"),
    "aiohttp": ("aiohttp", "serve"),
    "anywidget": ("anywidget", "jupyter"),
    "mpi4py": ("mpi4py", "mpi"),
    "matplotlib": ("matplotlib", "bench"),
    "numba": ("numba", "bench"),
    "pytreegrav": ("pytreegrav", "bench"),
    "rebound": ("rebound", "bench"),
    "jax": ("JAX", "frameworks"),  # jz-fmm's bench extra installs it too
    "torch": ("PyTorch", "frameworks"),
    "jztree": ("jztree", "bench"),
    "jzfmm": ("jzfmm", "bench"),
    "moderngl": ("moderngl", None),
    "pyglet": ("pyglet", None),
    "imgui_bundle": ("imgui-bundle", None),
    "OpenGL": ("PyOpenGL", None),
    "PIL": ("pillow", None),
}


class MissingPackageError(OrreryError, ImportError):
    """A package a feature needs cannot be imported; the message says how to install it."""


def require(name: str) -> ModuleType:
    """Import ``name`` (a package in :data:`PACKAGES` or one of its submodules), or raise
    :class:`MissingPackageError` with a one-line explanation."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise MissingPackageError(_explain(name.partition(".")[0], error)) from error


def missing(*names: str) -> str | None:
    """Why one of ``names`` cannot be imported here (the first that cannot), or None."""
    for name in names:
        try:
            require(name)
        except MissingPackageError as error:
            return str(error)
    return None


def _explain(package: str, error: ImportError) -> str:
    pip_name, extra = PACKAGES[package]
    absent = isinstance(error, ModuleNotFoundError) and (
        error.name == package or (error.name or "").startswith(package + "."))
    if not absent:  # installed, but it fails to load (a shared library, a dependency of its own)
        return f"{pip_name} is installed but cannot be imported ({error})"
    if extra is None:
        # Not `pip install orrery`: that name on PyPI is another project's.
        return (f"{pip_name} is not installed, though orrery depends on it: reinstall orrery from "
                f"its checkout (bash scripts/setup.sh, or pip install .)")
    return f"{pip_name} is not installed (pip install 'orrery[{extra}]')"
