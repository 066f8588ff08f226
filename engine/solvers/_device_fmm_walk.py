"""gpu-fmm's dual tree walk on the device (``fmm.cl``'s walk kernels, docs/fmm-tuning-log.md#0157): the
interaction lists of native ``fmm_lists`` (cpu-fmm's), computed breadth first over node pairs.

Each step (``walk_step``, one launch) takes the frontier's pairs two levels down and appends
their M2L pairs, P2P pairs and next frontier to arrays, each work-group reserving its room with
one atomic add per array; the walk's state (pairs so far, an overflow flag, the frontier sizes)
stays on the device. The arrays hold the same pairs every run in an order that varies. The
unordered pairs then become per-target lists without a global sort (``fmm_lists.cl``,
docs/fmm-tuning-log.md#0172: :class:`DeviceLists`): integer atomics count each node's entries, one exclusive
scan places the segments, a second atomic pass scatters both directions of every pair into
them, and a sub-group sorts each segment (sources ascending). The lists are exactly
the host's, entry for entry, whatever order the pairs and the atomics came in.

Host round trips: the first walk (and any walk after an overflow) reads the state after each
step, and grows an array that overflowed to the size the step counted and runs the step again;
it keeps the steps' widths and the arrays' sizes, each with a quarter to spare, as a plan.
Later walks queue every step of the plan at once and read nothing: the lists take the pair
counts where the walk left them, launched over the arrays' capacities (docs/fmm-tuning-log.md#0191). The
solver reads the state once its whole evaluation is queued (``complete``): a tree that outgrew
the plan (a wider frontier, more pairs, more steps) set the overflow flag or left a frontier,
and is walked again step by step, which renews the plan; either way the lists are the same
arrays.

The state is the evaluation's (``state``, STATE_WORDS words on the device): the walk's pair
counts, overflow flag and frontier sizes, and the nodes the passes take (fmm.cl's plan_nodes:
gpu-fmm's node plan, ``STATE_NODES`` .. ``STATE_LEVELS``), which the walk reads to start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compute import Context, DeviceArray, DeviceScan, KernelEvent, launch_size
from ..errors import InvalidInputError
from ._device_tree import ITEM_GROUP

# Kernels index list entries and walk counts with 32-bit signed integers.
MAX_ENTRIES = 2**31 - 1
FRONTIERS = ("frontier_a", "frontier_b")
# list_sort (fmm_lists.cl): a sub-group per target. A segment of up to LIST_SLOTS entries a
# work-item is sorted in registers by a bitonic network (lists are mostly below 300 entries:
# 512 on a sub-group of 32); a longer one is ranked, each work-item ranking LIST_RANKS entries a
# pass against the segment in local tiles of LIST_TILE (4 KiB: every device's local memory
# holds it, and a GPU multiprocessor many groups' worth).
LIST_SLOTS = 16
LIST_RANKS = 2
LIST_TILE = 1024
# The evaluation's state (fmm.cl): M2L pairs, P2P pairs, overflow, the frontier sizes of steps
# 0, 1, 2 mod 3, then the nodes the passes take, the tree's node count and its level mask.
STATE_M2L, STATE_P2P, STATE_OVERFLOW, STATE_FRONTIER = 0, 1, 2, 3
STATE_NODES, STATE_TREE_NODES, STATE_LEVELS = 6, 7, 8
STATE_WORDS = 9
STATE_DEFINES = {"STATE_NODES": STATE_NODES, "STATE_TREE_NODES": STATE_TREE_NODES, "STATE_LEVELS": STATE_LEVELS}


def _spare(size: int) -> int:
    return size + size // 4 + 64


# Scratch arrays that only one step of building the lists reads (the others hold pairs or lists).
STEP_SCRATCH = (*FRONTIERS, "cursor", "unsorted")


def _scratch(context: Context, arrays: dict[str, DeviceArray], name: str, size: int, dtype) -> DeviceArray:
    """Scratch array ``name`` of ``arrays`` with room for ``size`` entries (contents not kept on growth)."""
    array = arrays.get(name)
    if array is None or array.size < max(1, size):
        kind = "temporaries" if name in STEP_SCRATCH else "lists"
        array = arrays[name] = context.empty(_spare(size), dtype, f"{kind}.{name}")
    return array


@dataclass
class InteractionLists:
    """Per-target lists on the device: the sources of node i are ``source[start[i]:start[i+1]]``
    (``m2l_*`` cells through expansions, ``p2p_*`` leaves pair by pair; the unordered pairs'
    counts are in the state, each list holding twice as many entries); ``steps`` launched,
    ``host_reads`` the walk's round trips (none once it has a plan)."""

    m2l_start: DeviceArray
    m2l_source: DeviceArray
    p2p_start: DeviceArray
    p2p_source: DeviceArray
    steps: int
    host_reads: int


@dataclass
class WalkPlan:
    widths: list[int]  # each step's launch width
    m2l: int           # capacities of the pair arrays
    p2p: int


