"""Self-gravitating disk galaxies and galaxy collisions (G = 1).

A galaxy has three components: an exponential disk with a sech² vertical profile, a Hernquist
bulge and a Hernquist halo. Positions are drawn from the densities exactly; velocities come from
moments of the Jeans equations, after Hernquist (1993, ApJS 86, 389):

- bulge and halo: isotropic Gaussian velocities whose dispersion sigma(r) solves the spherical
  hydrostatic (Jeans) equation in the total potential of all three components, cut below the
  local escape speed with the Gaussian widened so the cut keeps the Jeans second moment;
- disk: sigma_z from the vertical virial theorem of each sech² layer (its own softened pull and
  the spheroids'), sigma_R² proportional to Sigma(R) and normalised to a Toomre Q at a reference
  radius, sigma_phi from the epicyclic ratio kappa²/(4 Omega²), mean rotation from the
  asymmetric-drift equation.

All forces use the Plummer softening the galaxy will be run with (``softening``), so the
equilibrium is the one the N-body code sees: the circular speed in the disk plane sums the exact
softened pull of the thick disk (as coaxial rings) and of the bulge and halo (as spherical
shells); the spheroids' Jeans integrals use the spherically averaged pull (the monopole, exact
for any shape), which is all an isotropic spherical Jeans model can use.
docs/galaxy-model.md has the details.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np
from scipy.special import gammainc, gammaincinv

from ..errors import InvalidInputError
from ..particles import Particles, as_dtype, check_count
from .galaxy_model import GalaxyModel
from .orbits import parabolic_orbit

__all__ = ["GalaxyModel", "collision_plan", "disk_galaxy", "disk_rotation", "galaxy_collision"]

# A Gaussian velocity draw above this share of the local escape speed is redrawn, so no
# particle leaves its galaxy at once (Hernquist 1993 caps at the escape speed itself).
ESCAPE_CAP = 0.95
# Innermost spheroid radius drawn, in scale lengths (the cusp's density diverges at r = 0).
SPHEROID_FLOOR = 1e-6
# What a device reads, row by row, from a disk's and a spheroid's tables (disk_table,
# spheroid_table; kernels/galaxy.cl).
DISK_TABLE = ("radius", "sigma_r_squared", "epicyclic", "mean_rotation", "sigma_z_squared")
SPHEROID_TABLE = ("radius", "escape_cap", "width")


def disk_galaxy(n: int = 20000, *, seed: int = 0, model: GalaxyModel | None = None,
                particle_shares: tuple[float, float, float] = (0.5, 0.1, 0.4),
                precision: str = "f64", **parameters) -> Particles:
    """One disk galaxy in its centre-of-mass frame, disk in the x-y plane rotating
    counter-clockwise seen from +z.

    Parameters
    ----------
    n : int
        Total particle count (default 20000).
    seed : int
        Random seed.
    model : GalaxyModel, optional
        Structure; keyword ``parameters`` (any :class:`GalaxyModel` field) override it.
    particle_shares : (disk, bulge, halo)
        Share of the particles in each component (default 0.5 / 0.1 / 0.4, which puts half the
        particles where the eye looks). Components have different particle masses: with the
        default masses a halo particle weighs 6.7 disk particles and a bulge particle 1.7.
    precision : 'f32' or 'f64'

    Returns
    -------
    Particles with populations ``disk``, ``bulge``, ``halo`` (empty components are left out).
    """
    model = model or GalaxyModel()
    model = replace(model, **parameters) if parameters else model
    rng = np.random.default_rng(seed)
    counts = _split_counts(n, particle_shares, model)
    parts = []
    if counts[0]:
        parts.append(("disk", model.disk_mass,
                      *_mirrored(_sample_disk(model, (counts[0] + 1) // 2, rng), counts[0])))
    for name, count, mass, scale in (("bulge", counts[1], model.bulge_mass, model.bulge_scale),
                                     ("halo", counts[2], model.halo_mass, model.halo_scale)):
        if count:
            drawn = _sample_spheroid(model, (count + 1) // 2, mass, scale, rng)
            parts.append((name, mass, *_mirrored(drawn, count)))
    # Mirrored pairs put every component's centre of mass at rest on the origin (up to one
    # unpaired particle, removed below). Otherwise sampling noise leaves the disk off-centre in
    # its halo (by ~ r_rms / sqrt(N_halo), a tenth of a scale length at N = 6000) and it sloshes;
    # shifting each component by its mean instead would move the cusps off the origin, because
    # the mean of a Hernquist sample is dominated by its far tail.
    pos = np.concatenate([p[2] - p[2].mean(axis=0) for p in parts])
    vel = np.concatenate([p[3] - p[3].mean(axis=0) for p in parts])
    mass = np.concatenate([np.full(len(p[2]), p[1] / len(p[2])) for p in parts])
    population = np.concatenate([np.full(len(p[2]), i) for i, p in enumerate(parts)])
    dtype = as_dtype(precision)
    return Particles(pos.astype(dtype), vel.astype(dtype), mass.astype(dtype), population,
                     tuple(p[0] for p in parts))


def _mirrored(drawn, count):
    """Each drawn particle (x, v) and its mirror image (-x, -v), which has the same angular
    momentum (a disk keeps its sense of rotation); ``count`` of them."""
    pos, vel = drawn
    return np.concatenate([pos, -pos])[:count], np.concatenate([vel, -vel])[:count]


def _split_counts(n, shares, model) -> list[int]:
    if check_count(n) < 3:
        raise InvalidInputError(f"particle count must be an integer >= 3, got {n!r}")
    shares = np.asarray(shares, dtype=float)
    if shares.shape != (3,) or (shares < 0).any() or not shares[0] > 0:
        raise InvalidInputError("particle_shares must be three non-negative numbers (disk > 0)")
    masses = np.array([model.disk_mass, model.bulge_mass, model.halo_mass])
    shares = np.where(masses > 0, shares, 0.0)
    if ((masses > 0) & (shares == 0)).any():
        raise InvalidInputError("a component with mass needs a positive particle share")
    counts = np.floor(int(n) * shares / shares.sum()).astype(int)
    counts[0] += int(n) - counts.sum()
    if ((masses > 0) & (counts == 0)).any():
        raise InvalidInputError(f"{n} particles are too few to sample every component")
    return counts.tolist()


def _sample_disk(model: GalaxyModel, count: int, rng: np.random.Generator):
    # R e^(-R/R_d) is a Gamma(2) density; redraw the few beyond the cutoff.
    radius = rng.gamma(2.0, model.disk_scale, count)
    while (far := radius > model.disk_cutoff * model.disk_scale).any():
        radius[far] = rng.gamma(2.0, model.disk_scale, far.sum())
    phi = rng.uniform(0.0, 2.0 * np.pi, count)
    # sech²(z / z0) / (2 z0) is the logistic density with scale z0 / 2.
    z = rng.logistic(0.0, 0.5 * model.disk_height, count)
    v_r = rng.normal(0.0, 1.0, count) * np.sqrt(model.sigma_r_squared(radius))
    v_phi = (model.mean_rotation(radius) + rng.normal(0.0, 1.0, count)
             * np.sqrt(model.sigma_r_squared(radius) * _epicyclic_factor(model, radius)))
    v_z = rng.normal(0.0, 1.0, count) * np.sqrt(model.sigma_z_squared(radius))
    cos, sin = np.cos(phi), np.sin(phi)
    pos = np.stack([radius * cos, radius * sin, z], axis=1)
    vel = np.stack([v_r * cos - v_phi * sin, v_r * sin + v_phi * cos, v_z], axis=1)
    return pos, vel


def spheroid_radius(model: GalaxyModel, root_fraction, scale) -> np.ndarray:
    """The radius inside which a truncated Hernquist component of scale ``scale`` holds the
    share ``root_fraction``² of its mass: M(r) inverted, sqrt(M(r)/M_untruncated) = r / (r + a)
    (floored at 10^-6 a, off the cusp)."""
    cut = model.spheroid_cutoff
    s = np.asarray(root_fraction) * cut / (cut + scale)
    return np.maximum(scale * s / (1.0 - s), SPHEROID_FLOOR * scale)


def _sample_spheroid(model: GalaxyModel, count, mass, scale, rng: np.random.Generator):
    radius = spheroid_radius(model, np.sqrt(rng.uniform(0.0, 1.0, count)), scale)
    cap, width = _speed_cap_and_width(model, radius, mass, scale)
    vel = rng.normal(0.0, 1.0, (count, 3)) * width[:, None]
    while (fast := np.einsum("ij,ij->i", vel, vel) > cap**2).any():
        vel[fast] = rng.normal(0.0, 1.0, (fast.sum(), 3)) * width[fast, None]
    return _random_directions(rng, count) * radius[:, None], vel


def _epicyclic_factor(model: GalaxyModel, radius) -> np.ndarray:
    """sigma_phi² / sigma_R² = kappa² / (4 Omega²) = kappa² R² / (4 v_c²)."""
    return model.kappa_squared(radius) * radius**2 / (4.0 * model.circular_speed_squared(radius))


def _speed_cap_and_width(model: GalaxyModel, radius, mass, scale):
    """The speed a spheroid's particle at ``radius`` stays below (ESCAPE_CAP of the escape
    speed) and the width of the Gaussian its velocity is drawn from, below that cap."""
    cap = ESCAPE_CAP * np.sqrt(-2.0 * model.potential(radius))
    return cap, _capped_gaussian_width(model.spheroid_dispersion_squared(radius, mass, scale), cap)


def disk_table(model: GalaxyModel, root_fraction) -> np.ndarray:
    """``DISK_TABLE``'s rows at the disk radii inside which the share ``root_fraction``² of the
    disk's mass lies (the truncated Gamma(2) distribution _sample_disk draws, inverted), for
    drawing on a device (``initial_conditions.on_device``)."""
    radius = model.disk_scale * gammaincinv(2.0, np.asarray(root_fraction)**2
                                            * gammainc(2.0, model.disk_cutoff))
    return np.stack([radius, model.sigma_r_squared(radius), _epicyclic_factor(model, radius),
                     model.mean_rotation(radius), model.sigma_z_squared(radius)])


def spheroid_table(model: GalaxyModel, root_fraction, mass, scale) -> np.ndarray:
    """``SPHEROID_TABLE``'s rows at the radii inside which the share ``root_fraction``² of a
    spheroid's mass lies, as _sample_spheroid draws them, for drawing on a device."""
    radius = spheroid_radius(model, root_fraction, scale)
    return np.stack([radius, *_speed_cap_and_width(model, radius, mass, scale)])


