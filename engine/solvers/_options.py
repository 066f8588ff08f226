"""Solvers as records: a name, a description and an options table.

The same table validates ``make_solver`` keyword arguments, produces CLI flags and viewer
controls, and is written into recordings, so an option is declared once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import InvalidInputError, UnknownSolverError


@dataclass(frozen=True)
class Option:
    """One solver parameter. ``choices`` restricts values; ``minimum`` is inclusive unless
    ``exclusive_minimum``."""

    name: str
    type: type
    default: Any
    doc: str
    choices: tuple | None = None
    minimum: float | None = None
    exclusive_minimum: bool = False
    maximum: float | None = None

    def coerce(self, value):
        if value is None and self.default is None:
            return None
        if self.type is bool:
            if not isinstance(value, (bool, int)):
                raise InvalidInputError(f"{self.name} must be true or false, got {value!r}")
            value = bool(value)
        else:
            try:
                value = self.type(value)
            except (TypeError, ValueError):
                raise InvalidInputError(
                    f"{self.name} must be {self.type.__name__}, got {value!r}") from None
        if self.choices is not None and value not in self.choices:
            raise InvalidInputError(f"{self.name} must be one of {list(self.choices)}, got {value!r}")
        if self.minimum is not None:
            if value < self.minimum or (self.exclusive_minimum and value == self.minimum):
                relation = ">" if self.exclusive_minimum else ">="
                raise InvalidInputError(f"{self.name} must be {relation} {self.minimum}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise InvalidInputError(f"{self.name} must be <= {self.maximum}, got {value!r}")
        return value


PRECISION = Option("precision", str, "f32", "arithmetic precision", choices=("f32", "f64"))
SOFTENING = Option("softening", float, 0.01, "Plummer softening length (N-body units)", minimum=0.0)
THREADS = Option("threads", int, None, "CPU threads (default: all cores)", minimum=1)
THETA = Option("theta", float, 0.5, "opening angle: smaller is more accurate and slower",
               minimum=0.0, maximum=2.0)
ACCURACY = Option("accuracy", float, None,
                  "target RMS relative force error, e.g. 1e-3: the solver picks theta from the "
                  "accuracy table (docs/accuracy.md); give theta or accuracy, not both",
                  minimum=0.0, exclusive_minimum=True, maximum=1.0)
QUADRUPOLE = Option("quadrupole", bool, False, "add traceless quadrupole moments of cells")
LEAF_CAPACITY = Option("leaf_capacity", int, 16, "most particles a leaf holds", minimum=1)
SIMD = Option("simd", str, None, "CPU instruction set for the native kernels (default: ORRERY_SIMD, "
              "else the widest this CPU has)", choices=("scalar", "avx2", "avx512"))
DEVICE = Option("device", str, None, "compute device, e.g. 'cuda:0' or 'sycl:cpu' (default: first found)")


@dataclass(frozen=True)
class SolverSpec:
    """What ``make_solver`` needs to know about one solver."""

    name: str
    doc: str
    options: tuple[Option, ...]
    factory: Callable[..., Any]
    # Returns None when the solver can run here, else a one-line reason it cannot.
    unavailable_reason: Callable[[], str | None] = field(default=lambda: None)

    def resolve(self, kwargs: dict) -> dict:
        known = {o.name: o for o in self.options}
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            raise UnknownSolverError(
                f"solver {self.name!r} has no option(s) {unknown}; its options are {sorted(known)}")
        return {name: option.coerce(kwargs.get(name, option.default)) for name, option in known.items()}
