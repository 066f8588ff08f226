"""What the two fast multipole solvers share: their option records (so ``cpu-fmm`` and
``gpu-fmm`` take the same settings to the same lists, and the ``accuracy`` table can drive
both), and the expansion index tables of an order (docs/adr/0110)."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from ... import _native
from ._options import LEAF_CAPACITY, THETA, Option

# theta < 1 keeps every accepted pair's expansions convergent (docs/adr/0110).
FMM_THETA = replace(THETA, default=0.5, maximum=0.95,
                    doc="opening angle: cells interact through expansions when theta * distance "
                        "between their centres exceeds the sum of their half diagonals")
FMM_ORDER = Option("order", int, 5, "expansion order p (multipoles and local expansions up to "
                   "degree p): higher is more accurate and slower", minimum=1,
                   maximum=_native.FMM_MAX_ORDER)
# An M2L costs about as much as 50-100 pair interactions on the CPU, so large leaves pay: at
# N = 65536, p 5, theta 0.6, capacities 16/32/64/128 took 1.06/0.61/0.36/0.31 s at about the same
# error (docs/performance.md); 64 keeps P2P in check on clustered inputs.
FMM_LEAF_CAPACITY = replace(LEAF_CAPACITY, default=64)


@functools.lru_cache(maxsize=None)
def expansion_tables(order: int) -> dict[str, np.ndarray | int]:
    """The index tables of ``native/fmm_expansions.hpp`` for one order, as numpy arrays."""
    return dict(_native.fmm_tables(order))
