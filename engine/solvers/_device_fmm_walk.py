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
step, and grows a frontier that overflowed to the size the step counted and runs the step again.
Pairs past their array's capacity are counted, not written, and do not stop the walk: so a walk
over pair arrays too small (the first, over arrays of one entry) is the count pass, and the
arrays are then allocated for the counted pairs and the walk queued again from its plan. No
array is ever copied into a larger one: an array grows by releasing the old one first, so
old and new never hold memory together. The walk keeps the steps' widths and the arrays' sizes,
each with a quarter to spare, as a plan.
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
# The walk's two frontiers (a step reads one and writes the next into the other). Once the walk
# is done no frontier is read, and the first holds the lists' unsorted entries (DeviceLists.build).
SCRATCH = ("scratch_a", "scratch_b")
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
STEP_SCRATCH = (*SCRATCH, "cursor")


def _sized(context: Context, arrays: dict[str, DeviceArray], name: str, size: int, dtype) -> DeviceArray:
    """Array ``name`` of ``arrays`` with room for ``size`` entries; one too small is released
    before its replacement of exactly ``size`` is allocated (contents not kept), so that the two
    never hold memory together. Callers hold no reference to an array they may grow."""
    array = arrays.get(name)
    if array is not None and array.size >= max(1, size):
        return array
    del array  # released before the allocation, with the table's reference
    arrays.pop(name, None)
    kind = "temporaries" if name in STEP_SCRATCH else "lists"
    arrays[name] = context.empty(max(1, size), dtype, f"{kind}.{name}")
    return arrays[name]


@dataclass
class InteractionLists:
    """Per-target lists on the device: the sources of node i are ``source[start[i]:start[i+1]]``
    (``m2l_*`` cells through expansions, ``p2p_*`` leaves pair by pair; the unordered pairs'
    counts are in the state, each list holding twice as many entries); ``steps`` launched,
    ``host_reads`` the walk's round trips (none once it has a plan)."""

    m2l_start: DeviceArray
    m2l_source: DeviceArray  # uint32 entries in the memory of the walk's uint64 pair array
    p2p_start: DeviceArray
    p2p_source: DeviceArray
    steps: int
    host_reads: int


@dataclass
class WalkPlan:
    widths: list[int]  # each step's launch width (its frontier's capacity)
    m2l: int           # capacities of the pair arrays
    p2p: int

    def frontier(self, parity: int) -> int:
        """The capacity frontier array ``parity`` needs: step s writes the frontier of step
        s + 1 into array s % 2."""
        return max([1, *self.widths[1 + parity::2]])