class DeviceDualWalk:
    """Runs the walk for one solver, keeping its arrays and plan. ``program``: the built ``fmm.cl``."""

    def __init__(self, context: Context, program):
        self.context = context
        self._k = {name: program.kernel(name) for name in
                   ("walk_reset", "walk_step", "copy_pairs")}
        self._lists = DeviceLists(context, DeviceScan(context))
        self._root = context.upload(np.zeros(1, np.uint64), "lists.root_pair")  # the pair (root, root)
        self.state = context.empty(STATE_WORDS, np.uint32, "temporaries.fmm_state")
        self._arrays: dict[str, DeviceArray] = {}
        self._heavy_theta2: tuple[np.ndarray, DeviceArray] | None = None  # host values, device copy
        self.plan: WalkPlan | None = None
        self._steps = 0  # the last walk's

    def _array(self, name: str, size: int, dtype) -> DeviceArray:
        """Scratch array ``name`` with room for ``size`` entries (contents not kept on growth)."""
        return _scratch(self.context, self._arrays, name, size, dtype)

    def _keep_growing(self, name: str, size: int, filled: int, events: list[KernelEvent]) -> DeviceArray:
        """Pair list ``name`` with room for ``size``, keeping its first ``filled`` entries."""
        array = self._arrays.get(name)
        if array is not None and array.size >= max(1, size):
            return array
        grown = self.context.empty(_spare(size), np.uint64, f"lists.{name}")
        if array is not None and filled:
            events.append(self._k["copy_pairs"].launch(launch_size(filled, ITEM_GROUP), ITEM_GROUP, array,
                                                       np.int32(filled), grown))
        self._arrays[name] = grown
        return grown

    def walk(self, nodes: DeviceArray, node_slots: int, shape: DeviceArray, opening: dict,
             events: dict[str, list[KernelEvent]]) -> InteractionLists:
        """The lists of the tree ``nodes`` (the state's ``STATE_NODES`` of them, at most
        ``node_slots``, the rows of ``shape`` and of the lists' starts) with the geometry
        ``shape`` (``upward``'s) and the opening angles ``opening`` (native ``fmm_opening``'s,
        the host walk's own values); appends the launches to ``events["walk"]`` and
        ``events["lists"]``. Reads nothing once the walk has a plan: ``complete`` then says
        whether the tree fitted it."""
        geometry = (nodes, shape, *self._opening(opening, shape.dtype))
        if self.plan is not None:
            steps, reads = self._planned(geometry, events["walk"]), 0
        else:
            steps, reads = self._stepwise(geometry, node_slots, events["walk"])
        self._steps = steps
        m2l_start, m2l_source = self._lists.build("m2l", self._arrays["m2l"], self.state, STATE_M2L, node_slots,
                                                  events["lists"])
        p2p_start, p2p_source = self._lists.build("p2p", self._arrays["p2p"], self.state, STATE_P2P, node_slots,
                                                  events["lists"])
        return InteractionLists(m2l_start, m2l_source, p2p_start, p2p_source, steps, reads)

    def complete(self, state: np.ndarray) -> bool:
        """Whether the last walk reached its end within its arrays, from the state read after it
        (else its plan is dropped: the next walk goes step by step)."""
        if state[STATE_OVERFLOW] or state[STATE_FRONTIER + self._steps % 3]:
            self.plan = None
            return False
        return True

    def _opening(self, opening: dict, dtype) -> tuple:
        """walk_step's theta2, heavy and heavy_theta2 arguments (the table uploaded when it changes)."""
        table = np.asarray(opening["heavy_theta2"], np.float64).astype(dtype)
        if self._heavy_theta2 is None or not np.array_equal(self._heavy_theta2[0], table):
            self._heavy_theta2 = (table, self.context.upload(table, "temporaries.heavy_theta2"))
        return np.float64(opening["theta2"]).astype(dtype), np.uint32(opening["heavy"]), self._heavy_theta2[1]

    def _reset(self, m2l: int, p2p: int, step: int, size: int, events: list[KernelEvent]) -> None:
        events.append(self._k["walk_reset"].launch(ITEM_GROUP, ITEM_GROUP, self.state, np.uint32(m2l),
                                                   np.uint32(p2p), np.int32(step), np.uint32(size)))

    def _step(self, pairs, width: int, step: int, geometry, m2l, p2p, next_pairs, events: list[KernelEvent]) -> None:
        events.append(self._k["walk_step"].launch(launch_size(width, ITEM_GROUP), ITEM_GROUP, pairs,
                                                  np.int32(width), np.int32(step), self.state, *geometry,
                                                  m2l, np.uint32(m2l.size), p2p, np.uint32(p2p.size),
                                                  next_pairs, np.uint32(next_pairs.size)))

    def _planned(self, geometry, events: list[KernelEvent]) -> int:
        """Every step of the plan queued at once; the steps."""
        plan = self.plan
        self._reset(0, 0, 0, 1, events)
        widest = max(plan.widths)
        frontiers = [self._array(name, widest, np.uint64) for name in FRONTIERS]
        m2l, p2p = self._array("m2l", plan.m2l, np.uint64), self._array("p2p", plan.p2p, np.uint64)
        pairs = self._root
        for step, width in enumerate(plan.widths):
            next_pairs = frontiers[step % 2]
            self._step(pairs, width, step, geometry, m2l, p2p, next_pairs, events)
            pairs = next_pairs
        return len(plan.widths)

    def _stepwise(self, geometry, node_count: int, events: list[KernelEvent]) -> tuple[int, int]:
        """Step by step, reading the state after each step (and running a step again after
        growing the arrays it overflowed); renews the plan. The steps and the reads."""
        self._reset(0, 0, 0, 1, events)
        reads = 0
        pairs, size, widths = self._root, 1, []
        filled = {"m2l": 0, "p2p": 0}
        arrays = {name: self._keep_growing(name, node_count, 0, events) for name in filled}
        while size:
            step = len(widths)
            next_pairs = self._array(FRONTIERS[step % 2], 4 * size, np.uint64)
            while True:
                self._step(pairs, size, step, geometry, arrays["m2l"], arrays["p2p"], next_pairs, events)
                state = [int(v) for v in self.state.download()]
                reads += 1
                totals = {"m2l": state[STATE_M2L], "p2p": state[STATE_P2P]}
                following = state[STATE_FRONTIER + (step + 1) % 3]
                if 2 * totals["m2l"] > MAX_ENTRIES or 2 * totals["p2p"] > MAX_ENTRIES or following > MAX_ENTRIES:
                    raise InvalidInputError(f"gpu-fmm's interaction lists outgrow 32-bit indices at this N "
                                            f"and theta ({totals['m2l']} M2L pairs so far)")
                if not state[STATE_OVERFLOW]:
                    break
                arrays = {name: self._keep_growing(name, totals[name], filled[name], events) for name in filled}
                next_pairs = self._array(FRONTIERS[step % 2], following, np.uint64)
                self._reset(filled["m2l"], filled["p2p"], step, size, events)
            filled = totals
            widths.append(size)
            pairs, size = next_pairs, following
        self.plan = WalkPlan([_spare(w) for w in widths], _spare(filled["m2l"]), _spare(filled["p2p"]))
        return len(widths), reads


