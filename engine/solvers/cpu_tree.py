"""``cpu-tree``: native Barnes-Hut tree, rebuilt every evaluation, multithreaded.

Morton sort, depth-first linear octree with skip indices, monopole (optionally quadrupole)
moments and a group walk with the opening test ``d > side/theta + |com - cell centre|``
(docs/adr/0010-tree-node-layout.md). Cost about N log N; ``theta = 0`` opens every cell and is
direct summation. The interaction kernels run on the SIMD level chosen as for ``cpu-direct``
(``simd`` option, else ``ORRERY_SIMD``, else the widest available). Results do not depend on the
thread count, bit for bit. ``accuracy=`` instead of ``theta`` picks theta for each particle
count from the accuracy table (engine/tuning/accuracy_table.py, docs/accuracy.md).
"""

from __future__ import annotations

from dataclasses import replace

from ... import _native
from ..cpu_features import simd_level
from ..tuning.accuracy_check import accuracy_check
from ..tuning.accuracy_table import DEFAULT_THETAS, ThetaSetting
from ._base import Solver
from ..options import (ACCURACY, CHECK_ACCURACY, LEAF_CAPACITY, PRECISION, QUADRUPOLE, SIMD,
                       SOFTENING, THETA, THREADS, SolverSpec)

# The leaf-capacity sweep in docs/performance.md ("CPU Barnes-Hut tree") chose this default.
TREE_LEAF_CAPACITY = replace(LEAF_CAPACITY, default=16)
# No default of its own, so that theta and accuracy given together can be refused; without
# either the tree runs at THETA's default.
TREE_THETA = replace(THETA, default=None,
                     doc=f"{THETA.doc} (default {THETA.default} unless accuracy is given)")
# No default of its own either: with accuracy the table chooses it (ADR 0320), without it is off.
TREE_QUADRUPOLE = replace(QUADRUPOLE, default=None,
                          doc=f"{QUADRUPOLE.doc} (default: chosen by the accuracy table with "
                              f"accuracy, else {QUADRUPOLE.default})")
# What an interaction of the quadrupole walk costs in monopole interactions, so that the
# accuracy table's work measure (``cost_per_particle``) compares the two variants: the walk
# times at equal theta (the same interactions) over those without quadrupoles, N = 65,536,
# theta 0.35 and 0.5, Plummer, Hernquist and the galaxy collision, were 1.46, 1.66, 1.68,
# 1.23, 1.48 and 1.57 (median of five interleaved runs each, two shared cores; ADR 0320).
QUADRUPOLE_INTERACTION_COST = 1.5


def quadrupole_variants(quadrupole: bool | None, accuracy: float | None) -> list[dict]:
    """The accuracy-table variants a tree chooses among: the quadrupole setting given, else both
    when an accuracy is asked for, else the option's default."""
    if quadrupole is not None:
        return [{"quadrupole": quadrupole}]
    if accuracy is not None:
        return [{"quadrupole": False}, {"quadrupole": True}]
    return [{"quadrupole": QUADRUPOLE.default}]


def cost_per_particle(stats: dict, quadrupole: bool) -> float:
    """The accuracy table's work measure of one evaluation: interactions per particle, those
    of the quadrupole walk weighted by ``QUADRUPOLE_INTERACTION_COST``."""
    return stats["interactions_per_particle"] * (QUADRUPOLE_INTERACTION_COST if quadrupole else 1.0)


