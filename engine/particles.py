"""Particles: the simulation state as structure-of-arrays numpy data.

Positions and velocities are C-contiguous ``(n, 3)`` arrays and masses an ``(n,)`` array, all of
one floating dtype (float32 or float64), so the native solvers read them without copying.
N-body units throughout: G = 1.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from . import portable
from .errors import InvalidInputError

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Population labels are uint8 on the host, on the device and in recordings.
MAX_POPULATIONS = 256
# What one particle costs on the host in float64 (position, velocity, mass, population label):
# the least any run of n particles needs before a solver allocates anything.
BYTES_PER_PARTICLE = 3 * 8 + 3 * 8 + 8 + 1


def as_dtype(precision) -> np.dtype:
    """Map ``"f32"``/``"f64"`` (or a numpy dtype) to a supported dtype."""
    names = {"f32": np.float32, "float32": np.float32, "f64": np.float64, "float64": np.float64}
    dtype = np.dtype(names.get(precision, precision)) if isinstance(precision, str) else np.dtype(precision)
    if dtype not in SUPPORTED_DTYPES:
        raise InvalidInputError(f"precision must be 'f32' or 'f64', got {precision!r}")
    return dtype


def check_count(n) -> int:
    """A particle count as an int: a positive integer whose float64 particles alone
    (:data:`BYTES_PER_PARTICLE` each) fit in this machine's memory; else
    :class:`InvalidInputError` saying what it would need."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer, float)) \
            or (isinstance(n, float) and not math.isfinite(n)) or int(n) != n or n < 1:
        raise InvalidInputError(f"particle count must be a positive integer, got {n!r}")
    n = int(n)
    needed, memory = n * BYTES_PER_PARTICLE, physical_memory()
    if memory is not None and needed > memory:
        raise InvalidInputError(
            f"{n:,} particles need at least {format_bytes(needed)} ({BYTES_PER_PARTICLE} bytes "
            f"each for float64 positions, velocities, masses and labels); this machine has "
            f"{format_bytes(memory)}")
    return n


