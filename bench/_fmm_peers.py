"""The peer FMM for ``orrery bench fmm --peers``: jz-fmm (JAX with CUDA kernels, Plummer
softening like ours, expansions about geometric centres, opening ``0.25 |ext_A + ext_B|^2 <
theta^2 |dx|^2``). Its settings are swept like ours and its errors measured by our sampled
float64 reference, so that the equal-error table compares both at matched error. CUDA only: where
jz-fmm, JAX or a CUDA device is missing the peer is skipped with the reason."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..engine._optional import missing

# Its interaction lists are preallocated (alloc_fac_ilist entries per leaf); the default 64
# overflows at p 3-4, theta 0.6 on a Plummer sphere (docs/performance.md), so sweeps start here.
ILIST_FACTOR = 256.0


@dataclass(frozen=True)
class FmmPeer:
    """``prepare(pos, mass, order, theta)`` uploads the particles and returns ``(evaluate,
    read)``: ``evaluate()`` is one timed force evaluation on the device (its tree build
    included), ``read()`` the accelerations of the last one as float64 host arrays."""

    name: str
    prepare: Callable[[np.ndarray, np.ndarray, int, float], tuple[Callable[[], object],
                                                                  Callable[[], np.ndarray]]]


def jzfmm_peer(softening: float) -> FmmPeer | str:
    """jz-fmm set up with our softening, or the reason it cannot run here."""
    # JAX takes 75% of the GPU's memory when its backend starts unless told not to; our
    # solver's CuPy arrays share the device in the same process.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if why := missing("jax", "jztree", "jzfmm"):
        return f"peer jz-fmm skipped: {why}"
    import jax

    try:
        jax.devices("gpu")
    except RuntimeError as error:
        return f"peer jz-fmm skipped: it runs on CUDA only and JAX has no CUDA device here ({error})"
    import jax.numpy as jnp
    from jzfmm import FMMConfig, OpeningByAngle, PlummerKernel
    from jzfmm.fmm import fast_multipole_method
    from jztree.data import PosMass

    def prepare(pos, mass, order, theta):
        part = PosMass(pos=jnp.asarray(pos, jnp.float32), mass=jnp.asarray(mass, jnp.float32))
        config = FMMConfig(p=int(order), opening=OpeningByAngle(theta=float(theta)),
                           kernel=PlummerKernel(softening=float(softening)),
                           alloc_fac_ilist=ILIST_FACTOR)
        result = {}

        def evaluate():
            result["loc"] = fast_multipole_method.jit(part, config)
            result["loc"].values.block_until_ready()

        return evaluate, lambda: np.asarray(result["loc"].force(), np.float64)

    return FmmPeer("jz-fmm", prepare)
