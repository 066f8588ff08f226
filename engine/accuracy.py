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


def error_percentiles(approx, exact) -> tuple[float, float]:
    """(RMS, 90th percentile) of the per-particle relative errors."""
    errors = relative_errors(approx, exact)
    return float(np.sqrt(np.mean(errors ** 2))), float(np.quantile(errors, 0.9))


def exact_accelerations(pos, mass, targets, softening, chunk_elements=4_000_000):
    """Exact float64 Plummer-softened accelerations of ``pos[targets]`` (a subset) from every
    particle; a particle's pull on itself is zero when softening > 0 and masked otherwise."""
    pos = np.asarray(pos, np.float64)
    mass = np.asarray(mass, np.float64)
    out = np.empty((len(targets), 3))
    step = max(1, chunk_elements // len(pos))
    for start in range(0, len(targets), step):
        idx = targets[start:start + step]
        d = pos[None, :, :] - pos[idx][:, None, :]
        r2 = np.einsum("ijk,ijk->ij", d, d) + softening * softening
        with np.errstate(divide="ignore"):
            w = np.where(r2 > 0, mass[None, :] / (r2 * np.sqrt(r2)), 0.0)
        out[start:start + len(idx)] = np.einsum("ij,ijk->ik", w, d)
    return out
