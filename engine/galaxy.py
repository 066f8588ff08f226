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

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from scipy.special import gammainc

from .errors import InvalidInputError
from .orbits import parabolic_orbit
from .particles import Particles, as_dtype
from .softened_gravity import ring_acceleration, shell_acceleration, shell_potential

# Toomre's stability constant for a stellar disk: Q = sigma_R kappa / (3.36 G Sigma).
TOOMRE_STELLAR = 3.36
# A Gaussian velocity draw above this share of the local escape speed is redrawn, so no
# particle leaves its galaxy at once (Hernquist 1993 caps at the escape speed itself).
ESCAPE_CAP = 0.95
# The disk's pull is summed over DISK_RINGS radii x DISK_LAYERS equal-mass heights; this
# resolution keeps the midplane v_c² and kappa² within 0.05% of a 4x finer sum (default model).
DISK_RINGS = 800
DISK_LAYERS = 16


@dataclass(frozen=True)
class GalaxyModel:
    """Structural parameters of one disk galaxy, in N-body units (G = 1).

    The defaults describe a galaxy of total mass 1 with disk scale length 1: disk, bulge and
    halo masses 0.15 / 0.05 / 0.8 (close to Hernquist 1993's 1 : 1/3 : 5.8), giving a rotation
    curve between v_c = 0.34 and 0.40 from 1 to 6 scale lengths and a rotation period of about
    27 time units at the disk's half-mass radius (1.68 scale lengths).

    Attributes
    ----------
    disk_mass, bulge_mass, halo_mass : float
        Mass of each component as sampled (inside its cutoff). Any may be 0 except the disk's.
    disk_scale : float
        Exponential scale length R_d of the disk surface density (default 1).
    disk_height : float
        z0 of the vertical profile sech²(z / z0) (default 0.1).
    disk_cutoff : float
        Disk particles are drawn inside this cylindrical radius, in units of R_d (default 8:
        0.3% of an untruncated exponential disk lies outside it).
    bulge_scale, halo_scale : float
        Hernquist scale lengths a (defaults 0.2 and 3).
    spheroid_cutoff : float
        Bulge and halo are truncated at this radius (default 20); the density keeps its
        Hernquist shape inside and the Jeans equation uses the truncated mass.
    toomre_q : float
        Toomre Q of the disk at ``toomre_radius`` (default 1.5).
    toomre_radius : float
        Where Q is set, in units of R_d (default 2; Q rises inwards and outwards from about there).
    softening : float
        Plummer softening the galaxy will be run with (default 0, Newtonian). Forces in the
        model use it, so the equilibrium is the one the N-body code sees: at eps = 0.05 R_d the
        softened v_c² is 1.4% below the Newtonian one at 1 R_d, 9% at 0.25 R_d, 32% at 0.1 R_d.
    """

    disk_mass: float = 0.15
    bulge_mass: float = 0.05
    halo_mass: float = 0.8
    disk_scale: float = 1.0
    disk_height: float = 0.1
    disk_cutoff: float = 8.0
    bulge_scale: float = 0.2
    halo_scale: float = 3.0
    spheroid_cutoff: float = 20.0
    toomre_q: float = 1.5
    toomre_radius: float = 2.0
    softening: float = 0.0

    def __post_init__(self):
        if not self.disk_mass > 0:
            raise InvalidInputError(f"disk_mass must be positive, got {self.disk_mass!r}")
        for name in ("bulge_mass", "halo_mass"):
            if not getattr(self, name) >= 0:
                raise InvalidInputError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        for name in ("disk_scale", "disk_height", "bulge_scale", "halo_scale", "toomre_q",
                     "toomre_radius"):
            if not getattr(self, name) > 0:
                raise InvalidInputError(f"{name} must be positive, got {getattr(self, name)!r}")
        if not self.softening >= 0:
            raise InvalidInputError(f"softening must be >= 0, got {self.softening!r}")
        if not self.disk_cutoff > self.toomre_radius:
            raise InvalidInputError("disk_cutoff must lie outside toomre_radius (both in R_d)")
        if not self.spheroid_cutoff > max(self.bulge_scale, self.disk_cutoff * self.disk_scale):
            raise InvalidInputError("spheroid_cutoff must enclose the disk and the bulge scale")

    @property
    def total_mass(self) -> float:
        return self.disk_mass + self.bulge_mass + self.halo_mass

    # Disk -----------------------------------------------------------------------------------

    def _disk_cut_fraction(self) -> float:
        x = self.disk_cutoff
        return 1.0 - (1.0 + x) * np.exp(-x)

    def surface_density(self, radius) -> np.ndarray:
        """Disk surface density Sigma(R) (zero beyond the cutoff)."""
        radius = np.asarray(radius, dtype=float)
        central = self.disk_mass / (2.0 * np.pi * self.disk_scale**2 * self._disk_cut_fraction())
        inside = radius <= self.disk_cutoff * self.disk_scale
        return np.where(inside, central * np.exp(-radius / self.disk_scale), 0.0)

    def disk_mass_within(self, radius) -> np.ndarray:
        """Disk mass inside cylindrical radius R."""
        x = np.minimum(np.asarray(radius, dtype=float) / self.disk_scale, self.disk_cutoff)
        return self.disk_mass * (1.0 - (1.0 + x) * np.exp(-x)) / self._disk_cut_fraction()

    def disk_half_mass_radius(self) -> float:
        """Cylindrical radius holding half the disk mass (1.678 R_d for the full exponential)."""
        grid = np.linspace(0.0, self.disk_cutoff * self.disk_scale, 4001)
        return float(np.interp(0.5 * self.disk_mass, self.disk_mass_within(grid), grid))

    # Spheroids ------------------------------------------------------------------------------

    def _hernquist_mass_within(self, radius, mass, scale) -> np.ndarray:
        radius = np.minimum(np.asarray(radius, dtype=float), self.spheroid_cutoff)
        cut = self.spheroid_cutoff
        return mass * (radius / (radius + scale)) ** 2 * ((cut + scale) / cut) ** 2

    def _hernquist_density(self, radius, mass, scale) -> np.ndarray:
        radius = np.asarray(radius, dtype=float)
        untruncated = mass * ((self.spheroid_cutoff + scale) / self.spheroid_cutoff) ** 2
        rho = untruncated * scale / (2.0 * np.pi * radius * (radius + scale) ** 3)
        return np.where(radius <= self.spheroid_cutoff, rho, 0.0)

    def spheroid_mass_within(self, radius) -> np.ndarray:
        """Bulge plus halo mass inside spherical radius r."""
        return (self._hernquist_mass_within(radius, self.bulge_mass, self.bulge_scale)
                + self._hernquist_mass_within(radius, self.halo_mass, self.halo_scale))

    def disk_mass_within_sphere(self, radius) -> np.ndarray:
        """Disk mass inside the sphere of radius r: the integral of 2 pi R Sigma(R) times the
        share of the sech² layer with |z| < sqrt(r² - R²), which is tanh(sqrt(r² - R²) / z0).
        Near the centre (r ~ z0) this is well below the mass inside the cylinder R < r."""
        radius = np.asarray(radius, dtype=float)
        # R = r sin(t) removes the square-root end point: sqrt(r² - R²) = r cos(t).
        nodes, weights = np.polynomial.legendre.leggauss(64)
        t = 0.25 * np.pi * (nodes + 1.0)
        r = radius[..., None]
        cylinder = r * np.sin(t)
        integrand = (2.0 * np.pi * cylinder * self.surface_density(cylinder)
                     * np.tanh(r * np.cos(t) / self.disk_height) * r * np.cos(t))
        return (integrand * weights).sum(axis=-1) * 0.25 * np.pi

    def mass_within(self, radius) -> np.ndarray:
        """Total mass inside the sphere of radius r; its pull, G M(<r) / r², is the spherically
        averaged pull of the galaxy, disk included (the monopole is exact for any shape)."""
        return self.spheroid_mass_within(radius) + self.disk_mass_within_sphere(radius)

    # Softened gravity ----------------------------------------------------------------------

    @cached_property
    def _force_table(self) -> dict[str, np.ndarray]:
        """Midplane circular speed and spherically averaged acceleration and potential on a
        logarithmic radius grid, all with the model's Plummer softening."""
        outer = self.spheroid_cutoff
        radii = np.geomspace(1e-3 * self.disk_scale, outer, 240)
        # Shells carrying the spherical mass profile (disk counted as spherical).
        edges = np.concatenate([[0.0], np.geomspace(1e-5 * self.disk_scale, outer, 3000)])
        shell_radii = np.sqrt(np.maximum(edges[:-1], 0.5 * edges[1]) * edges[1:])
        all_shells = np.diff(self.mass_within(edges))
        spheroid_shells = np.diff(self.spheroid_mass_within(edges))
        # Rings carrying the disk: uniform in R, equal-mass slices of sech² in z.
        ring_edges = np.linspace(0.0, self.disk_cutoff * self.disk_scale, DISK_RINGS + 1)
        ring_mass = np.diff(self.disk_mass_within(ring_edges))
        slice_centres = (np.arange(DISK_LAYERS) + 0.5) / DISK_LAYERS
        heights = self.disk_height * np.arctanh(2.0 * slice_centres - 1.0)
        ring_radii = np.repeat(0.5 * (ring_edges[1:] + ring_edges[:-1]), DISK_LAYERS)
        ring_heights = np.tile(heights, DISK_RINGS)
        ring_masses = np.repeat(ring_mass / DISK_LAYERS, DISK_LAYERS)
        eps = self.softening
        spheroid_pull = shell_acceleration(radii, shell_radii, spheroid_shells, eps)
        # Rings closer than their spacing would turn the sum into a comb of log singularities;
        # smoothing them over one spacing (0.01 R_d by default) is invisible above that scale.
        ring_eps = max(eps, ring_edges[1])
        disk_pull = ring_acceleration(radii, ring_radii, ring_heights, ring_masses, ring_eps)
        midplane = disk_pull + spheroid_pull
        vc2 = radii * midplane
        # kappa² = (d v_c² / d ln R + 2 v_c²) / R².
        kappa2 = (np.gradient(vc2, np.log(radii)) + 2.0 * vc2) / radii**2
        return {
            "radii": radii,
            "vc2": vc2,
            "kappa2": kappa2,
            "spheroid_vertical": self._spheroid_vertical_virial(radii, spheroid_pull),
            "gravity": shell_acceleration(radii, shell_radii, all_shells, eps),
            "potential": shell_potential(radii, shell_radii, all_shells, eps),
        }

    def _layer_heights(self, count: int) -> np.ndarray:
        """Heights of ``count`` equal-mass layers of the sech²(z/z0) profile."""
        return self.disk_height * np.arctanh(2.0 * (np.arange(count) + 0.5) / count - 1.0)

    def _spheroid_vertical_virial(self, radii, spheroid_pull) -> np.ndarray:
        """<z dPhi_spheroids/dz> over the disk's layers at each radius: the spheroids are
        spherical, so dPhi/dz = g(r) z / r with r² = R² + z²."""
        z = self._layer_heights(64)
        r = np.hypot(radii[:, None], z[None, :])
        pull = np.interp(np.log(r), np.log(radii), spheroid_pull)
        return (pull * z**2 / r).mean(axis=1)

    @cached_property
    def _sheet_virial_factor(self) -> float:
        """<z dPhi_self/dz> / (2 pi G Sigma) for a softened sech² sheet: a Plummer-softened plane
        pulls with 2 pi G Sigma z / sqrt(z² + eps²), so the factor is the layer-pair average of
        z (z - z') / sqrt((z - z')² + eps²); z0 / 2 without softening."""
        z = self._layer_heights(400)
        gap = z[:, None] - z[None, :]
        return float((z[:, None] * gap / np.sqrt(gap**2 + self.softening**2 + 1e-300)).mean())

    def _lookup(self, key: str, radius) -> np.ndarray:
        table = self._force_table
        radius = np.clip(np.asarray(radius, dtype=float), table["radii"][0], table["radii"][-1])
        return np.interp(np.log(radius), np.log(table["radii"]), table[key])

    def circular_speed_squared(self, radius) -> np.ndarray:
        """v_c²(R) in the disk plane: R times the softened radial pull of the thick disk (as
        rings) and of the bulge and halo (as shells)."""
        return self._lookup("vc2", radius)

    def kappa_squared(self, radius) -> np.ndarray:
        """Epicyclic frequency squared, kappa² = d(v_c²)/dR / R + 2 v_c² / R²."""
        return self._lookup("kappa2", radius)

    def spherical_gravity(self, radius) -> np.ndarray:
        """Inward softened acceleration of the spherically averaged galaxy at radius r."""
        return self._lookup("gravity", radius)

    def potential(self, radius) -> np.ndarray:
        """Softened potential of the spherically averaged galaxy (-M/r beyond the cutoff)."""
        radius = np.asarray(radius, dtype=float)
        outer = self.spheroid_cutoff
        return np.where(radius > outer, -self.total_mass / np.maximum(radius, outer),
                        self._lookup("potential", radius))

    def rotation_period(self, radius: float | None = None) -> float:
        """Circular-orbit period 2 pi R / v_c at R (default: the disk's half-mass radius)."""
        radius = self.disk_half_mass_radius() if radius is None else float(radius)
        return float(2.0 * np.pi * radius / np.sqrt(self.circular_speed_squared(radius)))

    # Disk kinematics ------------------------------------------------------------------------

    def sigma_z_squared(self, radius) -> np.ndarray:
        """Vertical dispersion from the vertical virial theorem of the sech²(z/z0) layer at R,
        sigma_z² = <z dPhi/dz>: the layer's own softened pull (as a local plane sheet; without
        softening this is the isothermal sheet's pi G Sigma z0) plus the bulge's and halo's."""
        radius = np.asarray(radius, dtype=float)
        own = 2.0 * np.pi * self.surface_density(radius) * self._sheet_virial_factor
        return own + self._lookup("spheroid_vertical", radius)

    def sigma_r_squared(self, radius) -> np.ndarray:
        """Radial dispersion: sigma_R² proportional to Sigma(R) (Hernquist 1993), normalised
        so that Q(toomre_radius) = toomre_q."""
        reference = self.toomre_radius * self.disk_scale
        sigma_ref = (self.toomre_q * TOOMRE_STELLAR * self.surface_density(reference)
                     / np.sqrt(self.kappa_squared(reference)))
        radius = np.asarray(radius, dtype=float)
        return sigma_ref**2 * np.exp(-(radius - reference) / self.disk_scale)

    def toomre_q_at(self, radius) -> np.ndarray:
        """The model's Toomre Q(R) = sigma_R kappa / (3.36 G Sigma)."""
        return (np.sqrt(self.sigma_r_squared(radius) * self.kappa_squared(radius))
                / (TOOMRE_STELLAR * self.surface_density(radius)))

    def mean_rotation(self, radius) -> np.ndarray:
        """Mean azimuthal speed from the asymmetric-drift equation (Hernquist 1993 eq. 2.28):
        v_phi² = v_c² + sigma_R² (1 - kappa²/(4 Omega²) - 2 R / R_d), floored at 0 where the
        dispersion exceeds the rotation (the very centre)."""
        radius = np.asarray(radius, dtype=float)
        vc2 = self.circular_speed_squared(radius)
        ratio = self.kappa_squared(radius) * radius**2 / (4.0 * vc2)
        drift = self.sigma_r_squared(radius) * (1.0 - ratio - 2.0 * radius / self.disk_scale)
        return np.sqrt(np.maximum(vc2 + drift, 0.0))

    def spheroid_dispersion_squared(self, radius, mass: float, scale: float) -> np.ndarray:
        """Isotropic Jeans dispersion of a Hernquist component in the total potential:
        sigma²(r) = (1/rho) integral_r^cutoff rho(r') g(r') dr', g the softened pull."""
        grid, cumulative = self._jeans_table(mass, scale)
        radius = np.clip(np.asarray(radius, dtype=float), grid[0], grid[-1])
        pressure = np.interp(np.log(radius), np.log(grid), cumulative)
        return pressure / self._hernquist_density(radius, mass, scale)

    def _jeans_table(self, mass, scale, points: int = 4000):
        grid = np.geomspace(1e-5 * self.disk_scale, self.spheroid_cutoff, points)
        # Integrand in d ln r: rho * g * r.
        integrand = self._hernquist_density(grid, mass, scale) * self.spherical_gravity(grid) * grid
        pieces = 0.5 * (integrand[1:] + integrand[:-1]) * np.diff(np.log(grid))
        outside = np.concatenate([np.cumsum(pieces[::-1])[::-1], [0.0]])
        return grid, outside


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
    if int(n) != n or n < 3:
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
    vc2 = model.circular_speed_squared(radius)
    epicyclic = model.kappa_squared(radius) * radius**2 / (4.0 * vc2)
    v_phi = (model.mean_rotation(radius)
             + rng.normal(0.0, 1.0, count) * np.sqrt(model.sigma_r_squared(radius) * epicyclic))
    v_z = rng.normal(0.0, 1.0, count) * np.sqrt(model.sigma_z_squared(radius))
    cos, sin = np.cos(phi), np.sin(phi)
    pos = np.stack([radius * cos, radius * sin, z], axis=1)
    vel = np.stack([v_r * cos - v_phi * sin, v_r * sin + v_phi * cos, v_z], axis=1)
    return pos, vel