def _capped_gaussian_width(sigma2, cap):
    """Width s of an isotropic Gaussian that, cut at speed ``cap``, still has the Jeans second
    moment <v²> = 3 sigma². A Gaussian of width sigma cut below the escape speed loses 8% of
    the default halo's kinetic energy, enough for the halo to contract by ~10% in a rotation.

    For a unit Gaussian cut at u, <v²> = 3 P(5/2, u²/2) / P(3/2, u²/2) (P the regularised
    incomplete gamma function), so <v²> / cap² = h(u) / u², which falls from 3/5 (u -> 0, a
    uniform ball) to 0; invert it by interpolation. Where even a uniform ball cannot hold
    sigma² (never for the shipped models) the ball is used."""
    u = np.geomspace(0.05, 30.0, 2000)
    x = 0.5 * u**2
    moment_over_cap2 = 3.0 * gammainc(2.5, x) / gammainc(1.5, x) / u**2
    target = np.minimum(3.0 * np.asarray(sigma2) / cap**2, moment_over_cap2[0])
    return cap / np.interp(target, moment_over_cap2[::-1], u[::-1])


def _random_directions(rng: np.random.Generator, count) -> np.ndarray:
    cos_theta = rng.uniform(-1.0, 1.0, count)
    phi = rng.uniform(0.0, 2.0 * np.pi, count)
    sin_theta = np.sqrt(1.0 - cos_theta**2)
    return np.stack([sin_theta * np.cos(phi), sin_theta * np.sin(phi), cos_theta], axis=1)


