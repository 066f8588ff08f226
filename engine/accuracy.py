"""Error measures of an approximate acceleration field against a reference one."""

from __future__ import annotations

import numpy as np


def relative_errors(approx, exact) -> np.ndarray:
    """Per-particle |a - a_ref| / |a_ref|, in float64."""
    approx = np.asarray(approx, dtype=np.float64)
    exact = np.asarray(exact, dtype=np.float64)
    return np.linalg.norm(approx - exact, axis=1) / np.linalg.norm(exact, axis=1)


def max_relative_error(approx, exact) -> float:
    return float(np.max(relative_errors(approx, exact)))


def rms_relative_error(approx, exact) -> float:
    return float(np.sqrt(np.mean(relative_errors(approx, exact) ** 2)))
