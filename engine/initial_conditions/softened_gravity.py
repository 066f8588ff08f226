"""Plummer-softened gravity of axisymmetric mass distributions (G = 1), for building equilibria
that match the force a softened N-body code will actually apply.

A Plummer-softened point mass has the potential -m / sqrt(r² + eps²), so a distribution's
softened field is a sum over its pieces with that kernel. Two pieces have closed forms:

- a spherical shell of radius s at distance r from its centre:
  Phi = -m / (2 r s) * (sqrt((r + s)² + eps²) - sqrt((r - s)² + eps²));
- a ring of radius a at height z, seen from radius R in the plane z = 0: with d² = z² + eps²,
  Phi = -(2 m / pi) K(k²) / S, S² = (R + a)² + d², k² = 4 a R / S²
  (K, E the complete elliptic integrals of parameter k²).

Height and softening enter the ring only through d², which is why a thick softened disk is as
cheap as a thin one.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ellipe, ellipk


def shell_potential(radius, shell_radii, shell_masses, softening: float) -> np.ndarray:
    """Potential at ``radius`` (any shape) of concentric shells."""
    r = np.maximum(np.asarray(radius, dtype=float)[..., None], 1e-300)
    s = np.asarray(shell_radii, dtype=float)
    outer = np.sqrt((r + s) ** 2 + softening**2)
    inner = np.sqrt((r - s) ** 2 + softening**2)
    return -(shell_masses / (2.0 * r * s) * (outer - inner)).sum(axis=-1)


def shell_acceleration(radius, shell_radii, shell_masses, softening: float) -> np.ndarray:
    """Inward radial acceleration dPhi/dr at ``radius`` (any shape, > 0) of concentric shells."""
    r = np.asarray(radius, dtype=float)[..., None]
    s = np.asarray(shell_radii, dtype=float)
    outer = np.sqrt((r + s) ** 2 + softening**2)
    inner = np.sqrt((r - s) ** 2 + softening**2)
    slope = (outer - inner) / (2.0 * r**2 * s) - ((r + s) / outer - (r - s) / inner) / (2.0 * r * s)
    return (shell_masses * slope).sum(axis=-1)


def ring_acceleration(radius, ring_radii, ring_heights, ring_masses,
                      softening: float) -> np.ndarray:
    """Inward radial acceleration dPhi/dR in the plane z = 0 at cylindrical ``radius`` (1-d, > 0)
    of coaxial rings (1-d arrays of equal length), computed in blocks to bound memory."""
    radius = np.asarray(radius, dtype=float)
    out = np.empty_like(radius)
    a = np.asarray(ring_radii, dtype=float)
    d2 = np.asarray(ring_heights, dtype=float) ** 2 + softening**2
    block = max(1, 2_000_000 // max(a.size, 1))
    for start in range(0, radius.size, block):
        R = radius[start:start + block, None]
        s2 = (R + a) ** 2 + d2
        m = 4.0 * a * R / s2
        k, e = ellipk(m), ellipe(m)
        # d/dm K(m) = (E / (1 - m) - K) / (2 m); written so m -> 0 (a ring far inside) stays finite.
        dk_dm = np.where(m > 1e-8, (e / (1.0 - m) - k) / (2.0 * np.maximum(m, 1e-300)), np.pi / 8.0)
        dm_dR = 4.0 * a / s2 * (1.0 - 2.0 * R * (R + a) / s2)
        s = np.sqrt(s2)
        dphi_dR = -(2.0 / np.pi) * ring_masses * (dk_dm * dm_dR / s - k * (R + a) / (s * s2))
        out[start:start + block] = dphi_dR.sum(axis=1)
    return out