def disk_rotation(inclination_deg: float, node_deg: float) -> np.ndarray:
    """Rotation matrix that tilts a disk's spin (+z) by ``inclination_deg`` about a line of
    nodes at angle ``node_deg`` from +x in the orbital (x-y) plane. 0 = prograde, 180 =
    retrograde."""
    i, node = np.radians(inclination_deg), np.radians(node_deg)
    tilt = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(i), -np.sin(i)], [0.0, np.sin(i), np.cos(i)]])
    turn = np.array([[np.cos(node), -np.sin(node), 0.0], [np.sin(node), np.cos(node), 0.0],
                     [0.0, 0.0, 1.0]])
    return turn @ tilt @ turn.T


def galaxy_collision(n: int = 30000, *, seed: int = 0, mass_ratio: float = 1.0,
                     size_ratio: float | None = None, pericentre: float = 3.0,
                     separation: float = 16.0, inclination_a: float = 0.0, node_a: float = 0.0,
                     inclination_b: float = 60.0, node_b: float = 30.0,
                     model: GalaxyModel | None = None,
                     particle_shares: tuple[float, float, float] = (0.5, 0.1, 0.4),
                     precision: str = "f64", **parameters) -> Particles:
    """Two disk galaxies on a parabolic encounter, in the centre-of-mass frame (G = 1).

    Galaxy A is ``model`` (default :class:`GalaxyModel`: mass 1, disk scale length 1), with any
    :class:`GalaxyModel` field overridden by keyword ``parameters``; galaxy B is the same model
    scaled to mass ``mass_ratio`` and lengths ``size_ratio`` (default sqrt(mass_ratio): equal
    surface densities), built for the same softening length in absolute units. The particles are
    split between the galaxies in proportion to mass, so like components carry like particle
    masses.

    The orbit is the zero-energy Kepler orbit of two point masses M_A and M_B with pericentre
    distance ``pericentre``, started on the way in at centre distance ``separation``, in the
    x-y plane with orbital angular momentum along +z. Each disk is tilted by its inclination
    about a line of nodes (degrees; see :func:`disk_rotation`). Populations: ``A disk``,
    ``A bulge``, ``A halo``, ``B disk``, ...
    """
    galaxies = collision_plan(n, mass_ratio=mass_ratio, size_ratio=size_ratio,
                              pericentre=pericentre, separation=separation,
                              inclination_a=inclination_a, node_a=node_a,
                              inclination_b=inclination_b, node_b=node_b, model=model,
                              particle_shares=particle_shares, **parameters)
    rng = np.random.default_rng(seed)
    parts = []
    for galaxy in galaxies:
        drawn = disk_galaxy(galaxy.count, seed=int(rng.integers(2**63)), model=galaxy.model,
                            particle_shares=particle_shares)
        parts.append(Particles(drawn.pos @ galaxy.rotation.T * galaxy.length_scale + galaxy.offset,
                               drawn.vel @ galaxy.rotation.T * galaxy.speed_scale + galaxy.drift,
                               drawn.mass * galaxy.mass_scale, drawn.population,
                               tuple(f"{galaxy.label} {name}" for name in drawn.population_names)))
    both = Particles.concatenate(parts)
    weights = both.mass / both.mass.sum()
    dtype = as_dtype(precision)
    return Particles((both.pos - weights @ both.pos).astype(dtype),
                     (both.vel - weights @ both.vel).astype(dtype), both.mass.astype(dtype),
                     both.population, both.population_names)


