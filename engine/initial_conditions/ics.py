"""Initial conditions in N-body units (G = 1, total mass 1), seeded and reproducible.

Equilibrium spheres draw velocities from their isotropic distribution functions, not from a
Gaussian guess: Plummer by the Aarseth-Hénon-Wielen (1974) rejection method, Hernquist from its
closed-form f(E) (Hernquist 1990, eq. 17). Every set is moved to its centre-of-mass frame.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import InvalidInputError
from ..particles import Particles, as_dtype, check_count

# Hénon units for the Plummer sphere: total energy -1/4 puts the scale length at 3*pi/16.
PLUMMER_SCALE = 3.0 * np.pi / 16.0
# Share of the cumulative mass profile that is sampled; the rest lies at very large radii
# where a few stragglers would set the bounding box of every tree for no physical gain.
MASS_CUTOFF = 0.999


def _checked(name: str, value, *, positive: bool) -> float:
    """``value`` as a float if it is a finite number > 0 (``positive``) or >= 0; else
    :class:`InvalidInputError` naming the parameter ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or value < 0 or (positive and value == 0):
        kind = "a positive" if positive else "a non-negative"
        raise InvalidInputError(f"{name} must be {kind} finite number, got {value!r}")
    return float(value)


def _rng(seed) -> np.random.Generator:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise InvalidInputError(f"seed must be an integer of at least 0, got {seed!r}")
    return np.random.default_rng(int(seed))


def _isotropic(rng: np.random.Generator, magnitude: np.ndarray) -> np.ndarray:
    """Vectors of the given lengths in uniformly random directions."""
    cos_theta = rng.uniform(-1.0, 1.0, magnitude.shape)
    phi = rng.uniform(0.0, 2.0 * np.pi, magnitude.shape)
    sin_theta = np.sqrt(1.0 - cos_theta**2)
    return magnitude[:, None] * np.stack(
        [sin_theta * np.cos(phi), sin_theta * np.sin(phi), cos_theta], axis=1)


def _finish(pos, vel, precision) -> Particles:
    n = len(pos)
    mass = np.full(n, 1.0 / n)
    pos = pos - pos.mean(axis=0)
    vel = vel - vel.mean(axis=0)
    dtype = as_dtype(precision)
    return Particles(pos.astype(dtype), vel.astype(dtype), mass.astype(dtype))


def plummer(n: int, *, seed: int = 0, precision: str = "f64") -> Particles:
    """Plummer sphere in virial equilibrium, Hénon units (M = 1, E = -1/4)."""
    n = check_count(n)
    rng = _rng(seed)
    a = PLUMMER_SCALE
    x = rng.uniform(0.0, MASS_CUTOFF, n)
    r = a / np.sqrt(x ** (-2.0 / 3.0) - 1.0)
    # Speed in units of the local escape speed: q has density q^2 (1 - q^2)^(7/2), max < 0.1.
    q = np.empty(n)
    todo = np.arange(n)
    while todo.size:
        trial = rng.uniform(0.0, 1.0, todo.size)
        accept = rng.uniform(0.0, 0.1, todo.size) < trial**2 * (1.0 - trial**2) ** 3.5
        q[todo[accept]] = trial[accept]
        todo = todo[~accept]
    v_escape = np.sqrt(2.0) * (r**2 + a**2) ** -0.25
    return _finish(_isotropic(rng, r), _isotropic(rng, q * v_escape), precision)


def _hernquist_df(energy: np.ndarray) -> np.ndarray:
    """Isotropic Hernquist f(E) for M = a = 1, up to a constant; ``energy`` in (-1, 0)."""
    q2 = np.clip(-energy, 0.0, 1.0 - 1e-15)
    q = np.sqrt(q2)
    return (3.0 * np.arcsin(q) + q * np.sqrt(1.0 - q2) * (1.0 - 2.0 * q2) * (8.0 * q2**2 - 8.0 * q2 - 3.0)) \
        / (1.0 - q2) ** 2.5


