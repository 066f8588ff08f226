"""The structure of one disk galaxy (G = 1): densities, the softened gravity of the three
components, and the velocity moments the Jeans equations give. Sampling particles from it is
:mod:`orrery.engine.initial_conditions.galaxy`'s job; docs/galaxy-model.md explains the choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..errors import InvalidInputError
from .softened_gravity import ring_acceleration, shell_acceleration, shell_potential

# Toomre's stability constant for a stellar disk: Q = sigma_R kappa / (3.36 G Sigma).
TOOMRE_STELLAR = 3.36
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