def _sample_spheroid(model: GalaxyModel, count, mass, scale, rng: np.random.Generator):
    # Invert the truncated Hernquist M(r): sqrt(M(r)/M_untruncated) = r / (r + a).
    cut = model.spheroid_cutoff
    s = np.sqrt(rng.uniform(0.0, 1.0, count)) * cut / (cut + scale)
    radius = np.maximum(scale * s / (1.0 - s), 1e-6 * scale)
    cap = ESCAPE_CAP * np.sqrt(-2.0 * model.potential(radius))
    width = _capped_gaussian_width(model.spheroid_dispersion_squared(radius, mass, scale), cap)
    vel = rng.normal(0.0, 1.0, (count, 3)) * width[:, None]
    while (fast := np.einsum("ij,ij->i", vel, vel) > cap**2).any():
        vel[fast] = rng.normal(0.0, 1.0, (fast.sum(), 3)) * width[fast, None]
    return _random_directions(rng, count) * radius[:, None], vel


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
    if not mass_ratio > 0:
        raise InvalidInputError(f"mass_ratio must be positive, got {mass_ratio!r}")
    size_ratio = np.sqrt(mass_ratio) if size_ratio is None else size_ratio
    if not size_ratio > 0:
        raise InvalidInputError(f"size_ratio must be positive, got {size_ratio!r}")
    model = replace(model or GalaxyModel(), **parameters)
    if int(n) != n or n < 6:
        raise InvalidInputError(f"particle count must be an integer >= 6, got {n!r}")
    count_b = int(round(int(n) * mass_ratio / (1.0 + mass_ratio)))
    mass_a, mass_b = model.total_mass, model.total_mass * mass_ratio
    orbit = parabolic_orbit(mass_a, mass_b, pericentre=pericentre, separation=separation)
    rng = np.random.default_rng(seed)
    galaxies = []
    for label, count, mass_scale, length_scale, rotation, offset, drift in (
            ("A", int(n) - count_b, 1.0, 1.0, disk_rotation(inclination_a, node_a),
             orbit.position_a, orbit.velocity_a),
            ("B", count_b, mass_ratio, size_ratio, disk_rotation(inclination_b, node_b),
             orbit.position_b, orbit.velocity_b)):
        # Built for the same softening in absolute units (one model when the sizes agree).
        scaled = (model if length_scale == 1.0
                  else replace(model, softening=model.softening / length_scale))
        galaxy = disk_galaxy(count, seed=int(rng.integers(2**63)), model=scaled,
                             particle_shares=particle_shares)
        # Scaling M and L keeps equilibrium when velocities scale as sqrt(G M / L).
        speed_scale = np.sqrt(mass_scale / length_scale)
        galaxies.append(Particles(galaxy.pos @ rotation.T * length_scale + offset,
                                  galaxy.vel @ rotation.T * speed_scale + drift,
                                  galaxy.mass * mass_scale, galaxy.population,
                                  tuple(f"{label} {name}" for name in galaxy.population_names)))
    both = Particles.concatenate(galaxies)
    weights = both.mass / both.mass.sum()
    dtype = as_dtype(precision)
    return Particles((both.pos - weights @ both.pos).astype(dtype),
                     (both.vel - weights @ both.vel).astype(dtype), both.mass.astype(dtype),
                     both.population, both.population_names)
