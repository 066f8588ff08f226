"""``gpu-fmm``: the fast multipole method on a GPU compute device (CUDA through CuPy, SYCL
through dpctl), the passes in ``kernels/fmm.cl``.

Stages (``last_stats`` reports each one's device seconds), all on the device with the state
there: the tree build of gpu-tree (``box``, ``keys``, ``sort``, ``build``: ``_device_tree.py``,
the same tree as cpu-fmm's; its ``moments`` are not needed), ``upward`` (key boxes, centres and
signed multipoles: the leaves in one launch, then one launch per cell level), ``walk`` (the dual
tree walk breadth first, one launch a step, ``_device_fmm_walk.py``: queued whole once the first
walk has planned its steps), ``lists`` (the pairs
gathered into per-target lists without a global sort, ``fmm_lists.cl``: exactly cpu-fmm's
``_native.fmm_lists``), ``m2l`` (the nodes ordered longest list first, then two work-items a
node), ``downward`` (parents, L2L per cell level), ``p2p`` (pairwise pull of the own and listed
leaves, a work-group per leaf, each body's sum written in the caller's order) and ``l2p`` (which
adds the far field there: no key-ordered copy of the accelerations, docs/adr/0339). Expansions in the bodies' precision (doubles where the device has them and the bodies
are double, or the accuracy asked for is below ``F32_EXPANSIONS_FLOOR``: docs/accuracy.md,
docs/fmm-tuning-log.md#0157).

Plans (docs/fmm-tuning-log.md#0191): the passes launch over the node slots of the solver's arrays and for the
cell levels it planned, and read the tree's node count on the device; the walk queues its
planned steps and the lists take their pair counts on the device. So an evaluation queues whole
and reads back once, at its end: the evaluation's state (36 bytes). A tree that outgrew a plan
(more nodes than slots, a level not planned, a walk past its plan) left that in the state, and
the passes run again with the plan renewed from it. The first evaluation reads the tree's counts
and walks step by step, which makes the plans.

VJP (docs/adr/0326): ``launch_vjp`` queues the VJP of the last evaluation on the device, its tree,
lists, centres and expansions held fixed (``_device_fmm_vjp.py``, ``kernels/fmm_vjp.cl``), so a
reversible run's gradient keeps its state and adjoint there (``contracts.DeviceForceVjp``).

Replay (docs/fmm-tuning-log.md#0192): on CUDA the second evaluation in a row that fits its plans with the same
arrays and settings is captured, build and passes, into a graph, and later ones replay it (one
launch and the read of the state: the host's ~90 launches are gone). A replayed evaluation that
outgrew the plans is run again launched, and the graph dropped. ``replay = False`` launches
every evaluation kernel by kernel (stage times: a graph's are not timed one by one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ... import _native
from ..compute import DeviceArray, Graph, KernelEvent, launch_size, unavailable_reason
from ._device_fmm_vjp import DeviceFmmVjp, FmmEvaluation
from ._device_fmm_walk import (STATE_DEFINES, STATE_LEVELS, STATE_M2L, STATE_NODES, STATE_P2P, STATE_TREE_NODES,
                               DeviceDualWalk, InteractionLists)
from ._device_tree import ITEM_GROUP, MORTON_LEVELS, DeviceTree, DeviceTreeBuilder, array_bytes, levels_of
from ._fmm import (ACCURACY_VARIANTS, F32_EXPANSIONS_FLOOR, FMM_EXPANSIONS, FMM_HEAVY_SHARE,
                   FMM_LEAF_CAPACITY, FMM_ORDER, FMM_THETA, accuracy_thetas, cost_per_particle, expansion_precision,
                   expansion_tables, fmm_setting, heavy_share_in)
from ._fmm_code import expansion_code
from ._gpu import GpuSolver
from ..errors import InvalidInputError
from ..options import ACCURACY, CHECK_ACCURACY, DEVICE, PRECISION, SOFTENING, SolverSpec
from ..tuning.accuracy_check import accuracy_check

EXPANSIONS = replace(FMM_EXPANSIONS,
                     doc="precision of the multipole and local expansions: f64 or f32 (half the "
                         "bytes, twice a GPU's FMA rate; default: the precision's, f64 for an "
                         f"accuracy below {F32_EXPANSIONS_FLOOR:g})")
# Work-items of M2L's work-group, and how many of them share a target's list (each taking
# every M2L_LANES-th source): several a target keep the device busy where a tree has too few
# nodes for one work-item each to fill it.
M2L_GROUP = ITEM_GROUP
M2L_LANES = 2
# The bits of a list length in M2L's schedule keys (longer lists sort as the longest).
SCHEDULE_LENGTH_BITS = 16
# The P2P kernel's host defines (fmm.cl's p2p, docs/fmm-tuning-log.md#0173, #0176; its VJP,
# built from the same kernel, takes them too), read when a solver is made so that a benchmark
# may set them per solver: work-items of a leaf's work-group (a few of them share each target's
# sources: leaves hold ~30 bodies on a Plummer sphere at the default leaf capacity of 96),
# targets a work-item (each local read of a source feeds that many pairs), source bodies staged
# per barrier pair (four per work-item: 8 KiB of local memory in float32 at 128), a tile pass's
# cost in lane-sums per group of sources, above which a leaf's last targets go in two batches
# that divide the group better (None: never), and the most lanes a target (None: as many as the
# group has; 1: one lane a target, the scheme before docs/fmm-tuning-log.md#0173).
# On the H200 (p 6, theta 0.75, 10M bodies) two targets a work-item took P2P 8.3 ms at leaf
# capacity 64 against 8.9 at one, and groups of 128 12.2 ms at capacity 96 against 12.7 at 64
# (8.3 either way at 64).
P2P_GROUP = 128
P2P_TARGETS = 2
P2P_TILE_PER_ITEM = 4
P2P_SPLIT_COST = 2
P2P_MOST_PARTS = None
# l2p_bodies' work-group: one warp a leaf (its loop takes any size).
L2P_GROUP = 32
# Nodes a body that a solver's first tree build makes room for before it knows the tree's
# shape, per body a leaf holds at most: 16 / leaf_capacity, a node for every 6 bodies at the
# default capacity of 96, where a Plummer sphere's tree has one for every 23. A tree with more
# nodes is built again once its count is read (the first evaluation reads it anyway); later
# builds take the node plan's slots.
FIRST_NODES_PER_BODY_AND_CAPACITY = 16
# upward_leaves' work-items a node, at most a sub-group: ~8 bodies each of a leaf's ~30
# (4 took the H200 0.46 ms at 10M bodies, 8 0.50).
P2M_LANES = 4
FMM_STAGES = ("upward", "walk", "lists", "m2l", "downward", "p2p", "l2p")


@dataclass
class _Replay:
    """A captured evaluation: its key, graph, tree and lists, and the arrays it reads and
    writes (held, so that no other array takes their place while the graph replays)."""

    key: tuple
    graph: Graph
    tree: DeviceTree
    lists: InteractionLists
    arrays: tuple


def multipole_stride(terms: int) -> int:
    """Expansions a node's multipole takes (fmm.cl's MULTIPOLE_STRIDE): TERMS rounded up to 4,
    so that every node's row starts on 16 bytes for M2L's loads."""
    return -(-terms // 4) * 4


class GpuFmmSolver(GpuSolver):
    """Fast multipole gravity on a compute device.

    Parameters
    ----------
    precision : {"f32", "f64"}
        Precision of bodies and pair sums (and, unless ``expansions`` says otherwise, of the
        expansions).
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
    check_accuracy : int or None
        With ``accuracy``: every this many evaluations, the error measured on a sample of bodies
        against float64 direct sums, and the setting tightened past the target
        (``tuning.accuracy_check``).
    leaf_capacity : int
        Most bodies a leaf holds (coincident bodies may exceed it).
    expansions : {"f64", "f32"} or None
        Precision of the multipole and local expansions (f64 where the device has doubles; f32:
        half the bytes and, on a GPU, twice the FMA rate); None: the precision's, but f64 for an
        accuracy below ``F32_EXPANSIONS_FLOOR`` (``expansion_precision``).
    heavy_share : float or None
        As for cpu-fmm: pairs with a node holding more than this share of the bodies open at a
        smaller angle (the same lists as cpu-fmm's with the same share); None: as for cpu-fmm.

    ``last_stats``: ``wall_s`` (wall), ``kernel_s`` (device), per stage ``box_s`` ..
    ``build_s`` (tree build), ``upward_s``, ``walk_s``, ``lists_s``, ``m2l_s``, ``downward_s``,
    ``p2p_s``, ``l2p_s`` (device seconds); ``m2l_interactions`` and ``p2p_pairs`` (list
    entries, both directions), ``walk_steps``, ``host_reads`` (the evaluation's round trips: 1
    once it has its plans), ``passes`` (2 or 3 where a tree outgrew a plan), ``graph``
    (replayed: ``kernel_s`` is the graph's, no stage times), ``nodes``,
    ``terms``, ``expansion_bits``, ``device``, ``theta`` and ``order`` (with ``accuracy`` when
    given).
    """

    name = "gpu-fmm"
    # The accuracy table's variants and angles, as cpu-fmm's (the same lists, the same errors).
    accuracy_variants = ACCURACY_VARIANTS
    # vjp_l2p reads a body's cotangent row and then writes its far field there; the pair pass
    # reads the key-ordered copy
    vjp_in_place = True

    @classmethod
    def accuracy_thetas(cls, variant: dict) -> tuple[float, ...]:
        return accuracy_thetas(variant)

    def __init__(self, *, precision, softening, device, theta, accuracy, check_accuracy, order,
                 leaf_capacity, expansions, heavy_share):
        super().__init__(precision=precision, softening=softening, device=device, theta=theta,
                         accuracy=accuracy, check_accuracy=check_accuracy, order=order,
                         leaf_capacity=leaf_capacity, expansions=expansions,
                         heavy_share=heavy_share)
        self.setting = fmm_setting(self.name, theta=theta, order=order, accuracy=accuracy,
                                   heavy_share=heavy_share)
        self.accuracy_check = accuracy_check(self.name, self.setting, check_accuracy)
        self.order = self.setting.variant(1)["order"]
        self.leaf_capacity = leaf_capacity
        self._heavy_share_given = heavy_share
        # The moments stage computes gpu-tree's opening distances, which the FMM ignores.
        self._sort = self.context.key_sort()
        self._builder = DeviceTreeBuilder(self.context, self.dtype, leaf_capacity=leaf_capacity,
                                          group_capacity=None, quadrupole=False)
        self.accum = self._builder.accum
        fp64 = expansion_precision(expansions, precision, accuracy) == "f64" and self.context.info.fp64
        self.expansion = np.dtype(np.float64 if fp64 else np.float32)
        self._programs = {}
        self._m2l_lanes = M2L_LANES  # read per solver, as the P2P defines below
        self._p2m_lanes = min(P2M_LANES, self.context.info.subgroup_size)
        self._p2p = {"P2P_GROUP": P2P_GROUP, "P2P_TARGETS": P2P_TARGETS, "P2P_TILE": P2P_TILE_PER_ITEM * P2P_GROUP,
                     "P2P_SPLIT_COST": False if P2P_SPLIT_COST is None else P2P_SPLIT_COST,
                     "P2P_MOST_PARTS": False if P2P_MOST_PARTS is None else P2P_MOST_PARTS}
        self._walk: DeviceDualWalk | None = None
        self._levels = 0  # the node plan's cell levels, a bit each (they only grow)
        self._use_order(self.order)
        self._stage_events: dict[str, list[KernelEvent]] = {}
        self._info: dict = {}
        self._last = None  # the last evaluation's tree, interaction lists and their pair counts
        self._locals_spent = False  # a VJP has written over the last evaluation's local expansions
        # Planned evaluations replayed from a CUDA graph (docs/fmm-tuning-log.md#0192): the second in a row
        # with the same key (``_replay_key``) is captured, later ones replay it.
        self.replay = True
        self.replay_unavailable: str | None = None
        self._graph: _Replay | None = None
        self._graph_event: KernelEvent | None = None
        self._fitted = None  # the key of the last launched evaluation that fitted its plans
        self._vjp: DeviceFmmVjp | None = None  # the VJP's passes and arrays, made on first use
        self._m2l_pass = None  # the last passes' M2L kernel, sorted schedule and node index bits
        self._l2l_kernel = None  # the last passes' L2L kernel

    @property
    def chosen(self) -> dict | None:
        """With ``accuracy``: the theta and order chosen at the last evaluation (cpu-fmm's)."""
        return self.setting.chosen

    def _use_order(self, order: int) -> None:
        """Expansions of ``order`` from now on (its programs are built on first use)."""
        self.order = order
        self._terms = int(expansion_tables(order)["terms"])
        self._node_capacity = 0  # the expansion arrays hold `terms` values a node: no node plan

    def _defines(self, potential: bool) -> dict:
        """fmm.cl's host defines at the order now."""
        return {"REAL_BITS": self.dtype.itemsize * 8, "ACCUM_BITS": self.accum.itemsize * 8,
                "EXPANSION_BITS": self.expansion.itemsize * 8, "WITH_POTENTIAL": potential,
                "P2P_MASK_SELF": potential or self.softening == 0,
                "WALK_GROUP": ITEM_GROUP, "MULTIPOLE_STRIDE": multipole_stride(self._terms),
                "P2M_LANES": self._p2m_lanes,
                "M2L_GROUP": M2L_GROUP, "M2L_LANES": self._m2l_lanes,
                "SCHEDULE_LENGTH_BITS": SCHEDULE_LENGTH_BITS,
                "TERMS": self._terms, "M2L_STREAMED": expansion_code(self.order).m2l_streamed,
                **STATE_DEFINES, **self._p2p}

    def _kernels(self, potential: bool):
        key = (self.order, potential)
        if key not in self._programs:
            defines = self._defines(potential)
            code = expansion_code(self.order)
            program = self.context.build(["tree_common.cl", "softened_pair.cl", "fmm.cl"],
                                         package=__package__, text=code.text, defines=defines)
            if self._walk is None:
                self._walk = DeviceDualWalk(self.context, program)
            self._programs[key] = {name: program.kernel(name) for name in
                                   ("plan_nodes", "upward_leaves", "upward", "node_parents", "m2l_schedule",
                                    "m2l", "l2l", "p2p", "l2p_bodies")}
        return self._programs[key]

    def _plan_nodes(self, node_count: int, level_mask: int) -> None:
        """A node plan for trees of up to ``node_count`` nodes (a quarter to spare) in the levels
        of ``level_mask`` and those planned before."""
        self._levels |= level_mask
        if self._node_capacity >= node_count:
            return
        capacity = node_count + node_count // 4
        empty, terms = self.context.empty, self._terms
        self._box = empty(6 * capacity, np.uint32, "tree.key_boxes")
        self._shape = empty(4 * capacity, self.accum, "tree.shapes")
        self._centre = empty(3 * capacity, self.accum, "tree.centres")
        self._parent = empty(capacity, np.uint32, "tree.parents")
        self._schedule = empty(capacity, np.uint64, "lists.m2l_schedule")
        self._spare_schedule = empty(capacity, np.uint64, "lists.m2l_schedule")
        self._multipole = empty(capacity * multipole_stride(terms), self.expansion, "expansions.multipoles")
        self._local = empty(capacity * terms, self.expansion, "expansions.locals")
        self._node_capacity = capacity

    def evaluation_bytes(self, n: int) -> dict[str, int]:
        # The nodes (the builder's sized by the node plan), the node plan and the lists follow
        # the tree's shape: they are not in this model.
        return array_bytes(self._builder.body_arrays(n))

    def _node_slots(self, count: int) -> int:
        """The node records a build of ``count`` bodies makes room for: the node plan's slots
        (before the first plan, a guess), at most the 2 count - 1 nodes such a tree can have."""
        slots = self._node_capacity or FIRST_NODES_PER_BODY_AND_CAPACITY * count // self.leaf_capacity + ITEM_GROUP
        return min(slots, 2 * count - 1)

    def _heavy_share(self, count: int) -> float:
        """The heavy share of an evaluation of ``count`` bodies (0: none)."""
        return heavy_share_in(self.setting.variant(count), self._heavy_share_given)

    def _build(self, body: DeviceArray, count: int) -> DeviceTree:
        return self._builder.build(body, count, theta=None, node_capacity=self._node_slots(count))

    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        self._locals_spent = False
        theta = self.setting.theta(count)
        if self.setting.variant(count)["order"] != self.order:
            self._use_order(self.setting.variant(count)["order"])
        k = self._kernels(potential)
        key = self._replay_key(body, out, count, potential, theta)
        if self._graph is not None and self._graph.key != key:
            self._graph = None
        if self._graph is None and key is not None and key == self._fitted:
            self._graph = self._capture(key, k, body, out, count, theta)
        if self._graph is not None:
            events = self._replayed(count)
            if events is not None:
                return events
        return self._launched(k, body, out, count, theta, key)

    def _launched(self, k: dict, body: DeviceArray, out: DeviceArray, count: int, theta: float,
                  key) -> list[KernelEvent]:
        """The evaluation launched kernel by kernel (timed stage by stage), making or renewing
        the plans where it has to."""
        # The last lists live in the walk's arrays, which this evaluation may grow: held here, the
        # old arrays would take memory beside the new ones.
        self._last = None
        tree = self._build(body, count)
        reads = 0
        if not self._node_capacity:  # no node plan: the tree's counts now
            self._plan_nodes(tree.node_count, tree.occupied_mask)
            reads += 1
            # Built again in the plan's slots: the guess held too few nodes, or would take
            # memory beside the lists for nodes the tree does not have.
            if tree.nodes.shape[0] != self._node_slots(count):
                tree = self._build(body, count)
        events = {stage: [] for stage in FMM_STAGES}
        passes = 0
        while True:
            lists = self._queue_passes(k, tree, count, theta, out, events)
            state = self._walk.state.download()
            passes, reads = passes + 1, reads + lists.host_reads + 1
            if self._fits(state):
                break
            if int(state[STATE_TREE_NODES]) > tree.nodes.shape[0]:  # its nodes were not all written
                tree = self._build(body, count)
        # Planned and within the plans at once: the next evaluation with this key is captured.
        self._fitted = key if reads == 1 else None
        self._stage_events, self._graph_event = {**tree.events, **events}, None
        self._evaluated(tree, lists, state, count, reads=reads, passes=passes)
        return [event for stage in self._stage_events.values() for event in stage]

    def _fits(self, state: np.ndarray) -> bool:
        """Whether the evaluation whose state was read fitted the plans; else the plans are
        renewed from it (the node plan where the passes took no nodes, and then the walk had
        nothing to do; the walk's where it overflowed or left a frontier)."""
        nodes = int(state[STATE_NODES])
        if not nodes:
            self._plan_nodes(int(state[STATE_TREE_NODES]), int(state[STATE_LEVELS]))
        return self._walk.complete(state) and nodes > 0

    def _evaluated(self, tree: DeviceTree, lists: InteractionLists, state, count: int, *, reads: int,
                   passes: int) -> None:
        m2l_pairs, p2p_pairs = int(state[STATE_M2L]), int(state[STATE_P2P])
        self._last = (tree, lists, m2l_pairs, p2p_pairs)
        self._info = {"m2l_interactions": 2 * m2l_pairs, "p2p_pairs": 2 * p2p_pairs,
                      "m2l_flops": 2 * m2l_pairs * expansion_code(self.order).m2l_flops,
                      "expansion_bits": 8 * self.expansion.itemsize, "walk_steps": lists.steps,
                      "host_reads": reads, "passes": passes, "nodes": int(state[STATE_NODES]),
                      "graph": self._graph_event is not None,
                      "terms": self._terms, "order": self.order, "heavy_share": self._heavy_share(count),
                      **self.setting.stats()}
        self._n = count

    def _replay_key(self, body: DeviceArray, out: DeviceArray, count: int, potential: bool, theta: float):
        """What a graph of the evaluation holds fixed (arrays, sizes, scalars, plans), or None
        where evaluations are not replayed (no plans yet, or ``replay`` off)."""
        if not self.replay or not self._node_capacity or self._walk is None or self._walk.plan is None:
            return None
        return (id(body), id(out), count, potential, self.order, theta, self._heavy_share(count),
                self._node_capacity, self._levels,
                id(self._walk.plan))

    def _capture(self, key, k: dict, body: DeviceArray, out: DeviceArray, count: int,
                 theta: float) -> _Replay | None:
        """The build and the passes of a planned evaluation captured as a graph (None where the
        context has none, and from then on ``replay`` is off: ``replay_unavailable`` says why)."""
        queued = {}

        def evaluation():
            queued["tree"] = self._build(body, count)
            queued["lists"] = self._queue_passes(k, queued["tree"], count, theta, out,
                                                 {stage: [] for stage in FMM_STAGES})
        try:
            graph = self.context.capture(evaluation)
        except Exception as error:  # noqa: BLE001 - evaluations go on launched one by one
            graph, self.replay_unavailable = None, f"{type(error).__name__}: {error}"
        if graph is None:
            self.replay = False
            self.replay_unavailable = self.replay_unavailable or "the device has no graphs"
            return None
        return _Replay(key, graph, queued["tree"], queued["lists"], (body, out))

    def _replayed(self, count: int) -> list[KernelEvent] | None:
        """The evaluation replayed from its graph and its state read; None (the graph dropped,
        the plans renewed) where the tree outgrew the plans the graph was captured with."""
        replay = self._graph
        event = replay.graph.launch()
        state = self._walk.state.download()
        if not self._fits(state):
            self._graph = self._fitted = None
            return None
        self._stage_events, self._graph_event = {}, event
        # A fresh record of the same arrays: the counts it reads when asked are this tree's.
        self._evaluated(replace(replay.tree), replay.lists, state, count, reads=1, passes=1)
        return [event]

    def _queue_passes(self, k: dict, tree: DeviceTree, count: int, theta: float, out: DeviceArray,
                      events: dict[str, list[KernelEvent]]) -> InteractionLists:
        """Every pass after the build, over the node plan's slots and levels, reading nothing
        back once the walk has a plan."""
        slots, state = self._node_capacity, self._walk.state
        width = launch_size(slots, ITEM_GROUP)
        events["upward"].append(k["plan_nodes"].launch(ITEM_GROUP, ITEM_GROUP, tree.starts, np.int32(count),
                                                       tree.level_mask, np.uint32(slots), np.uint32(self._levels),
                                                       state))
        # Every leaf at once, then the internal nodes level by level, deepest first, a launch for
        # each planned level (a node of the deepest level is a leaf; a Plummer tree of 1M bodies
        # fills 13 of the 22).
        levels = levels_of(self._levels)
        geometry = (tree.cube, self._box, self._shape, self._centre, self._multipole)
        events["upward"].append(k["upward_leaves"].launch(launch_size(slots * self._p2m_lanes, ITEM_GROUP),
                                                          ITEM_GROUP, state, tree.nodes, tree.keys, tree.body,
                                                          *geometry))
        for level in reversed([level for level in levels if level < MORTON_LEVELS]):
            events["upward"].append(k["upward"].launch(width, ITEM_GROUP, np.int32(level), state, tree.nodes,
                                                       tree.levels, *geometry))
        opening = _native.fmm_opening(theta, self.order, self._heavy_share(count), count)
        lists = self._walk.walk(tree.nodes, slots, self._shape, opening, events)
        shift = np.int32(max(1, (slots - 1).bit_length()))  # bits of a node index
        events["m2l"].append(k["m2l_schedule"].launch(width, ITEM_GROUP, np.int32(slots), shift, lists.m2l_start,
                                                      self._schedule))
        sort_events, schedule = self._sort.sort_keys(self._schedule, self._spare_schedule, slots,
                                                     SCHEDULE_LENGTH_BITS + int(shift))
        events["m2l"] += sort_events
        self._m2l_pass = (k["m2l"], schedule, shift)
        events["m2l"].append(self._launch_m2l(lists, self._multipole, self._local))
        events["downward"].append(k["node_parents"].launch(width, ITEM_GROUP, state, tree.nodes, self._parent))
        self._l2l_kernel = k["l2l"]
        events["downward"] += self._launch_l2l(tree, self._local)
        group = self._p2p["P2P_GROUP"]
        events["p2p"].append(k["p2p"].launch(slots * group, group, tree.body, state, tree.nodes,
                                             lists.p2p_start, lists.p2p_source,
                                             self.dtype.type(self.softening ** 2), tree.order, out))
        events["l2p"].append(k["l2p_bodies"].launch(slots * L2P_GROUP, L2P_GROUP, state, tree.nodes, tree.body,
                                                    self._centre, self._local, tree.order, out))
        return lists

    def _launch_m2l(self, lists: InteractionLists, multipole: DeviceArray, field: DeviceArray) -> KernelEvent:
        """The last passes' M2L (its kernel, in the schedule they sorted) over ``lists``: ``field``
        of every node from the signed expansions ``multipole`` (``MULTIPOLE_STRIDE`` a node) of
        its list's nodes."""
        kernel, schedule, shift = self._m2l_pass
        return kernel.launch(launch_size(self._node_capacity * self._m2l_lanes, M2L_GROUP), M2L_GROUP,
                             self._walk.state, shift, schedule, lists.m2l_start, lists.m2l_source, self._centre,
                             self.expansion.type(self.softening ** 2), multipole, field)

    def _launch_l2l(self, tree: DeviceTree, field: DeviceArray) -> list[KernelEvent]:
        """The last passes' L2L over ``tree``'s cell levels below the root, shallowest first (a
        parent's row is final before its children's launch): each node's row of ``field``
        (``TERMS`` a node) adds its parent's, re-expanded about its own centre."""
        width = launch_size(self._node_capacity, ITEM_GROUP)
        return [self._l2l_kernel.launch(width, ITEM_GROUP, np.int32(level), self._walk.state, tree.levels,
                                        self._parent, self._centre, field)
                for level in levels_of(self._levels) if level > 0]

    def launch_vjp(self, body: DeviceArray, cotangent: DeviceArray, out: DeviceArray, count: int, *,
                   potential: bool) -> list[KernelEvent]:
        """Queue the VJP of the last evaluation (``launch_accelerations`` of ``body``'s first
        ``count`` rows), its tree, lists and centres held fixed, on the device
        (``kernels/fmm_vjp.cl``): for the cotangent rows ``cotangent`` (padded ``real4`` rows
        (abar_x, abar_y, abar_z, pbar) in the caller's order; pbar read only with
        ``potential``), write (pos_bar, mass_bar) rows into ``out`` (``cotangent`` itself, if
        the caller likes)."""
        if self._last is None or self._last[0].count != count:
            raise InvalidInputError("gpu-fmm's VJP is that of its last evaluation, of the same "
                                    f"{count} bodies: evaluate them first")
        if self._locals_spent:
            raise InvalidInputError("gpu-fmm's VJP writes over its evaluation's local expansions, "
                                    "so an evaluation has one VJP: evaluate the bodies again")
        if self._vjp is None:
            self._vjp = DeviceFmmVjp(self)
        tree, lists, _, _ = self._last
        evaluation = FmmEvaluation(tree=tree, lists=lists, state=self._walk.state, slots=self._node_capacity,
                                   levels=self._levels, centre=self._centre, shape=self._shape,
                                   multipole=self._multipole, local=self._local, defines=self._defines(potential),
                                   schedule=self._m2l_pass[1], shift=self._m2l_pass[2],
                                   m2l=lambda multipole, field: self._launch_m2l(lists, multipole, field),
                                   l2l=lambda field: self._launch_l2l(tree, field))
        self._locals_spent = True
        return self._vjp.launch(evaluation, cotangent, out, count, potential=potential)

    def kernel_resources(self) -> dict[str, dict[str, int]]:
        """Registers and spills of the expansion and pair kernels where the backend reports them
        (CUDA), per kernel name: for benchmarks, to tell a kernel that spills."""
        return {name: kernel.resources() for name, kernel in self._kernels(False).items()
                if name in ("upward_leaves", "upward", "m2l", "l2l", "p2p", "l2p_bodies")}

    def locality_order(self, count: int):
        # The tree's Morton order (the builder gpu-tree uses).
        tree = None if self._last is None else self.last_tree()
        return tree.order if tree is not None and tree.count == count else None

    def last_tree(self) -> DeviceTree:
        """The last evaluation's :class:`DeviceTree` (for tests and diagnostics, as gpu-tree's)."""
        return self._last[0]

    def last_lists(self) -> dict:
        """The last evaluation's interaction lists, parents and centres, copied to the host (for
        tests and benchmarks; cpu-fmm's ``last_lists`` names)."""
        tree, lists, m2l_pairs, p2p_pairs = self._last
        nodes_n = tree.node_count
        return {"m2l_start": lists.m2l_start.download()[:nodes_n + 1],
                "m2l_source": lists.m2l_source.download().view(np.uint32)[:2 * m2l_pairs],
                "p2p_start": lists.p2p_start.download()[:nodes_n + 1],
                "p2p_source": lists.p2p_source.download().view(np.uint32)[:2 * p2p_pairs],
                "parent": self._parent.download()[:nodes_n],
                "centre": self._centre.download()[:3 * nodes_n].reshape(-1, 3)}

    def interaction_counts(self) -> dict:
        """The last evaluation's ``leaves`` and ``particle_particle`` (body pairs P2P sums, cpu-fmm's
        count), from the lists copied to the host: for benchmarks, not part of an evaluation."""
        tree = self.last_tree()
        lists = self.last_lists()
        nodes = tree.node_records(self.dtype)
        leaves = np.flatnonzero(nodes["skip"] == np.arange(1, tree.node_count + 1))
        count = nodes["count"].astype(np.int64)
        running = np.concatenate([[0], np.cumsum(count[lists["p2p_source"]])])
        start = lists["p2p_start"].astype(np.int64)
        listed = count + running[start[1:]] - running[start[:-1]]
        counts = {"leaves": int(len(leaves)), "particle_particle": int(np.sum(count[leaves] * (listed[leaves] - 1))),
                  "m2l_interactions": self._info["m2l_interactions"]}
        return {**counts, "cost_per_particle": cost_per_particle(counts, self._n, self.order)}

    def launch_times(self) -> list[dict]:
        """The last evaluation's device time by stage and kernel, in launch order: ``launches``,
        ``total_s`` and ``longest_s`` (waits for them; for benchmarks, ``bench fmm --launches``)."""
        rows: dict[tuple[str, str], dict] = {}
        for stage, events in self._stage_events.items():
            for event in events:
                row = rows.setdefault((stage, event.name), {"stage": stage, "kernel": event.name, "launches": 0,
                                                            "total_s": 0.0, "longest_s": 0.0})
                seconds = event.seconds()
                row["launches"] += 1
                row["total_s"] += seconds
                row["longest_s"] = max(row["longest_s"], seconds)
        return list(rows.values())

    def _breakdown(self) -> dict:
        stats = {f"{stage}_s": sum(event.seconds() for event in events)
                 for stage, events in self._stage_events.items()}
        stats["kernel_s"] = self._graph_event.seconds() if self._graph_event is not None else sum(stats.values())
        return {**stats, **self._info, "device": self.context.info.spec}

    def _device_stats(self, events, launch) -> dict:
        # Waited for only when last_stats is read, like gpu-tree's (GpuSolver.record_stats).
        return self._breakdown()


SPEC = SolverSpec(
    name="gpu-fmm",
    kind="gpu",
    doc="fast multipole method on a GPU (CUDA or SYCL): O(N), error set by theta and order p",
    options=(PRECISION, SOFTENING, DEVICE, FMM_THETA, ACCURACY, CHECK_ACCURACY, FMM_ORDER,
             FMM_LEAF_CAPACITY, EXPANSIONS, FMM_HEAVY_SHARE),
    factory=GpuFmmSolver,
    unavailable_reason=unavailable_reason,
)