class CpuTreeSolver(Solver):
    """Barnes-Hut gravity on the CPU.

    Parameters
    ----------
    precision : {"f32", "f64"}
        Arithmetic and storage precision of positions, nodes and sums.
    softening : float
        Plummer softening length (N-body units).
    threads : int or None
        Worker threads; None uses every core.
    theta : float or None
        Opening angle; 0.5 (the default unless ``accuracy`` is given) gives RMS relative errors
        near 1e-3 on a Plummer sphere.
    accuracy : float or None
        Target RMS relative force error in (0, 1]: theta is then chosen for each particle count
        from the accuracy table (``chosen`` says which and why). Not together with ``theta``.
    check_accuracy : int or None
        With ``accuracy``: every this many evaluations, the error measured on a sample of bodies
        against float64 direct sums, and the setting tightened past the target
        (``tuning.accuracy_check``).
    quadrupole : bool or None
        Add traceless quadrupole terms for accepted cells (about 4x more accurate at the same
        theta, each interaction about 1.5x the cost). None: with ``accuracy`` the table chooses
        it with theta (the cheaper way to the target, ``chosen["variant"]``), else off.
    leaf_capacity : int
        Most particles a leaf holds (coincident particles may exceed it).
    simd : {"scalar", "avx2", "avx512", "neon", "sve"} or None
        Instruction set of the interaction kernels; None: ``ORRERY_SIMD``, else the widest this
        CPU runs. Resolved once, when the solver is made.

    ``last_stats`` after an evaluation: ``seconds`` and the native breakdown ``sort_s`` (keys,
    radix sort and gather), ``build_s``, ``moments_s``, ``walk_s``, the interaction counters
    ``particle_particle`` and ``particle_cell``, ``interactions_per_particle``, ``nodes``,
    ``leaves``, ``depth``, the ``simd`` level, ``theta`` and ``quadrupole`` (with ``accuracy``
    when given) and ``cost_per_particle`` (the accuracy table's work measure).
    """

    name = "cpu-tree"
    # The options besides theta that the accuracy table measures apart (``orrery calibrate
    # --accuracy``), in the order of the table's variant keys.
    accuracy_variants = ({"quadrupole": False}, {"quadrupole": True})

    @classmethod
    def accuracy_thetas(cls, variant: dict) -> tuple[float, ...]:
        """Every variant at the table's angles."""
        return DEFAULT_THETAS

    def __init__(self, *, precision, softening, threads, theta, accuracy, check_accuracy,
                 quadrupole, leaf_capacity, simd):
        # Resolved once here, so ORRERY_SIMD changing later cannot change a running solver.
        self.simd = simd_level(simd)["level"]
        super().__init__(precision=precision, softening=softening, threads=threads, theta=theta,
                         accuracy=accuracy, check_accuracy=check_accuracy, quadrupole=quadrupole,
                         leaf_capacity=leaf_capacity, simd=self.simd)
        self.threads = threads or 0
        self.setting = ThetaSetting(self.name, theta=theta, accuracy=accuracy,
                                    default=THETA.default,
                                    variants=quadrupole_variants(quadrupole, accuracy),
                                    between_thetas=True)
        self.accuracy_check = accuracy_check(self.name, self.setting, check_accuracy)
        self.leaf_capacity = leaf_capacity
        # Most particles sharing one walk (docs/adr/0011); a tuning knob for benchmarks, not an
        # option, because it changes speed and interaction counts but barely the answer.
        self.group_capacity = _native.TREE_GROUP_CAPACITY
        # Holds the tree's buffers between evaluations (no other state: the tree is rebuilt).
        self._engine = _native.TreeF32() if precision == "f32" else _native.TreeF64()
        self._n = 1

    @property
    def chosen(self) -> dict | None:
        """With ``accuracy``: the theta chosen at the last evaluation and the measurement
        behind it; None before it, or when theta was given."""
        return self.setting.chosen

    @property
    def quadrupole(self) -> bool:
        """Whether the last evaluation (or the first, before it) adds quadrupole terms."""
        return self.setting.variant(self._n)["quadrupole"]

    def _compute(self, pos, mass, potential):
        self._n = pos.shape[0]
        theta = self.setting.theta(self._n)
        return self._engine.evaluate(pos, mass, self.softening, theta, self.quadrupole,
                                     self.leaf_capacity, group_capacity=self.group_capacity,
                                     threads=self.threads, potential=potential, simd=self.simd)

    def _extra_stats(self) -> dict:
        stats = self._engine.stats
        return {**stats, "simd": self.simd, **self.setting.stats(), "quadrupole": self.quadrupole,
                "cost_per_particle": cost_per_particle(stats, self.quadrupole)}


SPEC = SolverSpec(
    name="cpu-tree",
    doc="Barnes-Hut tree on the CPU: O(N log N), error set by the opening angle theta",
    options=(PRECISION, SOFTENING, THREADS, TREE_THETA, ACCURACY, CHECK_ACCURACY,
             TREE_QUADRUPOLE, TREE_LEAF_CAPACITY, SIMD),
    factory=CpuTreeSolver,
)
