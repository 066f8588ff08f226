"""``gpu-fmm``: the fast multipole method on a GPU compute device (CUDA through CuPy, SYCL
through dpctl), the passes in ``native/kernels/fmm.cl``.

Stages (``last_stats`` reports each one's seconds): the device tree build of gpu-tree (``box``,
``keys``, ``sort``, ``build``, ``moments``: ``_device_tree.py``, the same tree as cpu-fmm's),
``lists`` (the node skips and the leaves' key boxes come to the host, where cpu-fmm's dual walk,
``_native.fmm_lists``, builds the interaction lists and centres, which go back: one algorithm,
so both solvers evaluate the same lists), ``upward`` (P2M, M2M per depth), ``m2l``,
``downward`` (L2L per depth), ``p2p`` (pairwise pull of the own and listed leaves plus L2P, one
work-item per body) and ``reorder``. Expansions in double where the device has it.
The host round trip of ``lists`` is this first version's price for sharing one walk; it is
measured in ``lists_s`` (wall seconds, not device seconds).
"""

from __future__ import annotations

import time

import numpy as np

from ... import _native
from ..compute import DeviceArray, KernelEvent, unavailable_reason
from ._device_tree import ITEM_GROUP, STAGES, DeviceTreeBuilder
from ._fmm import (ACCURACY_ORDERS, ACCURACY_THETAS, FMM_LEAF_CAPACITY, FMM_ORDER, FMM_THETA,
                   cost_per_particle, expansion_tables, fmm_setting, particle_pairs)
from ._gpu import GpuSolver
from ._options import ACCURACY, DEVICE, PRECISION, SOFTENING, SolverSpec

FMM_STAGES = ("upward", "m2l", "downward", "p2p", "reorder")


