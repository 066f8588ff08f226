"""Particles: the simulation state as structure-of-arrays numpy data.

Positions and velocities are C-contiguous ``(n, 3)`` arrays and masses an ``(n,)`` array, all of
one floating dtype (float32 or float64), so the native solvers read them without copying.
N-body units throughout: G = 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InvalidInputError

SUPPORTED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def as_dtype(precision) -> np.dtype:
    """Map ``"f32"``/``"f64"`` (or a numpy dtype) to a supported dtype."""
    names = {"f32": np.float32, "float32": np.float32, "f64": np.float64, "float64": np.float64}
    dtype = np.dtype(names.get(precision, precision)) if isinstance(precision, str) else np.dtype(precision)
    if dtype not in SUPPORTED_DTYPES:
        raise InvalidInputError(f"precision must be 'f32' or 'f64', got {precision!r}")
    return dtype


def check_positions_and_masses(pos, mass) -> tuple[np.ndarray, np.ndarray]:
    """Validate a force-evaluation input and return it as numpy arrays (no dtype change).

    Raises :class:`InvalidInputError` naming the problem: wrong shapes, no particles, non-finite
    values, negative masses or a total mass that is not positive.
    """
    pos = np.asarray(pos)
    mass = np.asarray(mass)
    if pos.ndim != 2 or pos.shape[1] != 3:
        raise InvalidInputError(f"positions must have shape (n, 3), got {pos.shape}")
    if mass.ndim != 1:
        raise InvalidInputError(f"masses must have shape (n,), got {mass.shape}")
    if mass.shape[0] != pos.shape[0]:
        raise InvalidInputError(
            f"{pos.shape[0]} positions but {mass.shape[0]} masses: the counts must match")
    if pos.shape[0] == 0:
        raise InvalidInputError("no particles (N = 0)")
    if not np.issubdtype(pos.dtype, np.floating) or not np.issubdtype(mass.dtype, np.floating):
        raise InvalidInputError("positions and masses must be floating-point arrays")
    if not np.isfinite(pos).all():
        bad = int(np.flatnonzero(~np.isfinite(pos).all(axis=1))[0])
        raise InvalidInputError(f"position of particle {bad} is not finite: {pos[bad].tolist()}")
    if not np.isfinite(mass).all():
        bad = int(np.flatnonzero(~np.isfinite(mass))[0])
        raise InvalidInputError(f"mass of particle {bad} is not finite")
    if (mass < 0).any():
        bad = int(np.flatnonzero(mass < 0)[0])
        raise InvalidInputError(f"mass of particle {bad} is negative ({mass[bad]})")
    if not mass.sum() > 0:
        raise InvalidInputError("total mass must be positive")
    return pos, mass


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
        self.vel = np.ascontiguousarray(self.vel, dtype=dtype)
        self.mass = np.ascontiguousarray(self.mass, dtype=dtype)
        check_positions_and_masses(self.pos, self.mass)
        if self.vel.shape != self.pos.shape:
            raise InvalidInputError(
                f"velocities have shape {self.vel.shape} but positions {self.pos.shape}")
        if not np.isfinite(self.vel).all():
            raise InvalidInputError("velocities must be finite")
        if self.population is None:
            self.population = np.zeros(self.n, dtype=np.uint8)
        self.population = np.ascontiguousarray(self.population, dtype=np.uint8)
        if self.population.shape != (self.n,):
            raise InvalidInputError("population labels must have shape (n,)")

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
        if len(names) > 255:
            raise InvalidInputError("at most 255 populations")
        return Particles(np.concatenate([p.pos for p in parts]),
                         np.concatenate([p.vel for p in parts]),
                         np.concatenate([p.mass for p in parts]),
                         np.concatenate(labels).astype(np.uint8), tuple(names))
