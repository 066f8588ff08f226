"""What the two fast multipole solvers share: their option records (so ``cpu-fmm`` and
``gpu-fmm`` take the same settings to the same lists, and the ``accuracy`` table can drive
both), how they pick theta and order (given, the defaults, or from the accuracy table, whose
variants are the orders), their work measure, and the expansion index tables of an order
(docs/adr/0110)."""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np

from ... import _native
from ..errors import InvalidInputError
from ..options import LEAF_CAPACITY, THETA, Option
from ..tuning.accuracy_table import ThetaSetting

FMM_DEFAULT_THETA = 0.5
FMM_DEFAULT_ORDER = 5
# theta < 1 keeps every accepted pair's expansions convergent (docs/adr/0110). No default of
# its own, so that theta and accuracy given together can be refused.
FMM_THETA = replace(THETA, default=None, maximum=0.95,
                    doc=f"opening angle: cells interact through expansions when theta * distance "
                        f"between their centres exceeds the sum of their half diagonals (default "
                        f"{FMM_DEFAULT_THETA} unless accuracy is given)")
FMM_ORDER = Option("order", int, None, f"expansion order p (multipoles and local expansions up "
                   f"to degree p): higher is more accurate and slower (default "
                   f"{FMM_DEFAULT_ORDER}; with accuracy, chosen from the accuracy table unless "
                   f"given)", minimum=1, maximum=_native.FMM_MAX_ORDER)
# The orders the accuracy table measures (``orrery calibrate --accuracy``) and ``accuracy=``
# chooses among: below 2 no order was ever the cheapest at 1e-2 or tighter, and above 7 the
# float32 pair sums, not the series, set the error.
ACCURACY_ORDERS = (2, 3, 4, 5, 6, 7)
# The opening angles it measures: below 0.2 no order is the cheapest way to any error above
# 1e-5, and 0.95 is the largest theta allowed.
ACCURACY_THETAS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9)
# The heavy share the table also measures each order with (see FMM_HEAVY_SHARE), and at which
# angles. Heavy nodes take the tail of the errors away at wide angles: cpu-fmm at N = 262,144,
# p 7, theta 0.95 with heavy nodes met 1e-3 on Plummer, Hernquist and the galaxy collision
# (worst 8.1e-4) with 2.3x fewer pair equivalents than theta 0.7 without (worst 7.2e-4), in
# 0.21-0.32 s against 0.35-0.54 (issue 48). Below theta 0.5 few pairs reach a heavy node's
# tighter angle and the plain rows serve.
ACCURACY_HEAVY_SHARE = 0.003
ACCURACY_HEAVY_THETAS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
# An M2L costs about m2l_pair_equivalents(p) pair interactions on the CPU (188 at p 5), so large
# leaves pay: at N = 65536, p 5, theta 0.6, capacities 16/32/64/128 took 1.06/0.61/0.36/0.31 s at
# about the same error (docs/performance.md). At N = 262144 (Plummer, RMS and p90 <= 1e-3, the
# 2-core machine, 2 Dec) cpu-fmm took 100-111 ms at 96 against 135-140 at 64; on the H200 gpu-fmm
# at 10M 30.6 ms against 34.0, the same errors; 128 and more moved gpu-fmm's time into P2P. One
# default for both, so that equal settings give equal trees and lists. The accuracy table's FMM
# rows were measured at 96.
FMM_LEAF_CAPACITY = replace(LEAF_CAPACITY, default=96)
# Heavy nodes (native fmm_lists.hpp, docs/fmm-tuning-log.md#0189): where one node pulls most of a target's
# force (a Plummer sphere's outskirts, pulled by a node holding its core), that pair's expansion
# error is most of the target's, and it sets the tail of the relative errors that their RMS
# follows. One record for both FMMs, so that equal settings still give equal lists.
FMM_HEAVY_SHARE = Option("heavy_share", float, None,
                         "a node holding more than this share of the bodies is heavy: pairs with "
                         "one open at theta * 2^(-(k+1)/(p+1)), k = log2 of its bodies over that "
                         "share (default: with accuracy, chosen by the accuracy table with the "
                         "order and theta; else none is heavy, theta alone decides)",
                         minimum=0.0, exclusive_minimum=True, maximum=0.5)
# The precision of the expansions, one record for both FMMs (each solver says what it rounds:
# docs/fmm-tuning-log.md#0165); left out, :func:`expansion_precision` chooses.
FMM_EXPANSIONS = Option("expansions", str, None, "precision of the expansions", choices=("f64", "f32"))
# The tightest accuracy float32 expansions are chosen for. Their rounding moves the forces by
# less than 1e-7 of |a|: gpu-fmm's f32 and f64 expansions gave the same RMS and 90th-percentile
# errors to two digits down to 3.8e-7 (p 7, theta 0.2, N = 8192, Plummer, Hernquist and the
# galaxy collision, sycl:cpu, issue 48), a hundredth of this floor; below it, doubles.
F32_EXPANSIONS_FLOOR = 1e-5


