"""The CPU side of this machine as the native module sees it: which SIMD levels its kernels were
built for, which one runs here (the widest the CPU has, lowered by ``ORRERY_SIMD`` or an
explicit request), and how the module was built."""

from __future__ import annotations

import os

from .. import _native
from .errors import InvalidInputError, SolverUnavailableError

# avx2 and avx512 on x86-64 builds, neon and sve on AArch64 ones.
SIMD_LEVELS = ("scalar", "avx2", "avx512", "neon", "sve")


def available_simd_levels() -> list[str]:
    """The SIMD levels this CPU and build can run, lowest first."""
    return list(_native.simd_levels())


def simd_level(requested: str | None = None) -> dict:
    """The level a native CPU kernel runs at for ``requested`` (``None``: ``ORRERY_SIMD`` if set,
    else the widest available), the table its kernels come from (``kernels``: the level's name,
    or for ``sve`` the vector length's table, ``sve128``, ``sve256`` or ``sve512``), with its
    target block sizes and how it computes 1/sqrt.

    Raises :class:`InvalidInputError` for an unknown name and :class:`SolverUnavailableError` for
    a level this CPU or build lacks.
    """
    check_simd_environment()
    try:
        return dict(_native.simd_level(requested or ""))
    except ValueError as error:
        raise InvalidInputError(str(error)) from None
    except RuntimeError as error:
        raise SolverUnavailableError(str(error)) from None


def build_info() -> dict:
    """Compiler, flags, SIMD levels compiled and the CPU's own level (``_native.build_info``)."""
    check_simd_environment()
    return dict(_native.build_info())


def check_simd_environment() -> None:
    """Refuse an ``ORRERY_SIMD`` that is not text (the native module reads it as UTF-8), with
    :class:`InvalidInputError` naming it; the native module checks the name itself."""
    value = os.environb.get(b"ORRERY_SIMD") if os.supports_bytes_environ else None
    if value is not None:
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            names = f"{', '.join(SIMD_LEVELS[:-1])} or {SIMD_LEVELS[-1]}"
            raise InvalidInputError(f"ORRERY_SIMD must be {names}, got {value!r}") from None


def hardware_threads() -> int:
    return int(_native.hardware_threads())
