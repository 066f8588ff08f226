"""``gpu-tree``: Barnes-Hut on a GPU compute device (CUDA through CuPy, SYCL through dpctl),
every stage on the device and the tree rebuilt each evaluation.

Stages (``last_stats`` reports each one's device seconds): ``box`` (bounding cube reduction),
``keys`` (Morton keys), ``sort`` (device key sort and gather into key order), ``build``
(parallel topology, depth-first with skip indices), ``moments`` (bottom-up), ``walk`` and
``reorder`` (results back to the caller's order). The tree, its key definition and its opening
test are cpu-tree's (ADR-0010); ADR-0070 records how the device builds it. Three walks
(``walk``): ``coherent`` (default: a sub-group shares one node index, lanes that accepted a cell
wait until the sub-group leaves that subtree), ``independent`` (each work-item its own index)
and ``group`` (cpu-tree's group walk: one sub-group per group of up to 128 bodies, decisions
for the group's bounding box; the interaction counts of cpu-tree with the same group capacity).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..compute import DeviceArray, KernelEvent, ceil_div, unavailable_reason
from ._device_tree import STAGES, DeviceTreeBuilder
from ._gpu import GpuSolver
from ._options import DEVICE, LEAF_CAPACITY, PRECISION, QUADRUPOLE, SOFTENING, THETA, Option, SolverSpec

WALK = Option("walk", str, "coherent",
              "tree walk: 'coherent' (a sub-group at one node, lanes masked), 'independent' (one "
              "node index per work-item) or 'group' (cpu-tree's group walk)",
              choices=("coherent", "independent", "group"))
# Same default as cpu-tree, so both solvers build the same tree unless told otherwise.
TREE_LEAF_CAPACITY = replace(LEAF_CAPACITY, default=16)
# Most bodies in a group of the group walk: 4 per lane of a 32-lane sub-group (the H200 figures
# in docs/performance.md). cpu-tree finds the same groups when its group_capacity is set to this
# (its own default, 256, suits its SIMD lists).
GROUP_CAPACITY = 128
WALK_GROUP_SIZE = 128
_WALK_CODES = {"independent": 0, "coherent": 1, "group": 2}


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
    theta : float
        Opening angle (0 opens every cell: direct summation).
    quadrupole : bool
        Add traceless quadrupole terms for accepted cells.
    leaf_capacity : int
        Most bodies a leaf holds (coincident bodies may exceed it).
    walk : {"coherent", "independent", "group"}
        How the walk maps onto sub-groups.

    ``last_stats``: ``wall_s`` (wall), ``kernel_s`` (device), per stage ``box_s``,
    ``keys_s``, ``sort_s`` (sort and gather), ``build_s``, ``moments_s``, ``walk_s``,
    ``reorder_s``; ``particle_particle``, ``particle_cell``, ``interactions_per_particle``,
    ``nodes``, ``walk``, ``device``.
    """

    name = "gpu-tree"

    def __init__(self, *, precision, softening, device, theta, quadrupole, leaf_capacity, walk):
        super().__init__(precision=precision, softening=softening, device=device, theta=theta,
                         quadrupole=quadrupole, leaf_capacity=leaf_capacity, walk=walk)
        self.theta = theta
        self.quadrupole = quadrupole
        self.leaf_capacity = leaf_capacity
        self.walk = walk
        self._builder = DeviceTreeBuilder(self.context, self.dtype, theta=theta,
                                          leaf_capacity=leaf_capacity,
                                          group_capacity=GROUP_CAPACITY, quadrupole=quadrupole)
        self._result: DeviceArray | None = None
        self._tally: DeviceArray | None = None
        self._stage_events: dict[str, list[KernelEvent]] = {}
        self._tally_groups = 0
        self._tree = None

    def _walk_kernel(self, potential: bool):
        subgroup = self.context.info.subgroup_size
        defines = {"REAL_BITS": self.dtype.itemsize * 8, "ACCUM_BITS": 64 if self.context.info.fp64 else 32,
                   "WALK": _WALK_CODES[self.walk], "WALK_GROUP_SIZE": WALK_GROUP_SIZE,
                   "GROUP_TARGETS": ceil_div(GROUP_CAPACITY, subgroup),
                   "QUADRUPOLE": self.quadrupole, "WITH_POTENTIAL": potential}
        program = self.context.build(["tree_common.cl", "tree_walk.cl"], defines=defines)
        return program.kernel("tree_walk")

    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        tree = self._builder.build(body, count, groups=self.walk == "group")
        if self._result is None or self._result.shape[0] != count:
            self._result = self.context.empty((count, 4), self.dtype)
        if self.walk == "group":
            per_work_group = WALK_GROUP_SIZE // self.context.info.subgroup_size
            work_groups = max(1, ceil_div(tree.group_count, per_work_group))
        else:
            work_groups = max(1, ceil_div(count, WALK_GROUP_SIZE))
        if self._tally is None or self._tally.shape[0] < 2 * work_groups:
            self._tally = self.context.empty(2 * work_groups, np.uint64)
        self._tally_groups = work_groups
        walk = self._walk_kernel(potential).launch(
            work_groups * WALK_GROUP_SIZE, WALK_GROUP_SIZE, tree.nodes, tree.quadrupoles, tree.body,
            np.int32(count), self.dtype.type(self.softening ** 2), tree.groups,
            np.int32(tree.group_count), self._result, self._tally)
        reorder = self._builder.scatter(tree, self._result, out)
        self._tree = tree
        self._stage_events = {**tree.events, "walk": [walk], "reorder": [reorder]}
        return [event for events in self._stage_events.values() for event in events]

    def _breakdown(self) -> dict:
        stats = {f"{stage}_s": sum(event.seconds() for event in self._stage_events.get(stage, ()))
                 for stage in (*STAGES, "walk", "reorder")}
        stats["kernel_s"] = sum(stats.values())
        tally = self._tally.download()[:2 * self._tally_groups].reshape(-1, 2).sum(axis=0)
        count = self._tree.count
        stats.update(particle_particle=int(tally[0]), particle_cell=int(tally[1]),
                     interactions_per_particle=float(tally.sum()) / count,
                     nodes=self._tree.node_count, walk=self.walk,
                     device=self.context.info.spec)
        return stats

    def _device_stats(self, events, launch) -> dict:
        # The last evaluation's stage breakdown (its ~50 events and the tally download are
        # waited for only when last_stats is read: see GpuSolver.record_stats).
        return self._breakdown()

    def last_tree(self):
        """The last evaluation's :class:`DeviceTree` (for tests and diagnostics)."""
        return self._tree


SPEC = SolverSpec(
    name="gpu-tree",
    doc="Barnes-Hut tree on a GPU (CUDA or SYCL), every stage on the device: O(N log N)",
    options=(PRECISION, SOFTENING, DEVICE, THETA, QUADRUPOLE, TREE_LEAF_CAPACITY, WALK),
    factory=GpuTreeSolver,
    unavailable_reason=unavailable_reason,
    kind="gpu",
)