class DeviceLists:
    """Per-target lists from unordered pairs (``fmm_lists.cl``): ``build`` gives ``start``
    (node_count + 1 entries) and ``source``, the sources of node t being
    ``source[start[t]:start[t + 1]]`` ascending; each list ``name`` keeps arrays of its own, so
    the M2L and P2P lists of one evaluation are alive together."""

    def __init__(self, context: Context, scan: DeviceScan):
        self.context = context
        self.group = context.info.subgroup_size  # list_sort's work-group
        program = context.build(["fmm_lists.cl"], package=__package__,
                                defines={"LIST_GROUP": self.group, "LIST_SLOTS": LIST_SLOTS,
                                         "LIST_RANKS": LIST_RANKS, "LIST_TILE": LIST_TILE})
        self._k = {name: program.kernel(name) for name in ("list_clear", "list_count", "list_scatter", "list_sort")}
        self._scan = scan
        self._arrays: dict[str, DeviceArray] = {}

    def build(self, name: str, pairs: DeviceArray, totals: DeviceArray, total: int, node_count: int,
              events: list[KernelEvent]) -> tuple[DeviceArray, DeviceArray]:
        """The lists of the first ``totals[total]`` pairs of ``pairs`` (a count on the device, at
        most ``pairs.size``; ``a << 32 | b``, each unordered pair once, no node with itself) of
        ``node_count`` nodes; appends the launches to ``events``."""
        k, capacity = self._k, pairs.size
        entries = 2 * capacity

        def array(part: str, size: int) -> DeviceArray:
            return _scratch(self.context, self._arrays, part, size, np.uint32)

        # The counts go into start, which the scan turns into the segments' starts in place.
        start, source = array(f"{name}_start", node_count + 1), array(f"{name}_source", entries)
        cursor, unsorted = array("cursor", node_count), array("unsorted", entries)
        node_width, pair_width = launch_size(node_count, ITEM_GROUP), launch_size(capacity, ITEM_GROUP)
        count = (totals, np.int32(total), np.uint32(capacity))
        events.append(k["list_clear"].launch(node_width, ITEM_GROUP, np.int32(node_count), start, cursor))
        events.append(k["list_count"].launch(pair_width, ITEM_GROUP, pairs, *count, start))
        events += self._scan.scan(start, node_count, start)
        events.append(k["list_scatter"].launch(pair_width, ITEM_GROUP, pairs, *count, start, cursor, unsorted))
        events.append(k["list_sort"].launch(node_count * self.group, self.group, np.int32(node_count), start,
                                            unsorted, source))
        return start, source