def hernquist(n: int, *, seed: int = 0, scale: float = 1.0, precision: str = "f64") -> Particles:
    """Hernquist sphere (M = 1, scale length ``scale``) with velocities from its isotropic DF."""
    n = check_count(n)
    scale = _checked("scale", scale, positive=True)
    rng = _rng(seed)
    x = rng.uniform(0.0, MASS_CUTOFF, n)
    s = np.sqrt(x)
    r = s / (1.0 - s)  # inverse of M(r) = r^2 / (1 + r)^2, in units of the scale length
    potential = -1.0 / (1.0 + r)
    v_escape = np.sqrt(-2.0 * potential)
    # Rejection in u = v / v_escape against the density u^2 f(E); the bound is the maximum over a
    # grid dense near u = 0, where the peak sits for small radii, with a safety margin.
    grid = np.concatenate([np.geomspace(1e-4, 0.2, 48), np.linspace(0.2, 1.0, 48)[1:]])
    def density(u, phi, v_esc):
        return u**2 * _hernquist_df(phi + 0.5 * (u * v_esc) ** 2)
    bound = np.empty(n)
    for start in range(0, n, 65536):
        sl = slice(start, start + 65536)
        bound[sl] = 1.3 * density(grid[None, :], potential[sl, None], v_escape[sl, None]).max(axis=1)
    u = np.empty(n)
    todo = np.arange(n)
    while todo.size:
        trial = rng.uniform(0.0, 1.0, todo.size)
        accept = rng.uniform(0.0, 1.0, todo.size) * bound[todo] < density(trial, potential[todo], v_escape[todo])
        u[todo[accept]] = trial[accept]
        todo = todo[~accept]
    # Velocities scale as sqrt(G M / a).
    return _finish(_isotropic(rng, r * scale), _isotropic(rng, u * v_escape / np.sqrt(scale)), precision)


def uniform_cube(n: int, *, seed: int = 0, side: float = 2.0, virial_ratio: float = 0.0,
                 precision: str = "f64") -> Particles:
    """Uniform-density cube of the given side; ``virial_ratio`` K/|W| (0 = cold collapse)."""
    n = check_count(n)
    side = _checked("side", side, positive=True)
    virial_ratio = _checked("virial_ratio", virial_ratio, positive=False)
    rng = _rng(seed)
    pos = rng.uniform(-0.5 * side, 0.5 * side, (n, 3))
    # Self-energy of a uniform cube: W = -0.9411 G M^2 / L.
    sigma = np.sqrt(virial_ratio * 0.9411 / side / 1.5)
    return _finish(pos, rng.normal(0.0, 1.0, (n, 3)) * sigma, precision)


def gaussian_blob(n: int, *, seed: int = 0, sigma: float = 1.0, virial_ratio: float = 0.5,
                  precision: str = "f64") -> Particles:
    """Gaussian density (standard deviation ``sigma`` per axis) with isotropic Gaussian
    velocities sized for the virial ratio K/|W| (0.5 = equilibrium on average)."""
    n = check_count(n)
    sigma = _checked("sigma", sigma, positive=True)
    virial_ratio = _checked("virial_ratio", virial_ratio, positive=False)
    rng = _rng(seed)
    pos = rng.normal(0.0, sigma, (n, 3))
    # Self-energy of a Gaussian sphere: W = -G M^2 / (2 sqrt(pi) sigma).
    velocity_sigma = np.sqrt(virial_ratio / (2.0 * np.sqrt(np.pi) * sigma) / 1.5)
    return _finish(pos, rng.normal(0.0, 1.0, (n, 3)) * velocity_sigma, precision)


GENERATORS = {
    "plummer": plummer,
    "hernquist": hernquist,
    "cube": uniform_cube,
    "gaussian": gaussian_blob,
}


def make(name: str, n: int, *, seed: int = 0, precision: str = "f64") -> Particles:
    """Initial conditions by name (``plummer``, ``hernquist``, ``cube``, ``gaussian``)."""
    if name not in GENERATORS:
        raise InvalidInputError(f"unknown initial conditions {name!r}; choose one of {sorted(GENERATORS)}")
    return GENERATORS[name](n, seed=seed, precision=precision)
