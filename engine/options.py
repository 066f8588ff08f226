"""Solvers as records: a name, a description and an options table.

The same table validates ``make_solver`` keyword arguments, produces CLI flags and viewer
controls, and is written into recordings, so an option is declared once.
"""

from __future__ import annotations

import math
import numbers
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import InvalidInputError, UnknownSolverError


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
        elif self.type is int:
            value = self._as_int(value)
        else:
            try:
                value = self.type(value)
            except (TypeError, ValueError, OverflowError):
                raise InvalidInputError(
                    f"{self.name} must be {self.type.__name__}, got {value!r}") from None
        # NaN passes every comparison below and infinity is no setting: refuse both first.
        if self.type is float and not math.isfinite(value):
            raise InvalidInputError(f"{self.name} must be a finite number, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise InvalidInputError(f"{self.name} must be one of {list(self.choices)}, got {value!r}")
        if self.minimum is not None:
            if value < self.minimum or (self.exclusive_minimum and value == self.minimum):
                relation = ">" if self.exclusive_minimum else ">="
                raise InvalidInputError(f"{self.name} must be {relation} {self.minimum}, got {value!r}")
        if self.maximum is not None and value > self.maximum:
            raise InvalidInputError(f"{self.name} must be <= {self.maximum:g}, got {value!r}")
        return value

    def _as_int(self, value) -> int:
        """Integers, integral numbers (2.0) and integer text ("2"); not 2.5, inf or True."""
        if not isinstance(value, bool):
            try:
                return operator.index(value)
            except TypeError:
                pass
            if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
                return int(value)
            if isinstance(value, str):
                try:
                    return int(value)
                except ValueError:
                    pass
        raise InvalidInputError(f"{self.name} must be an integer, got {value!r}")


PRECISION = Option("precision", str, "f32", "arithmetic precision", choices=("f32", "f64"))
# Far above any softening of a system in N-body units (of size ~1), and far enough below the
# float32 range that softening^2 and softening^3 stay finite inside the kernels.
MAX_SOFTENING = 1e6
SOFTENING = Option("softening", float, 0.01, "Plummer softening length (N-body units)", minimum=0.0,
                   maximum=MAX_SOFTENING)
# Threads are OS threads the native pool keeps alive, and the tree's radix sort holds one
# histogram per thread: more than this only costs memory, never time, on any machine we know.
MAX_THREADS = 1024
THREADS = Option("threads", int, None, "CPU threads (default: all cores)", minimum=1,
                 maximum=MAX_THREADS)
THETA = Option("theta", float, 0.5, "opening angle: smaller is more accurate and slower",
               minimum=0.0, maximum=2.0)
ACCURACY = Option("accuracy", float, None,
                  "target RMS relative force error, e.g. 1e-3: the solver picks theta from the "
                  "accuracy table (docs/accuracy.md); give theta or accuracy, not both",
                  minimum=0.0, exclusive_minimum=True, maximum=1.0)
CHECK_ACCURACY = Option("check_accuracy", int, None,
                        "verify accuracy= while running: every this many force evaluations, the "
                        "RMS and 90th-percentile error of a sample of bodies against float64 "
                        "direct sums, with a warning and a tighter setting past the target "
                        "(docs/accuracy.md)",
                        minimum=1)
QUADRUPOLE = Option("quadrupole", bool, False, "add traceless quadrupole moments of cells")
LEAF_CAPACITY = Option("leaf_capacity", int, 16, "most particles a leaf holds", minimum=1)
SIMD = Option("simd", str, None, "CPU instruction set for the native kernels (default: ORRERY_SIMD, "
              "else the widest this CPU has)", choices=("scalar", "avx2", "avx512", "neon", "sve"))
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
    # Where it computes: "cpu", "gpu" (through the compute layer, on a ``device``) or "any"
    # (``auto``, which hands the work to one of the others).
    kind: str = "cpu"

    def resolve(self, kwargs: dict) -> dict:
        known = {o.name: o for o in self.options}
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            raise UnknownSolverError(
                f"solver {self.name!r} has no option(s) {unknown}; its options are {sorted(known)}")
        return {name: option.coerce(kwargs.get(name, option.default)) for name, option in known.items()}
