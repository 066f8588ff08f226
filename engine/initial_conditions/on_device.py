"""Initial conditions drawn on a compute device, straight into a device state's rows
(``kernels/plummer.cl``): a billion-body run would otherwise build 56 GB of float64 particles on
the host first and copy them over.

The distributions are the host generators' (``ics.py``); the random numbers are a counter-based
generator's, one stream per body, so a seed gives the same bodies on every device and launch,
but not the bodies the host generator gives for that seed.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..compute import Context, DeviceArray, launch_size
from ..errors import InvalidInputError
from .ics import MASS_CUTOFF, PLUMMER_SCALE

# The generators that draw on a device (a subset of ics.GENERATORS' names).
DEVICE_GENERATORS = ("plummer",)
# Work-items of the kernels' groups, and the centre reduction's most groups (their sums are
# downloaded and added on the host).
DRAW_GROUP = 64
CENTRE_GROUP = 256
CENTRE_GROUPS = 256


def check_device_generator(name: str) -> None:
    if name not in DEVICE_GENERATORS:
        raise InvalidInputError(f"initial conditions {name!r} are drawn on the host only; on a "
                                f"device: {', '.join(DEVICE_GENERATORS)}")


def check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise InvalidInputError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return int(seed)


def draw_on_device(name: str, context: Context, body: DeviceArray, velocity: DeviceArray, count: int,
                   *, seed: int) -> None:
    """Write the initial conditions ``name`` (one of ``DEVICE_GENERATORS``) of ``count`` bodies
    into the first ``count`` rows of a state's ``body`` (x, y, z, mass) and ``velocity``
    (vx, vy, vz, 0) arrays (``real4`` rows, float32 or float64), in their centre-of-mass frame."""
    check_device_generator(name)
    seed = check_seed(seed)
    accum = np.dtype(np.float64 if context.info.fp64 else np.float32)
    program = context.build(["plummer.cl"], package=__package__, defines={
        "REAL_BITS": body.dtype.itemsize * 8, "ACCUM_BITS": accum.itemsize * 8,
        "PLUMMER_SCALE": float(PLUMMER_SCALE), "MASS_CUTOFF": MASS_CUTOFF, "TWO_PI": 2 * math.pi,
        "CENTRE_GROUP": CENTRE_GROUP})
    n = np.int32(count)
    program.kernel("plummer_bodies").launch(launch_size(count, DRAW_GROUP), DRAW_GROUP, np.uint64(seed), n,
                                            body, velocity)
    groups = min(CENTRE_GROUPS, -(-count // CENTRE_GROUP))
    partials = context.empty(6 * groups, accum, "temporaries.centre_partials")
    program.kernel("centre_partials").launch(groups * CENTRE_GROUP, CENTRE_GROUP, body, velocity, n, partials)
    means = partials.download().reshape(-1, 6).sum(axis=0, dtype=np.float64) / count
    program.kernel("centre_shift").launch(launch_size(count, DRAW_GROUP), DRAW_GROUP, n,
                                          *(accum.type(mean) for mean in means), body, velocity)