class DeviceDualWalk:
    """Runs the walk for one solver, keeping its arrays and plan. ``program``: the built ``fmm.cl``."""

    def __init__(self, context: Context, program):
        self.context = context
        self._k = {name: program.kernel(name) for name in
                   ("walk_reset", "walk_step")}
        self._lists = DeviceLists(context, DeviceScan(context))
        self._root = context.upload(np.zeros(1, np.uint64), "lists.root_pair")  # the pair (root, root)
        self.state = context.empty(STATE_WORDS, np.uint32, "temporaries.fmm_state")
        self._arrays: dict[str, DeviceArray] = {}
        self._heavy_theta2: tuple[np.ndarray, DeviceArray] | None = None  # host values, device copy
        self.plan: WalkPlan | None = None
        self._steps = 0  # the last walk's

    def _array(self, name: str, size: int, dtype=np.uint64) -> DeviceArray:
        """Array ``name`` with room for ``size`` entries (``_sized``)."""
        return _sized(self.context, self._arrays, name, size, dtype)

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
            steps, reads = self._stepwise(geometry, events["walk"])
        self._steps = steps
        pairs = {name: self._arrays[name] for name in ("m2l", "p2p")}
        unsorted = self._array(SCRATCH[0], max(array.size for array in pairs.values()))
        m2l_start, m2l_source = self._lists.build("m2l", pairs["m2l"], self.state, STATE_M2L, node_slots,
                                                  unsorted, events["lists"])
        p2p_start, p2p_source = self._lists.build("p2p", pairs["p2p"], self.state, STATE_P2P, node_slots,
                                                  unsorted, events["lists"])
        return InteractionLists(m2l_start, m2l_source, p2p_start, p2p_source, steps, reads)

    def complete(self, state: np.ndarray) -> bool:
        """Whether the last walk reached its end within its arrays, from the state read after it
        (else its plan is dropped: the next walk goes step by step)."""
        if (state[STATE_OVERFLOW] or state[STATE_FRONTIER + self._steps % 3]
                or state[STATE_M2L] > self._arrays["m2l"].size or state[STATE_P2P] > self._arrays["p2p"].size):
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
        frontiers = [self._array(name, plan.frontier(parity)) for parity, name in enumerate(SCRATCH)]
        m2l, p2p = self._array("m2l", plan.m2l), self._array("p2p", plan.p2p)
        pairs = self._root
        for step, width in enumerate(plan.widths):
            next_pairs = frontiers[step % 2]
            self._step(pairs, width, step, geometry, m2l, p2p, next_pairs, events)
            pairs = next_pairs
        return len(plan.widths)

    def _stepwise(self, geometry, events: list[KernelEvent]) -> tuple[int, int]:
        """Step by step, reading the state after each step (and running a step again after
        growing the frontier it overflowed), over the pair arrays as they are: where they were
        too small, this walk was the count pass, and the walk is queued again from the plan it
        renews, over arrays of the counted size. The steps and the reads."""
        self._reset(0, 0, 0, 1, events)
        reads, size, widths, filled = 0, 1, [], {"m2l": 0, "p2p": 0}
        pair_arrays = {name: self._array(name, 1) for name in filled}
        while size:
            step = len(widths)
            frontier = SCRATCH[step % 2]
            while True:
                # The frontier read is the other array (or the root): growing this one frees nothing read.
                pairs = self._root if step == 0 else self._arrays[SCRATCH[(step + 1) % 2]]
                self._step(pairs, size, step, geometry, pair_arrays["m2l"], pair_arrays["p2p"],
                           self._array(frontier, 1), events)
                state = [int(v) for v in self.state.download()]
                reads += 1
                totals = {"m2l": state[STATE_M2L], "p2p": state[STATE_P2P]}
                following = state[STATE_FRONTIER + (step + 1) % 3]
                if 2 * totals["m2l"] > MAX_ENTRIES or 2 * totals["p2p"] > MAX_ENTRIES or following > MAX_ENTRIES:
                    raise InvalidInputError(f"gpu-fmm's interaction lists outgrow 32-bit indices at this N "
                                            f"and theta ({totals['m2l']} M2L pairs so far)")
                if not state[STATE_OVERFLOW]:
                    break
                self._array(frontier, _spare(following))
                self._reset(filled["m2l"], filled["p2p"], step, size, events)
            filled = totals
            widths.append(size)
            size = following
        del pair_arrays
        # Arrays that held every pair keep their size; the others are sized for the counts.
        capacity = {name: self._arrays[name].size if self._arrays[name].size >= count else _spare(count)
                    for name, count in filled.items()}
        self.plan = WalkPlan([_spare(w) for w in widths], capacity["m2l"], capacity["p2p"])
        if any(self._arrays[name].size < count for name, count in filled.items()):
            self._planned(geometry, events)
        return len(widths), reads


class DeviceLists:
    """Per-target lists from unordered pairs (``fmm_lists.cl``): ``build`` gives ``start``
    (node_count + 1 entries) and ``source``, the sources of node t being
    ``source[start[t]:start[t + 1]]`` ascending, written over the pairs (a uint32 view of the
    pair array's memory: two entries a pair); each list ``name`` keeps a ``start`` of its own, so
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
              unsorted: DeviceArray, events: list[KernelEvent]) -> tuple[DeviceArray, DeviceArray]:
        """The lists of the first ``totals[total]`` pairs of ``pairs`` (uint64, a count on the
        device, at most ``pairs.size``; ``a << 32 | b``, each unordered pair once, no node with
        itself) of ``node_count`` nodes, with ``unsorted`` as scratch (at least the pairs'
        bytes); appends the launches to ``events``. ``source`` is ``pairs``, its memory now
        holding uint32 entries."""
        if pairs.dtype != np.uint64 or unsorted.nbytes < pairs.nbytes:
            raise ValueError(f"the lists of {pairs.size} uint64 pairs need as many bytes of scratch, "
                             f"got {unsorted.nbytes}")
        k, capacity = self._k, pairs.size

        def array(part: str, size: int) -> DeviceArray:
            return _sized(self.context, self._arrays, part, size, np.uint32)

        # The counts go into start, which the scan turns into the segments' starts in place.
        start, cursor, source = array(f"{name}_start", node_count + 1), array("cursor", node_count), pairs
        node_width, pair_width = launch_size(node_count, ITEM_GROUP), launch_size(capacity, ITEM_GROUP)
        count = (totals, np.int32(total), np.uint32(capacity))
        events.append(k["list_clear"].launch(node_width, ITEM_GROUP, np.int32(node_count), start, cursor))
        events.append(k["list_count"].launch(pair_width, ITEM_GROUP, pairs, *count, start))
        events += self._scan.scan(start, node_count, start)
        events.append(k["list_scatter"].launch(pair_width, ITEM_GROUP, pairs, *count, start, cursor, unsorted))
        events.append(k["list_sort"].launch(node_count * self.group, self.group, np.int32(node_count), start,
                                            unsorted, source))
        return start, source