class PlannedGalaxy(NamedTuple):
    """One galaxy of a collision: ``count`` particles of ``model`` (in its own units, ``counts``
    in its disk, bulge and halo as ``disk_galaxy`` splits them), placed by
    scaling lengths by ``length_scale``, velocities by ``speed_scale`` and masses by
    ``mass_scale``, turning by ``rotation`` and moving to ``offset`` at ``drift``."""

    label: str
    count: int
    counts: list[int]
    model: GalaxyModel
    mass_scale: float
    length_scale: float
    speed_scale: float
    rotation: np.ndarray
    offset: np.ndarray
    drift: np.ndarray


def collision_plan(n, *, mass_ratio, size_ratio, pericentre, separation, inclination_a, node_a,
                   inclination_b, node_b, model, particle_shares,
                   **parameters) -> tuple[PlannedGalaxy, PlannedGalaxy]:
    """The two galaxies of ``galaxy_collision`` (its arguments but the seed and precision),
    checked, before any particle is drawn: the host draws them with ``disk_galaxy``,
    ``initial_conditions.on_device`` on a device."""
    if not mass_ratio > 0:
        raise InvalidInputError(f"mass_ratio must be positive, got {mass_ratio!r}")
    size_ratio = np.sqrt(mass_ratio) if size_ratio is None else size_ratio
    if not size_ratio > 0:
        raise InvalidInputError(f"size_ratio must be positive, got {size_ratio!r}")
    model = replace(model or GalaxyModel(), **parameters)
    if check_count(n) < 6:
        raise InvalidInputError(f"particle count must be an integer >= 6, got {n!r}")
    count_b = int(round(int(n) * mass_ratio / (1.0 + mass_ratio)))
    mass_a, mass_b = model.total_mass, model.total_mass * mass_ratio
    orbit = parabolic_orbit(mass_a, mass_b, pericentre=pericentre, separation=separation)
    galaxies = []
    for label, count, mass_scale, length_scale, rotation, offset, drift in (
            ("A", int(n) - count_b, 1.0, 1.0, disk_rotation(inclination_a, node_a),
             orbit.position_a, orbit.velocity_a),
            ("B", count_b, mass_ratio, size_ratio, disk_rotation(inclination_b, node_b),
             orbit.position_b, orbit.velocity_b)):
        # Built for the same softening in absolute units (one model when the sizes agree).
        scaled = (model if length_scale == 1.0
                  else replace(model, softening=model.softening / length_scale))
        # Scaling M and L keeps equilibrium when velocities scale as sqrt(G M / L).
        galaxies.append(PlannedGalaxy(label, count, _split_counts(count, particle_shares, scaled),
                                      scaled, mass_scale, length_scale,
                                      np.sqrt(mass_scale / length_scale), rotation, offset, drift))
    return tuple(galaxies)
