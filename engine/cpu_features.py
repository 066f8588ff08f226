"""The CPU side of this machine as the native module sees it: which SIMD levels its kernels were
built for, which one runs here (the widest the CPU has, lowered by ``ORRERY_SIMD`` or an
explicit request), and how the module was built."""

from __future__ import annotations

from .. import _native
from .errors import InvalidInputError, SolverUnavailableError

SIMD_LEVELS = ("scalar", "avx2", "avx512")


def available_simd_levels() -> list[str]:
    """The SIMD levels this CPU and build can run, lowest first."""
    return list(_native.simd_levels())


def simd_level(requested: str | None = None) -> dict:
    """The level a native CPU kernel runs at for ``requested`` (``None``: ``ORRERY_SIMD`` if set,
    else the widest available), with its target block sizes and how it computes 1/sqrt.

    Raises :class:`InvalidInputError` for an unknown name and :class:`SolverUnavailableError` for
    a level this CPU or build lacks.
    """
    try:
        return dict(_native.simd_level(requested or ""))
    except ValueError as error:
        raise InvalidInputError(str(error)) from None
    except RuntimeError as error:
        raise SolverUnavailableError(str(error)) from None


def build_info() -> dict:
    """Compiler, flags, SIMD levels compiled and the CPU's own level (``_native.build_info``)."""
    return dict(_native.build_info())


def hardware_threads() -> int:
    return int(_native.hardware_threads())
