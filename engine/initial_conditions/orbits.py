"""Two-body Kepler orbits (G = 1) for placing systems on encounters."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError


@dataclass(frozen=True)
class TwoBodyState:
    """Positions and velocities of two point masses in their centre-of-mass frame, and the time
    until pericentre passage."""

    position_a: np.ndarray
    velocity_a: np.ndarray
    position_b: np.ndarray
    velocity_b: np.ndarray
    time_to_pericentre: float


def parabolic_orbit(mass_a: float, mass_b: float, *, pericentre: float,
                    separation: float) -> TwoBodyState:
    """Two point masses approaching on a parabolic (zero-energy) orbit.

    The relative orbit r = 2 q / (1 + cos f) lies in the x-y plane with angular momentum along
    +z and pericentre on the +x axis; B sits at distance ``separation`` from A on the incoming
    branch (f < 0). Time to pericentre from Barker's equation,
    t = sqrt(2 q³ / mu) (D + D³ / 3) with D = tan(|f| / 2) and mu = G (M_A + M_B).
    """
    if not (mass_a > 0 and mass_b > 0):
        raise InvalidInputError("both masses must be positive")
    if not pericentre > 0:
        raise InvalidInputError(f"pericentre must be positive, got {pericentre!r}")
    if not separation >= pericentre:
        raise InvalidInputError(
            f"separation ({separation!r}) must be at least the pericentre distance "
            f"({pericentre!r})")
    mu = mass_a + mass_b
    anomaly = -np.arccos(2.0 * pericentre / separation - 1.0)
    speed_scale = np.sqrt(mu / (2.0 * pericentre))
    relative_position = separation * np.array([np.cos(anomaly), np.sin(anomaly), 0.0])
    radial, tangential = speed_scale * np.sin(anomaly), speed_scale * (1.0 + np.cos(anomaly))
    relative_velocity = (radial * np.array([np.cos(anomaly), np.sin(anomaly), 0.0])
                         + tangential * np.array([-np.sin(anomaly), np.cos(anomaly), 0.0]))
    share_a, share_b = mass_b / mu, mass_a / mu
    half_tan = np.tan(0.5 * abs(anomaly))
    time = np.sqrt(2.0 * pericentre**3 / mu) * (half_tan + half_tan**3 / 3.0)
    return TwoBodyState(-share_a * relative_position, -share_a * relative_velocity,
                        share_b * relative_position, share_b * relative_velocity, float(time))
