"""``cpu-fmm``: native Cartesian fast multipole method, tree rebuilt every evaluation, threaded.

cpu-tree's Morton sort and depth-first octree (ADR-0010), a dual tree walk emitting cell-cell
(M2L) and leaf-leaf (P2P) lists with the opening test ``theta * |c_A - c_B| > r_A + r_B`` on
the nodes' key boxes, multipole and local Taylor expansions of order ``order`` about the box
centres (docs/adr/0110). Cost about N; P2P evaluates each leaf pair once for both leaves on the
SIMD level's kernel (``simd`` option; docs/fmm-tuning-log.md#0161), the expansions in double except M2L with
``expansions="f32"``: there the cell pairs run in float lanes, twice as many per vector
(docs/fmm-tuning-log.md#0165). Results do not
depend on the thread count, bit for bit, and the lists are symmetric, so the total force sums to
zero up to rounding. ``accuracy=`` instead of ``theta``
picks theta (and, unless ``order`` is given, the order) for each particle count from the
accuracy table (engine/tuning/accuracy_table.py, docs/accuracy.md).
"""

from __future__ import annotations

from dataclasses import replace

from ... import _native
from ..cpu_features import simd_level
from ._base import Solver
from ._fmm import (ACCURACY_VARIANTS, F32_EXPANSIONS_FLOOR, FMM_EXPANSIONS, FMM_HEAVY_SHARE,
                   FMM_LEAF_CAPACITY, FMM_ORDER, FMM_THETA, accuracy_thetas, cost_per_particle, expansion_precision,
                   fmm_setting, heavy_share_in)
from ..options import ACCURACY, CHECK_ACCURACY, PRECISION, SIMD, SOFTENING, THREADS, SolverSpec
from ..tuning.accuracy_check import accuracy_check

# Left out, expansion_precision chooses: float32 bodies get float lanes in M2L, 0.6-0.75x its
# f64 time at N = 262144, p 5, theta 0.7 (2 threads), moving the forces by at most 4.3e-7 of
# |a| (RMS 5e-8) at p 5-7, below float32 bodies' own rounding (docs/fmm-tuning-log.md#0165);
# float64 bodies, and an accuracy tighter than F32_EXPANSIONS_FLOOR, keep double throughout.
EXPANSIONS = replace(FMM_EXPANSIONS,
                     doc="precision of the expansions, f32 or f64; cpu-fmm: of M2L, the cell-cell stage (f32: "
                         "twice the cell pairs per vector, the multipoles rounded to float, each local "
                         "widened back to double; default: the precision's, f64 for an accuracy below "
                         f"{F32_EXPANSIONS_FLOOR:g})")


