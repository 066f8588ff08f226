"""The peer FMM for ``orrery bench fmm --peers``: jz-fmm (JAX with CUDA kernels, Plummer
softening like ours, expansions about geometric centres, opening ``0.25 |ext_A + ext_B|^2 <
theta^2 |dx|^2``). Its settings are swept like ours and its errors measured by our sampled
float64 reference, so that the equal-error table compares both at matched error. CUDA only: where
jz-fmm, JAX or a CUDA device is missing the peer is skipped with the reason.

What a setting holds (:class:`PeerSetting`) are the knobs of jz-fmm's ``FMMConfig`` that change
its speed or whether it runs: the expansion order ``p`` and opening angle ``theta``, its tree's
``max_leaf_size`` (at most 128, the block of its leaf-leaf kernel) and ``coarse_fac`` (how much
larger a node may be than a node of the plane below), and ``alloc_fac_ilist`` (interaction-list
entries allocated per leaf). The rest stay at jz-fmm's own FMM defaults: geometric centres (its
paper found no accuracy gain from mass centres above p = 1), ``alloc_fac_nodes`` 1.2, and the
communication buffers, which only a multi-GPU run uses.

jz-fmm allocates its lists when it compiles and checks them when it runs: a list too small for
a setting raises, through a host callback (jztree's ``raise_if``), an error whose text says
which allocation was too small and which ``alloc_fac_`` to increase. :func:`overflow` reads that
report, and such a setting is a row saying so, never a timing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..engine._optional import missing

# jz-fmm's leaf-leaf kernel runs a block of 128 threads a leaf and asserts that a leaf fits.
MAX_LEAF_SIZE = 128

# jztree's allocation checks: "Interaction list allocation too small (9/8)", "Tree-node
# allocation too small: ...", "Cannot fit ...", each followed by a line "Hint: Increase ...".
_OVERFLOW = re.compile(r"(?P<what>(?:[^\n]*allocation too small|Cannot fit)[^\n]*)\n"
                       r"\s*Hint: (?P<hint>Increase [^\n]*)")


@dataclass(frozen=True)
class PeerSetting:
    """One setting of jz-fmm: ``order`` (p), ``theta``, ``leaf_size`` (max_leaf_size),
    ``coarse_factor`` (coarse_fac) and ``ilist_factor`` (alloc_fac_ilist)."""

    order: int
    theta: float
    leaf_size: int
    coarse_factor: float
    ilist_factor: float


class ListOverflow(RuntimeError):
    """A setting's preallocated lists were too small; the text is jz-fmm's report and hint.
    ``ilist``: the interaction list overflowed (a larger ``ilist_factor`` may fit)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.ilist = "alloc_fac_ilist" in message


@dataclass(frozen=True)
class FmmPeer:
    """``prepare(pos, mass, setting)`` uploads the particles and returns ``(evaluate, read)``:
    ``evaluate()`` is one timed force evaluation on the device (its tree build included), which
    raises :class:`ListOverflow` where the setting overflows its lists; ``read()`` the
    accelerations of the last one as float64 host arrays."""

    name: str
    prepare: Callable[[np.ndarray, np.ndarray, PeerSetting], tuple[Callable[[], object],
                                                                   Callable[[], np.ndarray]]]


def overflow(error: BaseException) -> ListOverflow | None:
    """``error`` as a :class:`ListOverflow` where it is jz-fmm's report of a preallocated list
    too small, else None."""
    found = _OVERFLOW.search(str(error))
    return ListOverflow(f"{found['what'].strip()}; {found['hint'].strip()}") if found else None


def fmm_config(setting: PeerSetting, softening: float):
    """jz-fmm's ``FMMConfig`` for ``setting``: its own defaults but for the swept knobs."""
    from jzfmm import FMMConfig, OpeningByAngle, PlummerKernel

    defaults = FMMConfig()
    return replace(defaults, p=int(setting.order), opening=OpeningByAngle(theta=float(setting.theta)),
                   kernel=PlummerKernel(softening=float(softening)),
                   tree=replace(defaults.tree, max_leaf_size=int(setting.leaf_size),
                                coarse_fac=float(setting.coarse_factor)),
                   alloc_fac_ilist=float(setting.ilist_factor))


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
    from jzfmm.fmm import fast_multipole_method
    from jztree.data import PosMass

    def prepare(pos, mass, setting):
        part = PosMass(pos=jnp.asarray(pos, jnp.float32), mass=jnp.asarray(mass, jnp.float32))
        config = fmm_config(setting, softening)
        result = {}

        def evaluate():
            try:
                result["loc"] = fast_multipole_method.jit(part, config)
                result["loc"].values.block_until_ready()
            except RuntimeError as error:  # JAX's runtime error, carrying the callback's text
                raise overflow(error) or error from None

        return evaluate, lambda: np.asarray(result["loc"].force(), np.float64)

    return FmmPeer("jz-fmm", prepare)