def physical_memory() -> int | None:
    """Bytes of RAM this machine has, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def available_memory() -> int | None:
    """Bytes this process may still allocate: the least of the memory the system has free
    (``MemAvailable``), the address-space limit (``ulimit -v``) and the cgroup's limit less its
    use; None where none of these is known."""
    limits = portable.memory_limits()
    return min(limits) if limits else None


def format_bytes(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if count < 1024 or unit == "PiB":
            return f"{count:.3g} {unit}"
        count /= 1024


def largest_coordinate(dtype) -> float:
    """The largest coordinate magnitude a solver of ``dtype`` accepts: twice it, squared, is
    still finite, so no squared distance overflows to infinity (which would silently give a
    zero force)."""
    return float(np.sqrt(np.finfo(dtype).max)) / 2


def check_positions_and_masses(pos, mass, *, dtype=None) -> tuple[np.ndarray, np.ndarray]:
    """Validate a force-evaluation input and return it as numpy arrays (no dtype change).

    Raises :class:`InvalidInputError` naming the problem: wrong shapes, no particles, non-finite
    values, negative masses, a total mass that is not positive, or (for a solver computing in
    ``dtype``, default: the arrays' own) values too large for that precision.
    """
    pos = np.asarray(pos)
    mass = np.asarray(mass)
    check_shapes(pos.shape, mass.shape)
    if not np.issubdtype(pos.dtype, np.floating) or not np.issubdtype(mass.dtype, np.floating):
        raise InvalidInputError("positions and masses must be floating-point arrays")
    dtype = np.dtype(dtype or pos.dtype)
    _check_evaluation_memory(pos.shape[0], dtype)
    largest = largest_coordinate(dtype)
    # Two reductions cover both tests (NaN propagates, infinity exceeds): the common case
    # costs no temporary arrays; only a failure looks for the particle to name.
    # (as Python floats: a float32 array's extremes against float64's largest would cast down)
    if not max(-float(pos.min()), float(pos.max())) <= largest:
        check_finite(pos, "position")
        check_precision(pos, "position", largest, dtype)
    total = float(mass.sum())
    if not math.isfinite(total) or mass.min() < 0:
        check_finite(mass, "mass")
        if (mass < 0).any():
            bad = int(np.flatnonzero(mass < 0)[0])
            raise InvalidInputError(f"mass of particle {bad} is negative ({mass[bad]})")
    if not total > 0:
        raise InvalidInputError("total mass must be positive")
    if total > np.finfo(dtype).max:
        raise InvalidInputError(f"the total mass ({total:g}) is too large for {dtype.name} "
                                "arithmetic; use precision='f64' or smaller units")
    return pos, mass


# Evaluations needing less than this are not checked against the memory available (reading
# it costs more than a small evaluation).
_CHECKED_EVALUATION_BYTES = 1 << 30


def _check_evaluation_memory(n: int, dtype: np.dtype) -> None:
    """Refuse, before anything is read, an evaluation of ``n`` particles whose arrays (contiguous
    positions and masses, accelerations, in ``dtype``) cannot fit in the memory available: a
    view of 2**34 elements (a zero stride costs nothing) spent minutes in the checks below
    before running out of memory."""
    needed = n * 7 * dtype.itemsize
    if needed < _CHECKED_EVALUATION_BYTES:
        return
    available = available_memory()
    if available is not None and needed > available:
        raise InvalidInputError(f"{n:,} particles need about {format_bytes(needed)} for one "
                                f"{dtype.name} force evaluation; {format_bytes(available)} is "
                                "available")


def check_shapes(pos_shape: tuple, mass_shape: tuple, vel_shape: tuple | None = None) -> int:
    """The particle count of positions ``(n, 3)``, masses ``(n,)`` (and velocities ``(n, 3)``)
    of these shapes; InvalidInputError naming the first shape that is wrong."""
    pos_shape, mass_shape = tuple(pos_shape), tuple(mass_shape)
    if len(pos_shape) != 2 or pos_shape[1] != 3:
        raise InvalidInputError(f"positions must have shape (n, 3), got {pos_shape}")
    if vel_shape is not None and tuple(vel_shape) != pos_shape:
        raise InvalidInputError(f"velocities must have the positions' shape {pos_shape}, "
                                f"got {tuple(vel_shape)}")
    if len(mass_shape) != 1:
        raise InvalidInputError(f"masses must have shape (n,), got {mass_shape}")
    if mass_shape[0] != pos_shape[0]:
        raise InvalidInputError(
            f"{pos_shape[0]} positions but {mass_shape[0]} masses: the counts must match")
    if pos_shape[0] == 0:
        raise InvalidInputError("no particles (N = 0)")
    return int(pos_shape[0])


def check_finite(values: np.ndarray, what: str) -> None:
    """Refuse NaN or infinity in ``values`` (rows of particles), naming the first particle."""
    finite = np.isfinite(values)
    if not finite.all():
        bad = int(np.flatnonzero(~finite.reshape(len(values), -1).all(axis=1))[0])
        shown = values[bad].tolist() if values.ndim > 1 else ""
        raise InvalidInputError(f"{what} of particle {bad} is not finite{': ' if shown else ''}"
                                f"{shown}")


def check_precision(values: np.ndarray, what: str, largest: float, dtype) -> None:
    """Refuse magnitudes above ``largest`` in ``values`` for a solver computing in ``dtype``."""
    magnitude = np.abs(values)
    if magnitude.size and magnitude.max() > largest:
        bad = int(np.flatnonzero((magnitude > largest).reshape(len(values), -1).any(axis=1))[0])
        raise InvalidInputError(
            f"{what} of particle {bad} ({values[bad].tolist()}) is too large for "
            f"{np.dtype(dtype).name} arithmetic (at most {largest:.3g} in magnitude); use "
            "precision='f64' or smaller units")


def check_fits(particles: Particles, dtype) -> None:
    """Refuse to bind ``particles`` to a solver computing in ``dtype`` when a position,
    velocity or mass would overflow there (float64 values beyond the float32 range)."""
    dtype = np.dtype(dtype)
    if dtype.itemsize >= particles.dtype.itemsize:
        return
    check_positions_and_masses(particles.pos, particles.mass, dtype=dtype)
    check_precision(particles.vel, "velocity", float(np.finfo(dtype).max), dtype)


def check_no_coincident(pos: np.ndarray) -> None:
    """With zero softening two particles at one point would give an infinite force: refuse."""
    _, first, counts = np.unique(pos, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        where = pos[first[np.argmax(counts > 1)]].tolist()
        raise InvalidInputError(
            f"particles coincide at {where} and softening is 0: the force between them is "
            "infinite; use a positive softening")


@dataclass
class Particles:
    """Positions ``pos`` (n, 3), velocities ``vel`` (n, 3), masses ``mass`` (n,).

    ``population`` labels each particle (e.g. galaxy or component) for colouring and recording;
    ``population_names`` names the labels.
    """

    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    population: np.ndarray | None = None
    population_names: tuple[str, ...] = field(default=("all",))

    def __post_init__(self):
        dtype = np.result_type(np.asarray(self.pos).dtype, np.float32)
        dtype = dtype if dtype in SUPPORTED_DTYPES else np.dtype(np.float64)
        self.pos = np.ascontiguousarray(self.pos, dtype=dtype)
        self.vel = _cast(self.vel, dtype, "velocity")
        self.mass = _cast(self.mass, dtype, "mass")
        check_positions_and_masses(self.pos, self.mass)
        if self.vel.shape != self.pos.shape:
            raise InvalidInputError(
                f"velocities have shape {self.vel.shape} but positions {self.pos.shape}")
        check_finite(self.vel, "velocity")
        self.population, self.population_names = _checked_population(
            self.population, self.population_names, self.n)

    @property
    def n(self) -> int:
        return self.pos.shape[0]

    @property
    def dtype(self) -> np.dtype:
        return self.pos.dtype

    def astype(self, precision) -> Particles:
        """A copy in another precision ('f32' or 'f64')."""
        dtype = as_dtype(precision)
        return Particles(self.pos.astype(dtype), self.vel.astype(dtype), self.mass.astype(dtype),
                         self.population.copy(), self.population_names)

    def copy(self) -> Particles:
        return self.astype(self.dtype)

    @staticmethod
    def concatenate(parts: list[Particles]) -> Particles:
        """Join particle sets; populations keep distinct labels, in order."""
        names: list[str] = []
        labels = []
        for part in parts:
            labels.append(part.population.astype(np.int64) + len(names))
            names.extend(part.population_names)
        if len(names) > MAX_POPULATIONS:
            raise InvalidInputError(f"{len(names)} populations: at most {MAX_POPULATIONS}")
        return Particles(np.concatenate([p.pos for p in parts]),
                         np.concatenate([p.vel for p in parts]),
                         np.concatenate([p.mass for p in parts]),
                         np.concatenate(labels).astype(np.uint8), tuple(names))


def _cast(values, dtype: np.dtype, what: str) -> np.ndarray:
    """``values`` as a contiguous ``dtype`` array, refusing magnitudes that would overflow."""
    values = np.asarray(values)
    if values.dtype.kind == "f" and values.dtype.itemsize > dtype.itemsize \
            and values.ndim and values.size:
        check_precision(values.reshape(len(values), -1), what, float(np.finfo(dtype).max), dtype)
    return np.ascontiguousarray(values, dtype=dtype)


def _checked_population(population, names, n) -> tuple[np.ndarray, tuple[str, ...]]:
    """Labels as uint8 and names as a tuple, or :class:`InvalidInputError`: every label an
    integer naming one of the 1 to :data:`MAX_POPULATIONS` names (never wrapped to fit)."""
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        raise InvalidInputError(f"population_names must be a sequence of strings, got {names!r}")
    names = tuple(names)
    if not 1 <= len(names) <= MAX_POPULATIONS:
        raise InvalidInputError(
            f"{len(names)} population names: there must be 1 to {MAX_POPULATIONS}")
    if population is None:
        return np.zeros(n, dtype=np.uint8), names
    labels = np.asarray(population)
    if labels.shape != (n,):
        raise InvalidInputError(f"population labels must have shape ({n},), got {labels.shape}")
    if labels.dtype.kind not in "biuf" or (labels.dtype.kind == "f"
                                            and not np.array_equal(labels, np.round(labels))):
        raise InvalidInputError(f"population labels must be integers, got {labels.dtype} values")
    if n and (labels.min() < 0 or labels.max() >= len(names)):
        bad = int(np.flatnonzero((labels < 0) | (labels >= len(names)))[0])
        raise InvalidInputError(
            f"population label {labels[bad]} of particle {bad} is outside 0..{len(names) - 1}: "
            f"it must index one of the {len(names)} population names")
    return np.ascontiguousarray(labels, dtype=np.uint8), names