class CpuFmmSolver(Solver):
    """Fast multipole gravity on the CPU.

    Parameters
    ----------
    precision : {"f32", "f64"}
        Precision of positions and particle sums.
    softening : float
        Plummer softening length (N-body units), in P2P and in the expansions' kernel.
    threads : int or None
        Worker threads; None uses every core.
    theta : float or None
        Opening angle in [0, 0.95]; 0 is direct summation; 0.5 unless ``accuracy`` is given.
    order : int or None
        Expansion order p, 1 to ``FMM_MAX_ORDER``; 5 unless ``accuracy`` is given, which then
        chooses it among ``ACCURACY_ORDERS`` with theta.
    accuracy : float or None
        Target RMS relative force error in (0, 1]: theta (and the order, unless given) chosen
        for each particle count from the accuracy table (``chosen`` says which and why). Not
        together with ``theta``.
    check_accuracy : int or None
        With ``accuracy``: every this many evaluations, the error measured on a sample of bodies
        against float64 direct sums, and the setting tightened past the target
        (``tuning.accuracy_check``).
    leaf_capacity : int
        Most particles a leaf holds (coincident particles may exceed it).
    simd : {"scalar", "avx2", "avx512"} or None
        Instruction set of the P2P and M2L kernels; None: ``ORRERY_SIMD``, else the widest.
    expansions : {"f32", "f64"} or None
        Precision of M2L: f32 (the multipoles rounded to float, the cell pairs in float lanes,
        each local widened back to double; P2M, M2M, L2L and L2P stay in double) or f64; None:
        the precision's, but f64 for an accuracy below ``F32_EXPANSIONS_FLOOR``.
    heavy_share : float or None
        A node holding more than this share of the bodies is heavy: pairs with one open at a
        smaller angle (docs/fmm.md); None: with ``accuracy``, the table chooses it with the
        order and theta (none or ``ACCURACY_HEAVY_SHARE``), else theta alone decides.

    ``last_stats`` after an evaluation: ``seconds`` and the stages ``sort_s``, ``build_s``,
    ``walk_s`` (interaction lists), ``upward_s`` (P2M, M2M), ``m2l_s``, ``p2p_s`` (with L2P),
    ``downward_s`` (L2L); ``m2l_interactions``, ``particle_particle``, ``nodes``, ``leaves``,
    ``depth``, ``terms``, ``expansion_bits``, ``simd``, ``theta`` and ``order`` (with ``accuracy`` when given) and
    ``cost_per_particle`` (the accuracy table's work measure).
    """

    name = "cpu-fmm"
    # The accuracy table's variants (``orrery calibrate --accuracy``): one per order.
    accuracy_variants = ACCURACY_VARIANTS

    @classmethod
    def accuracy_thetas(cls, variant: dict) -> tuple[float, ...]:
        return accuracy_thetas(variant)

    def __init__(self, *, precision, softening, threads, theta, accuracy, check_accuracy, order,
                 leaf_capacity, simd, expansions, heavy_share):
        self.simd = simd_level(simd)["level"]
        self.expansions = expansion_precision(expansions, precision, accuracy)
        super().__init__(precision=precision, softening=softening, threads=threads, theta=theta,
                         accuracy=accuracy, check_accuracy=check_accuracy, order=order,
                         leaf_capacity=leaf_capacity, simd=self.simd, expansions=self.expansions,
                         heavy_share=heavy_share)
        self.threads = threads or 0
        self.setting = fmm_setting(self.name, theta=theta, order=order, accuracy=accuracy,
                                   heavy_share=heavy_share)
        self.accuracy_check = accuracy_check(self.name, self.setting, check_accuracy)
        self.leaf_capacity = leaf_capacity
        self._heavy_share_given = heavy_share
        self._engine = _native.FmmF32() if precision == "f32" else _native.FmmF64()
        self._n = 1

    @property
    def chosen(self) -> dict | None:
        """With ``accuracy``: the theta and order chosen at the last evaluation and the
        measurement behind them; None before it, or when theta was given."""
        return self.setting.chosen

    @property
    def theta(self) -> float:
        """The opening angle of the last evaluation (or of the first, before it)."""
        return self.evaluation_setting(self._n)["theta"]

    @property
    def order(self) -> int:
        """The expansion order of the last evaluation (or of the first, before it)."""
        return self.evaluation_setting(self._n)["order"]

    @property
    def heavy_share(self) -> float:
        """The heavy share of the last evaluation (or of the first, before it); 0 for none."""
        return self.evaluation_setting(self._n)["heavy_share"]

    def evaluation_setting(self, n: int) -> dict:
        """``theta``, ``order`` and ``heavy_share`` (0: no node is heavy) of an evaluation of
        ``n`` bodies now."""
        variant = self.setting.variant(n)
        return {"theta": self.setting.theta(n), "order": variant["order"],
                "heavy_share": heavy_share_in(variant, self._heavy_share_given)}

    def _compute(self, pos, mass, potential):
        self._n = pos.shape[0]
        return self._engine.evaluate(pos, mass, self.softening, threads=self.threads,
                                     leaf_capacity=self.leaf_capacity, potential=potential,
                                     simd=self.simd, expansions=self.expansions,
                                     **self.evaluation_setting(self._n))

    def last_lists(self) -> dict:
        """The last evaluation's interaction lists, depth order and centres (for tests)."""
        return dict(self._engine.lists)

    def _extra_stats(self) -> dict:
        stats = self._engine.stats
        return {**stats, "simd": self.simd, **self.setting.stats(), "order": self.order,
                "heavy_share": self.heavy_share,
                "cost_per_particle": cost_per_particle(stats, self._n, self.order)}


SPEC = SolverSpec(
    name="cpu-fmm",
    doc="fast multipole method on the CPU: O(N), error set by the opening angle theta and order p",
    options=(PRECISION, SOFTENING, THREADS, FMM_THETA, ACCURACY, CHECK_ACCURACY, FMM_ORDER,
             FMM_LEAF_CAPACITY, SIMD, EXPANSIONS, FMM_HEAVY_SHARE),
    factory=CpuFmmSolver,
)