def _launch(count: int) -> int:
    return max(1, -(-count // ITEM_GROUP)) * ITEM_GROUP


def table_layout(order: int) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """The index tables of ``order`` packed as fmm.cl reads them: an int32 array, an array of
    scales, and the defines giving each table's offset."""
    tb = expansion_tables(order)
    ints = [("T_DEGREE", [tb["degree"]]), ("T_MONO_PARENT", [tb["mono_parent"]]),
            ("T_MONO_AXIS", [tb["mono_axis"]]),
            ("T_MINUS_ONE", [tb[f"minus_one_{i}"] for i in range(3)]),
            ("T_MINUS_TWO", [tb[f"minus_two_{i}"] for i in range(3)]),
            ("T_PAIR_START", [tb["pair_start"]]), ("T_PAIR_N", [tb["pair_n"]]),
            ("T_PAIR_SUM", [tb["pair_sum"]]),
            ("T_PLUS_ONE", [tb[f"plus_one_{i}"] for i in range(3)])]
    defines = {"ORDER": order, "TERMS": tb["terms"], "GRADIENT_TERMS": tb["gradient_terms"]}
    parts, at = [], 0
    for name, arrays in ints:
        defines[name] = at
        for array in arrays:
            parts.append(np.asarray(array, np.int32))
            at += len(array)
    defines["S_MONO_SCALE"] = 0
    defines["S_FACTORIAL"] = tb["terms"]
    scales = np.concatenate([tb["mono_scale"], tb["factorial"]])
    return np.concatenate(parts), scales, defines


class GpuFmmSolver(GpuSolver):
    """Fast multipole gravity on a compute device.

    Parameters
    ----------
    precision : {"f32", "f64"}
        Precision of bodies and pair sums (expansions in double where the device has it).
    softening : float
        Plummer softening length (N-body units), in P2P and in the expansions' kernel.
    device : str or None
        Compute device (``"cuda:0"``, ``"sycl:cpu"``, ...; None: the first found).
    theta : float or None
        Opening angle in [0, 0.95]; 0 is direct summation; 0.5 unless ``accuracy`` is given.
    order : int or None
        Expansion order p; 5 unless ``accuracy`` is given, which then chooses it with theta.
    accuracy : float or None
        Target RMS relative force error: theta (and the order, unless given) from the accuracy
        table for each body count, as for cpu-fmm (``chosen``). Not together with ``theta``.
    leaf_capacity : int
        Most bodies a leaf holds (coincident bodies may exceed it).

    ``last_stats``: ``wall_s`` (wall), ``kernel_s`` (device), per stage ``box_s`` ..
    ``moments_s`` (tree build), ``lists_s`` (host walk and transfers, wall), ``upward_s``,
    ``m2l_s``, ``downward_s``, ``p2p_s``, ``reorder_s``; ``m2l_interactions``,
    ``particle_particle``, ``cost_per_particle`` (the accuracy table's work measure), ``nodes``,
    ``leaves``, ``terms``, ``device``, ``theta``, ``order`` (with ``accuracy`` when given).
    """

    name = "gpu-fmm"
    accuracy_variants = tuple({"order": order} for order in ACCURACY_ORDERS)
    accuracy_thetas = ACCURACY_THETAS

    def __init__(self, *, precision, softening, device, theta, accuracy, order, leaf_capacity):
        super().__init__(precision=precision, softening=softening, device=device, theta=theta,
                         accuracy=accuracy, order=order, leaf_capacity=leaf_capacity)
        self.setting = fmm_setting(self.name, theta=theta, order=order, accuracy=accuracy)
        self.theta = self.setting.theta(1)
        self.order = self.setting.variant(1)["order"]
        self.leaf_capacity = leaf_capacity
        # The moments stage computes gpu-tree's opening distances, which the FMM ignores.
        self._builder = DeviceTreeBuilder(self.context, self.dtype, theta=1.0,
                                          leaf_capacity=leaf_capacity, group_capacity=1,
                                          quadrupole=False)
        self.accum = self._builder.accum
        self._programs = {}
        self._use_order(self.order)
        self._result: DeviceArray | None = None
        self._stage_events: dict[str, list[KernelEvent]] = {}
        self._info: dict = {}

    @property
    def chosen(self) -> dict | None:
        """With ``accuracy``: the theta and order chosen at the last evaluation (cpu-fmm's)."""
        return self.setting.chosen

    def _use_order(self, order: int) -> None:
        """The index tables of ``order`` on the device (kernels are built per order)."""
        self.order = order
        table, scales, self._table_defines = table_layout(order)
        self._table = self.context.upload(table)
        self._scales = self.context.upload(scales.astype(self.accum))

    def _kernels(self, potential: bool):
        key = (self.order, potential)
        if key not in self._programs:
            defines = {"REAL_BITS": self.dtype.itemsize * 8, "ACCUM_BITS": self.accum.itemsize * 8,
                       "WITH_POTENTIAL": potential, **self._table_defines}
            program = self.context.build(["tree_common.cl", "fmm.cl"], defines=defines)
            self._programs[key] = {name: program.kernel(name) for name in
                                   ("leaf_boxes", "p2m", "m2m", "signed_multipoles", "m2l",
                                    "l2l", "body_leaves", "evaluate")}
        return self._programs[key]

    def _lists(self, tree, k, skip, leaves):
        """The dual walk on the host (cpu-fmm's), from the device tree's skips and leaf boxes."""
        nodes_n = tree.node_count
        leaf_list = self.context.upload(leaves)
        box = self.context.empty((nodes_n, 6), np.uint32)
        k["leaf_boxes"].launch(_launch(len(leaves)), ITEM_GROUP, leaf_list, np.int32(len(leaves)), tree.nodes,
                               tree.keys, box)
        cube = tree.cube.download()
        lists = _native.fmm_lists(skip, box.download(), tuple(float(c) for c in cube[:3]), float(cube[3]),
                                  self.theta)
        upload = self.context.upload
        device = {name: upload(np.ascontiguousarray(lists[name], np.uint32)) for name in
                  ("m2l_start", "p2p_start", "leaves", "parent", "by_depth")}
        # Empty lists still need a buffer to bind.
        for name in ("m2l_source", "p2p_source"):
            device[name] = upload(np.ascontiguousarray(np.append(lists[name], 0), np.uint32))
        device["centre"] = upload(np.ascontiguousarray(lists["centre"].reshape(-1), self.accum))
        return lists, device

    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        self.theta = self.setting.theta(count)
        if self.setting.variant(count)["order"] != self.order:
            self._use_order(self.setting.variant(count)["order"])
        k = self._kernels(potential)
        tree = self._builder.build(body, count, groups=False)
        start = time.perf_counter()
        records = tree.node_records(self.dtype)
        skip = np.ascontiguousarray(records["skip"])
        leaves = np.flatnonzero(skip == np.arange(1, tree.node_count + 1)).astype(np.uint32)
        lists, d = self._lists(tree, k, skip, leaves)
        lists_s = time.perf_counter() - start
        nodes_n = tree.node_count
        terms = self._table_defines["TERMS"]
        multipole = self.context.empty(nodes_n * terms, self.accum)
        local = self.context.empty(nodes_n * terms, self.accum)
        table, scales = self._table, self._scales
        leaves = len(lists["leaves"])
        depth_start = lists["depth_start"]
        events = {stage: [] for stage in FMM_STAGES}
        events["upward"].append(k["p2m"].launch(_launch(leaves), ITEM_GROUP, d["leaves"], np.int32(leaves),
                                                tree.nodes, tree.body, d["centre"], table, scales,
                                                multipole))
        for depth in range(len(depth_start) - 2, -1, -1):
            first, width = int(depth_start[depth]), int(depth_start[depth + 1] - depth_start[depth])
            events["upward"].append(k["m2m"].launch(_launch(width), ITEM_GROUP, d["by_depth"], np.int32(first),
                                                    np.int32(width), tree.nodes, d["centre"], table,
                                                    scales, multipole))
        events["upward"].append(k["signed_multipoles"].launch(_launch(nodes_n), ITEM_GROUP, np.int32(nodes_n),
                                                              table, multipole))
        events["m2l"].append(k["m2l"].launch(_launch(nodes_n), ITEM_GROUP, np.int32(nodes_n), d["m2l_start"],
                                             d["m2l_source"], d["centre"],
                                             self.accum.type(self.softening ** 2), table, scales,
                                             multipole, local))
        for depth in range(1, len(depth_start) - 1):
            first, width = int(depth_start[depth]), int(depth_start[depth + 1] - depth_start[depth])
            events["downward"].append(k["l2l"].launch(_launch(width), ITEM_GROUP, d["by_depth"], np.int32(first),
                                                      np.int32(width), d["parent"], d["centre"], table,
                                                      scales, local))
        if self._result is None or self._result.shape[0] != count:
            self._result = self.context.empty((count, 4), self.dtype)
            self._body_leaf = self.context.empty(count, np.uint32)
        events["p2p"].append(k["body_leaves"].launch(_launch(leaves), ITEM_GROUP, d["leaves"], np.int32(leaves),
                                                     tree.nodes, self._body_leaf))
        events["p2p"].append(k["evaluate"].launch(_launch(count), ITEM_GROUP, tree.body, np.int32(count),
                                                  self._body_leaf, tree.nodes, d["p2p_start"],
                                                  d["p2p_source"], d["centre"], local, table, scales,
                                                  self.dtype.type(self.softening ** 2), self._result))
        events["reorder"].append(self._builder.scatter(tree, self._result, out))
        self._keep = (multipole, local, d)  # alive until the kernels have run
        self._stage_events = {**tree.events, **events}
        self._lists_host = lists
        self._counts = np.asarray(records["count"])
        self._pairs = None  # counted from the lists when last_stats is first read
        self._n = count
        self._info = {"lists_s": lists_s, "m2l_interactions": int(len(lists["m2l_source"])),
                      "nodes": nodes_n, "leaves": leaves, "terms": terms,
                      "order": self.order, **self.setting.stats()}
        return [event for stage in self._stage_events.values() for event in stage]

    def last_lists(self) -> dict:
        """The last evaluation's interaction lists and centres (host arrays, for tests)."""
        return self._lists_host

    def _breakdown(self) -> dict:
        stats = {f"{stage}_s": sum(event.seconds() for event in self._stage_events.get(stage, ()))
                 for stage in (*STAGES, *FMM_STAGES)}
        stats["kernel_s"] = sum(stats.values())
        if self._pairs is None:
            self._pairs = particle_pairs(self._counts, self._lists_host)
        counts = {"particle_particle": self._pairs, "m2l_interactions": self._info["m2l_interactions"]}
        return {**stats, **self._info, **counts, "device": self.context.info.spec,
                "cost_per_particle": cost_per_particle(counts, self._n, self.order)}

    def describe(self) -> str:
        clause = self.setting.describe()
        return super().describe() + (f"; {clause}" if clause else "")

    def _device_stats(self, events, launch) -> dict:
        # Waited for only when last_stats is read, like gpu-tree's (GpuSolver.record_stats).
        return self._breakdown()


SPEC = SolverSpec(
    name="gpu-fmm",
    kind="gpu",
    doc="fast multipole method on a GPU (CUDA or SYCL): O(N), error set by theta and order p",
    options=(PRECISION, SOFTENING, DEVICE, FMM_THETA, ACCURACY, FMM_ORDER, FMM_LEAF_CAPACITY),
    factory=GpuFmmSolver,
    unavailable_reason=unavailable_reason,
)
