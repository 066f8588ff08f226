"""Automatic exposure: an exposure chosen from the accumulated light itself, so that a sparse
cluster, a galaxy and a dense snapshot of millions of particles all open neither blown out nor
black. The rule is ADR-0230's."""

from __future__ import annotations

import numpy as np

# The brightest share of the lit pixels that may come near white: the exposure puts this
# percentile of their light at BRIGHT_LIGHT.
BRIGHT_PERCENTILE = 99.5
# Exposed light where the filmic curve gives 0.95, which gamma 2.2 shows as 250 of 255: bright,
# with room left before the curve saturates (at about 7.2).
BRIGHT_LIGHT = 3.0
# Never brighter than the fixed default of old: a sparse scene keeps single particles as bright
# as they were, rather than each being lifted towards white.
MAX_EXPOSURE = 0.6
MIN_EXPOSURE = 1e-6


def auto_exposure(light: np.ndarray, *, scale: float = 1.0) -> float | None:
    """The exposure for ``light`` (an (..., 3 or 4) array of accumulated light; alpha ignored)
    shown multiplied by ``scale`` (a renderer's ``light_scale``), or None when nothing is lit.

    1. A pixel's light is its brightest colour channel (the channel that saturates first).
    2. Of the lit pixels (light > 0), take the BRIGHT_PERCENTILE-th percentile, times ``scale``.
    3. The exposure maps it to BRIGHT_LIGHT, clamped to [MIN_EXPOSURE, MAX_EXPOSURE].
    """
    channels = np.asarray(light)
    # the channels' maximum pairwise: a reduction over an axis of three is several times slower
    brightest = np.maximum(np.maximum(channels[..., 0], channels[..., 1]), channels[..., 2]).ravel()
    lit = brightest[np.isfinite(brightest) & (brightest > 0)]
    if lit.size == 0:
        return None
    level = float(np.percentile(lit, BRIGHT_PERCENTILE)) * scale
    return float(np.clip(BRIGHT_LIGHT / level, MIN_EXPOSURE, MAX_EXPOSURE))


def ease_exposure(current: float, target: float, *, share: float = 0.5) -> float:
    """A step from ``current`` towards ``target`` (``share`` of the way, in log space), so the
    picture does not flicker as the light changes from frame to frame."""
    return float(np.exp((1.0 - share) * np.log(current) + share * np.log(target)))
