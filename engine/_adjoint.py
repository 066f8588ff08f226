"""What both kinds of run gradient share (engine/gradients.py, engine/checkpointed.py): the
result, and the checks of a run's arguments and of the final cotangents."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .errors import InvalidInputError


@dataclass(frozen=True)
class Gradient:
    """dL/d(initial state), float64 arrays shaped like the state; ``loss`` as the loss function
    returned it; ``reversible``: the backward pass came back to the initial lattice state bit
    for bit (so every step's state it used was the forward run's), None for a checkpointed run
    (which reconstructs nothing)."""

    loss: float | None
    pos: np.ndarray
    vel: np.ndarray
    mass: np.ndarray
    reversible: bool | None


def check_run_arguments(dt, steps) -> None:
    if not (isinstance(dt, numbers.Real) and math.isfinite(dt) and dt > 0):
        raise InvalidInputError(f"time step dt must be a positive finite number, got {dt!r}")
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 0:
        raise InvalidInputError(f"steps must be a non-negative integer, got {steps!r}")


def start_cotangents(n: int, pos_bar, vel_bar, mass_bar) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The backward pass's adjoint, float64 copies of the given cotangents (mass: zero if None)."""
    return (_cotangent(pos_bar, (n, 3), "pos_bar").copy(),
            _cotangent(vel_bar, (n, 3), "vel_bar").copy(),
            np.zeros(n) if mass_bar is None else _cotangent(mass_bar, (n,), "mass_bar").copy())


def _cotangent(values, shape: tuple, name: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {values.shape}")
    return values