def expansion_precision(expansions: str | None, precision: str, accuracy: float | None) -> str:
    """An FMM's expansion precision: the one given; else the bodies' precision, except that
    float32 bodies asking for an accuracy tighter than ``F32_EXPANSIONS_FLOOR`` get doubles
    (float expansions meet every looser target at half the bytes and, on a GPU, twice the FMA
    rate: at 10M bodies on the H200, p 6, theta 0.95, 18.5 ms against 41.7)."""
    if expansions is not None:
        return expansions
    if precision == "f32" and accuracy is not None and accuracy < F32_EXPANSIONS_FLOOR:
        return "f64"
    return precision


def order_variants(order: int | None, accuracy: float | None,
                   heavy_share: float | None = None) -> list[dict]:
    """The accuracy-table variants an FMM chooses among: the order given, else every measured
    order when an accuracy is asked for, else the default order. With an accuracy, each order
    with and without heavy nodes (``ACCURACY_HEAVY_SHARE``), or with the heavy share given."""
    if accuracy is None:
        return [{"order": FMM_DEFAULT_ORDER if order is None else order}]
    if heavy_share not in (None, ACCURACY_HEAVY_SHARE):
        raise InvalidInputError(
            f"accuracy= knows the errors of heavy_share {ACCURACY_HEAVY_SHARE:g} alone (the "
            f"accuracy table's), not of heavy_share={heavy_share:g}: leave heavy_share to the "
            f"table, or give theta with it instead of accuracy")
    orders = ACCURACY_ORDERS if order is None else (order,)
    shares = (None, ACCURACY_HEAVY_SHARE) if heavy_share is None else (heavy_share,)
    return [{"order": o} if share is None else {"order": o, "heavy_share": share}
            for o in orders for share in shares]


# Every variant ``orrery calibrate --accuracy`` measures for the FMMs.
ACCURACY_VARIANTS = tuple(order_variants(None, 1.0))


def accuracy_thetas(variant: dict) -> tuple[float, ...]:
    """The angles the table measures ``variant`` at: the wide ones with heavy nodes."""
    return ACCURACY_HEAVY_THETAS if "heavy_share" in variant else ACCURACY_THETAS


def fmm_setting(solver: str, *, theta, order, accuracy, heavy_share) -> ThetaSetting:
    """Theta, order and heavy share of an FMM: ``setting.theta(n)`` and
    ``setting.variant(n)["order"]``, with :func:`heavy_share_in` for the heavy share."""
    return ThetaSetting(solver, theta=theta, accuracy=accuracy, default=FMM_DEFAULT_THETA,
                        variants=order_variants(order, accuracy, heavy_share))


def heavy_share_in(variant: dict, given: float | None) -> float:
    """The heavy share of an evaluation with ``variant`` (the option ``given`` where the variant
    names none), 0 for none: what the native opening test takes."""
    return variant.get("heavy_share", given) or 0.0


def m2l_pair_equivalents(order: int) -> float:
    """One M2L's cost in pair interactions: its (k, n) pairs (|k| + |n| <= p, C(p+6, 6) FMAs)
    and its terms (the derivative recurrence and the gather of the sources' moments), weighted
    by a fit to cpu-fmm's stage times at N = 262144, p 4/5/6, theta 0.6, on a quiet machine:
    the generic M2L kernel took 22/37/62 ns per M2L against 0.117 ns per P2P pair (189, 315,
    533 pairs; 0.19 pairs + 4.3 terms fits them to 1%), and the straight-line kernels of
    fmm_kernels.hpp then took 1/1.75 of that at every order."""
    return (0.19 * math.comb(order + 6, 6) + 4.3 * math.comb(order + 3, 3)) / 1.75


def cost_per_particle(stats: dict, n: int, order: int) -> float:
    """The accuracy table's work measure of one evaluation: P2P pairs plus M2Ls in pair
    equivalents, per particle (it only compares an FMM's orders with each other)."""
    return (stats["particle_particle"] + stats["m2l_interactions"] * m2l_pair_equivalents(order)) / n


@functools.lru_cache(maxsize=None)
def expansion_tables(order: int) -> dict[str, np.ndarray | int]:
    """The index tables of ``native/fmm_expansions.hpp`` for one order, as numpy arrays."""
    return dict(_native.fmm_tables(order))
