"""``gpu-tree``: Barnes-Hut on a GPU compute device (CUDA through CuPy, SYCL through dpctl),
every stage on the device and the tree rebuilt each evaluation.

Stages (``last_stats`` reports each one's device seconds): ``box`` (bounding cube reduction),
``keys`` (Morton keys), ``sort`` (device key sort and gather into key order), ``build``
(parallel topology, depth-first with skip indices), ``moments`` (bottom-up), ``walk`` and
``reorder`` (results back to the caller's order). The tree, its key definition and its opening
test are cpu-tree's (ADR-0010); ADR-0070 records how the device builds it. Four walks
(``walk``): ``list`` (default, ADR-0072: one sub-group per walk group, breadth-first, testing
up to a sub-group of nodes per step and summing the accepted cells and opened leaves' bodies in
batches from local memory, several targets per lane), ``coherent`` (a sub-group shares one
node index, lanes that accepted a cell wait until the sub-group leaves that subtree; the
default with ``opening="body"``), ``independent`` (each work-item its own index) and ``group``
(cpu-tree's group walk: one sub-group per walk group, one node at a time). Every walk decides, by
default (``opening="group"``), for the bounding box of the body's walk group, cpu-tree's groups
of up to 256 bodies, so it makes cpu-tree's decisions: the same interaction counts and the same
accuracy at the same theta (ADR-0071). ``opening="body"`` lets the per-body walks decide for
the body itself: fewer interactions and a larger error at the same theta (``accuracy=`` picks a
theta for it from its own rows of the accuracy table).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ... import _native
from ..compute import (DeviceArray, KernelEvent, ceil_div, launch_size, resident_size,
                       unavailable_reason)
from ._device_tree import STAGES, DeviceTreeBuilder
from ..errors import InvalidInputError
from ..tuning.accuracy_check import accuracy_check
from ..tuning.accuracy_table import DEFAULT_THETAS, ThetaSetting
from ._gpu import GpuSolver
from ..options import (ACCURACY, CHECK_ACCURACY, DEVICE, LEAF_CAPACITY, PRECISION, QUADRUPOLE,
                       SOFTENING, THETA, Option, SolverSpec)
from .cpu_tree import TREE_THETA

WALK = Option("walk", str, None,
              "tree walk: 'list' (the default; a sub-group per walk group, many nodes tested at "
              "once, sources summed in batches from local memory), 'coherent' (a sub-group at one "
              "node, lanes masked; the default with opening='body'), 'independent' (one node "
              "index per work-item) or 'group' (cpu-tree's group walk, one node at a time)",
              choices=("coherent", "independent", "group", "list"))
OPENING = Option("opening", str, "group",
                 "what a per-body walk tests a node against: 'group' (the box of the body's walk "
                 "group: cpu-tree's test, so the same theta gives cpu-tree's accuracy) or 'body' "
                 "(the body itself: fewer interactions and a larger error at the same theta)",
                 choices=("group", "body"))
# Same default as cpu-tree, so both solvers build the same tree unless told otherwise.
TREE_LEAF_CAPACITY = replace(LEAF_CAPACITY, default=16)
# Most bodies in a walk group: cpu-tree's, so that every walk finds cpu-tree's groups and makes
# its opening decisions (ADR-0071).
GROUP_CAPACITY = _native.TREE_GROUP_CAPACITY
WALK_GROUP_SIZE = 128
# Targets per lane of the list walk. On the H200 4 ran faster than 8 (at 2^20 bodies the walk
# took 5.8 ms against 6.8: 95 registers against 111, so five work-groups resident per
# multiprocessor instead of four), though a group of more than 4 sub-groups of bodies is then
# walked twice. The group walk keeps one batch per group.
LIST_TARGETS = 4
_WALK_CODES = {"independent": 0, "coherent": 1, "group": 2, "list": 3}
# The walks with one sub-group per walk group, deciding for the group's box.
_GROUP_WALKS = ("group", "list")
# The walk when none is given: the fastest for each opening test (docs/performance.md).
_DEFAULT_WALK = {"group": "list", "body": "coherent"}
_OPENING_CODES = {"body": 0, "group": 1}


class GpuTreeSolver(GpuSolver):
    """Barnes-Hut gravity with every stage on a compute device.

    Parameters
    ----------
    precision : {"f32", "f64"}
        Arithmetic and node precision (sums behind the moments are in double where the device
        has doubles).
    softening : float
        Plummer softening length (N-body units).
    device : str or None
        Compute device (``"cuda:0"``, ``"sycl:cpu"``, ...; None: the first found).
    theta : float or None
        Opening angle (0 opens every cell: direct summation; default 0.5 unless ``accuracy``
        is given). With the default opening test it means what it means for cpu-tree.
    accuracy : float or None
        Target RMS relative force error in (0, 1]: theta is chosen for each particle count from
        the accuracy table rows of this walk's opening test (``chosen``). Not with ``theta``.
    check_accuracy : int or None
        With ``accuracy``: every this many evaluations, the error measured on a sample of bodies
        against float64 direct sums, and the setting tightened past the target
        (``tuning.accuracy_check``).
    quadrupole : bool
        Add traceless quadrupole terms for accepted cells.
    leaf_capacity : int
        Most bodies a leaf holds (coincident bodies may exceed it).
    walk : {"list", "coherent", "independent", "group"} or None
        How the walk maps onto sub-groups (None: ``list``, or ``coherent`` with
        ``opening="body"``, which the walks of one sub-group per group cannot use).
    opening : {"group", "body"}
        What the per-body walks test a node against: the box of the body's walk group
        (cpu-tree's test) or the body itself (the group walk always uses its group's box).

    ``last_stats``: ``wall_s`` (wall), ``kernel_s`` (device), per stage ``box_s``,
    ``keys_s``, ``sort_s`` (sort and gather), ``build_s``, ``moments_s``, ``walk_s``,
    ``reorder_s``; ``particle_particle``, ``particle_cell``, ``interactions_per_particle``,
    ``nodes``, ``walk``, ``opening``, ``device``, ``theta`` (with ``accuracy`` when given).
    """

    name = "gpu-tree"
    step_graphs = True  # no count comes back to the host during an evaluation (ADR 0162)
    # The options besides theta that the accuracy table measures apart (``orrery calibrate
    # --accuracy``), in the order of the table's variant keys; the walks differ in speed only.
    accuracy_variants = tuple({"opening": opening, "quadrupole": quadrupole}
                              for opening in ("group", "body") for quadrupole in (False, True))

    @classmethod
    def accuracy_thetas(cls, variant: dict) -> tuple[float, ...]:
        """Every variant at the table's angles."""
        return DEFAULT_THETAS

    def __init__(self, *, precision, softening, device, theta, accuracy, check_accuracy,
                 quadrupole, leaf_capacity, walk, opening):
        walk = walk or _DEFAULT_WALK[opening]
        if walk in _GROUP_WALKS and opening == "body":
            raise InvalidInputError(f"gpu-tree: the {walk} walk decides for its group's box; "
                                    "opening='body' needs walk='coherent' or 'independent'")
        super().__init__(precision=precision, softening=softening, device=device, theta=theta,
                         accuracy=accuracy, check_accuracy=check_accuracy, quadrupole=quadrupole,
                         leaf_capacity=leaf_capacity, walk=walk, opening=opening)
        self.setting = ThetaSetting(self.name, theta=theta, accuracy=accuracy,
                                    default=THETA.default,
                                    variants=[{"opening": opening, "quadrupole": quadrupole}],
                                    between_thetas=True)
        self.accuracy_check = accuracy_check(self.name, self.setting, check_accuracy)
        self.quadrupole = quadrupole
        self.leaf_capacity = leaf_capacity
        self.walk = walk
        self.opening = opening
        self._builder = DeviceTreeBuilder(self.context, self.dtype, leaf_capacity=leaf_capacity,
                                          group_capacity=GROUP_CAPACITY, quadrupole=quadrupole)
        self._boxes: DeviceArray | None = None
        self._body_group: DeviceArray | None = None
        self._result: DeviceArray | None = None
        self._tally: DeviceArray | None = None
        self._stage_events: dict[str, list[KernelEvent]] = {}
        self._tally_groups = 0
        self._next_group = self.context.empty(1, np.uint32, "temporaries.walk_counter")  # the group walks' counter
        self._tree = None

    def _walk_kernel(self, potential: bool):
        subgroup = self.context.info.subgroup_size
        defines = {"REAL_BITS": self.dtype.itemsize * 8, "ACCUM_BITS": 64 if self.context.info.fp64 else 32,
                   "WALK": _WALK_CODES[self.walk], "OPENING": _OPENING_CODES[self.opening],
                   "WALK_GROUP_SIZE": WALK_GROUP_SIZE,
                   "GROUP_TARGETS": (LIST_TARGETS if self.walk == "list"
                                     else ceil_div(GROUP_CAPACITY, subgroup)),
                   "QUADRUPOLE": self.quadrupole, "WITH_POTENTIAL": potential}
        program = self.context.build(["tree_common.cl", "softened_pair.cl", "tree_walk.cl"],
                                     package=__package__, defines=defines)
        return program.kernel("tree_walk"), program.kernel("group_boxes"), program.kernel("start_walk")

    @property
    def chosen(self) -> dict | None:
        """With ``accuracy``: the theta chosen at the last evaluation and the measurement
        behind it; None before it, or when theta was given."""
        return self.setting.chosen

    def _opening_boxes(self, tree, boxes_kernel) -> list[KernelEvent]:
        """Per walk group its bodies' box, per body its group (only the per-body walks with
        the group opening test read them; the others get one-element placeholders). A tree
        has at most one group per body."""
        rows = self._box_rows(tree.count)
        if self._boxes is None or self._boxes.shape[0] != 2 * rows:
            self._boxes = self.context.empty((2 * rows, 4), self.dtype, "tree.group_boxes")
            self._body_group = self.context.empty(rows, np.uint32, "tree.body_groups")
        if not self._per_body_boxes():
            return []
        size = launch_size(min(tree.count, resident_size(self.context.info)), WALK_GROUP_SIZE)
        return [boxes_kernel.launch(size, WALK_GROUP_SIZE, tree.nodes, tree.body, tree.groups,
                                    tree.group_starts, np.int32(tree.count), self._boxes,
                                    self._body_group)]

    def _per_body_boxes(self) -> bool:
        return self.walk not in _GROUP_WALKS and self.opening == "group"

    def _box_rows(self, count: int) -> int:
        return count if self._per_body_boxes() else 1

    def body_limit(self) -> tuple[int, str]:
        # tree_moments.cl writes node i's rows at 32-bit offsets (4 i of the sums and centres,
        # 6 i of the quadrupoles) for up to 2n - 1 nodes.
        per_node = 6 if self._builder.quadrupole else 4
        limit = (2**31 // per_node + 1) // 2
        state_limit, state_reason = super().body_limit()
        if state_limit <= limit:
            return state_limit, state_reason
        return limit, f"tree_moments.cl writes node rows at 32-bit offsets, {per_node} a node, for up to 2n - 1 nodes"

    def evaluation_bytes(self, n: int) -> dict[str, int]:
        rows, real = self._box_rows(n), self.dtype.itemsize
        return {**self._builder.build_bytes(n, moments=True),
                "tree.group_boxes": 2 * rows * 4 * real, "tree.body_groups": 4 * rows,
                "accelerations.key_order": 4 * n * real,
                "temporaries.tally": 2 * self._walk_work_groups(n) * 8}

    def _walk_work_groups(self, count: int) -> int:
        """Work-groups the walk launches, each with two uint64 interaction counters."""
        if self.walk in _GROUP_WALKS:
            # As many work-groups as the device holds (its sub-groups take the walk groups
            # from a counter), and no more than one sub-group per body would need.
            per_work_group = WALK_GROUP_SIZE // self.context.info.subgroup_size
            work_groups = min(ceil_div(count, per_work_group),
                              resident_size(self.context.info) // WALK_GROUP_SIZE)
        else:
            work_groups = ceil_div(count, WALK_GROUP_SIZE)
        return max(1, work_groups)

    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        tree = self._builder.build(body, count, theta=self.setting.theta(count))
        if self._result is None or self._result.shape[0] != count:
            self._result = self.context.empty((count, 4), self.dtype, "accelerations.key_order")
        work_groups = self._walk_work_groups(count)
        if self._tally is None or self._tally.shape[0] < 2 * work_groups:
            self._tally = self.context.empty(2 * work_groups, np.uint64, "temporaries.tally")
        self._tally_groups = work_groups
        walk_kernel, boxes_kernel, start_kernel = self._walk_kernel(potential)
        boxes = self._opening_boxes(tree, boxes_kernel)
        boxes.append(start_kernel.launch(WALK_GROUP_SIZE, WALK_GROUP_SIZE, self._next_group))
        walk = walk_kernel.launch(
            work_groups * WALK_GROUP_SIZE, WALK_GROUP_SIZE, tree.nodes, tree.quadrupoles, tree.body,
            np.int32(count), self.dtype.type(self.softening ** 2), tree.groups, tree.group_starts,
            self._next_group, self._boxes, self._body_group, self._result, self._tally)
        reorder = self._builder.scatter(tree, self._result, out)
        self._tree = tree
        self._stage_events = {**tree.events, "walk": boxes + [walk], "reorder": [reorder]}
        return [event for events in self._stage_events.values() for event in events]

    def _breakdown(self) -> dict:
        stats = {f"{stage}_s": sum(event.seconds() for event in self._stage_events.get(stage, ()))
                 for stage in (*STAGES, "walk", "reorder")}
        stats["kernel_s"] = sum(stats.values())
        tally = self._tally.download()[:2 * self._tally_groups].reshape(-1, 2).sum(axis=0)
        count = self._tree.count
        stats.update(particle_particle=int(tally[0]), particle_cell=int(tally[1]),
                     interactions_per_particle=float(tally.sum()) / count,
                     nodes=self._tree.node_count, walk=self.walk, opening=self.opening,
                     device=self.context.info.spec, **self.setting.stats())
        return stats

    def _device_stats(self, events, launch) -> dict:
        # The last evaluation's stage breakdown (its ~50 events and the tally download are
        # waited for only when last_stats is read: see GpuSolver.record_stats).
        return self._breakdown()

    def locality_order(self, count: int):
        # The tree's Morton order: bodies of one leaf are next to each other.
        tree = self._tree
        return tree.order if tree is not None and tree.count == count else None

    def last_tree(self):
        """The last evaluation's :class:`DeviceTree` (for tests and diagnostics)."""
        return self._tree


SPEC = SolverSpec(
    name="gpu-tree",
    doc="Barnes-Hut tree on a GPU (CUDA or SYCL), every stage on the device: O(N log N)",
    options=(PRECISION, SOFTENING, DEVICE, TREE_THETA, ACCURACY, CHECK_ACCURACY, QUADRUPOLE,
             TREE_LEAF_CAPACITY, WALK, OPENING),
    factory=GpuTreeSolver,
    unavailable_reason=unavailable_reason,
    kind="gpu",
)
