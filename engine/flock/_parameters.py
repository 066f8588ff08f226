"""Flocking parameters as plain data: the rules (radii, weights, maximum speed, world size) and
how a step finds neighbours (search, cell width). Every field is an :class:`Option` record, so
the presets, the viewer's panel, the CLI and the recordings read one table.

The world is a periodic box ``[0, world)^3``: a boid leaving one face enters at the opposite
one and neighbours are found across the faces (minimum image), so there are no walls to steer
around and the density stays uniform on average (docs/adr/0095-flock-exact-fixed-point-sums.md).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from ..errors import InvalidInputError
from ..options import Option

SEARCHES = ("naive", "scattered-grid", "coherent-grid")
# Cell width in rule distances: 1 visits the 27 cells around a boid's own, 2 the 8 cells
# nearest to it (the study's two layouts).
CELL_WIDTHS = (1, 2)

RULE_OPTIONS = (
    Option("world", float, 100.0, "side of the periodic box", minimum=0.0, exclusive_minimum=True),
    Option("separation_radius", float, 3.0, "boids closer than this push apart", minimum=0.0),
    Option("alignment_radius", float, 5.0, "boids closer than this match headings", minimum=0.0),
    Option("cohesion_radius", float, 5.0, "boids closer than this pull together", minimum=0.0),
    Option("separation_weight", float, 0.5, "separation strength (per time squared)", minimum=0.0),
    Option("alignment_weight", float, 0.5, "alignment strength (per time)", minimum=0.0),
    Option("cohesion_weight", float, 0.05, "cohesion strength (per time squared)", minimum=0.0),
    Option("max_speed", float, 1.0, "speed limit", minimum=0.0, exclusive_minimum=True),
)
SEARCH_OPTIONS = (
    Option("search", str, "coherent-grid", "neighbour search", choices=SEARCHES),
    Option("cell_width", int, 2, "grid cell width in rule distances (1: 27 cells, 2: 8 cells)",
           choices=CELL_WIDTHS),
)
OPTIONS = RULE_OPTIONS + SEARCH_OPTIONS
_BY_NAME = {option.name: option for option in OPTIONS}

# A grid cell is wider than cell_width * rule distance by this factor, so that a neighbour at
# exactly the rule distance cannot fall two cells away through the rounding of x * (1 / width).
_CELL_MARGIN = 1.0 + 2.0**-16
# Grids stop refining at about this many cells per boid (more cells only cost table space).
_CELLS_PER_BOID = 2
# Fixed-point resolution: 20 bits below the power of two above the world (or the speed limit).
QUANTUM_BITS = 20


@dataclass(frozen=True)
class FlockParameters:
    """The rules of a flock and its neighbour search (defaults: the study's, scaled to a time
    step of 0.2). Construct with keyword arguments or :meth:`from_mapping`; values are checked."""

    world: float = _BY_NAME["world"].default
    separation_radius: float = _BY_NAME["separation_radius"].default
    alignment_radius: float = _BY_NAME["alignment_radius"].default
    cohesion_radius: float = _BY_NAME["cohesion_radius"].default
    separation_weight: float = _BY_NAME["separation_weight"].default
    alignment_weight: float = _BY_NAME["alignment_weight"].default
    cohesion_weight: float = _BY_NAME["cohesion_weight"].default
    max_speed: float = _BY_NAME["max_speed"].default
    search: str = _BY_NAME["search"].default
    cell_width: int = _BY_NAME["cell_width"].default

    def __post_init__(self):
        for option in OPTIONS:
            value = getattr(self, option.name)
            if option.type is float and not math.isfinite(float(value)):
                raise InvalidInputError(f"{option.name} must be finite, got {value!r}")
            object.__setattr__(self, option.name, option.coerce(value))
        if not self.rule_distance > 0:
            raise InvalidInputError("at least one rule radius must be positive")
        if not self.rule_distance < self.world / 2:
            raise InvalidInputError(
                f"the largest rule radius ({self.rule_distance}) must be below half the world "
                f"({self.world / 2}): a neighbour must have one nearest image in the periodic box")

    @classmethod
    def from_mapping(cls, values: dict) -> FlockParameters:
        unknown = sorted(set(values) - set(_BY_NAME))
        if unknown:
            raise InvalidInputError(f"unknown flock parameter(s) {unknown}; they are {sorted(_BY_NAME)}")
        return cls(**values)

    def with_changes(self, **changes) -> FlockParameters:
        unknown = sorted(set(changes) - set(_BY_NAME))
        if unknown:
            raise InvalidInputError(f"unknown flock parameter(s) {unknown}")
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def rule_distance(self) -> float:
        return max(self.separation_radius, self.alignment_radius, self.cohesion_radius)

    def check_step(self, dt: float) -> None:
        """A step must not carry a boid across more than half the box."""
        if not dt > 0:
            raise InvalidInputError(f"time step dt must be positive, got {dt!r}")
        if not dt * self.max_speed < self.world / 2:
            raise InvalidInputError(f"dt * max_speed ({dt * self.max_speed}) must be below half "
                                    f"the world ({self.world / 2})")

    def grid_size(self, n: int) -> int:
        """Cells per axis: as many as fit at cell_width rule distances each, at most about
        ``_CELLS_PER_BOID * n`` in all, at least one."""
        width = self.cell_width * self.rule_distance * _CELL_MARGIN
        fit = int(math.floor(self.world / width))
        cap = max(1, int(round((_CELLS_PER_BOID * max(n, 1)) ** (1 / 3))))
        return max(1, min(fit, cap, 1024))

    def constants(self, n: int, dt: float) -> dict:
        """The numbers every implementation uses, computed once here so that the NumPy
        reference, the CPU and the device kernels compare the same float32 values.

        Positions live on a fixed-point grid of ``quantum`` (the float32 spacing at the top of
        the box) and velocities on one of ``velocity_quantum``, so every neighbour offset is
        exact and every neighbour sum is exact in float64, in any order.
        """
        self.check_step(dt)
        # The box side on the position grid (rounded down by less than a quantum), so that an
        # offset's nearest image is a multiple of the quantum too and float32 partial sums of
        # offsets stay exact (ADR 0095).
        quantum = _quantum(float(np.float32(self.world)))
        world = np.float32(math.floor(float(np.float32(self.world)) / quantum) * quantum)
        grid = self.grid_size(n)
        return {
            "world": float(world),
            "half_world": float(world * np.float32(0.5)),
            "separation_radius2": float(np.float32(self.separation_radius ** 2)),
            "alignment_radius2": float(np.float32(self.alignment_radius ** 2)),
            "cohesion_radius2": float(np.float32(self.cohesion_radius ** 2)),
            "separation_weight": float(self.separation_weight),
            "alignment_weight": float(self.alignment_weight),
            "cohesion_weight": float(self.cohesion_weight),
            "max_speed": float(self.max_speed),
            "dt": float(dt),
            "quantum": quantum,
            "velocity_quantum": _quantum(self.max_speed),
            "grid": grid,
            "inverse_cell_width": float(np.float32(grid) / world),
        }


def _quantum(bound: float) -> float:
    """The spacing 2^(e - QUANTUM_BITS) with bound < 2^e. Multiples of it below the bound, their
    differences, and sums of up to 16 of them below the bound are all float32 exactly
    (native/flock_kernel.hpp keeps float32 partial sums that long before adding them in float64)."""
    return math.ldexp(1.0, math.frexp(bound)[1] - QUANTUM_BITS)
