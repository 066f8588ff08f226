"""gpu-fmm's dual tree walk on the device (``fmm.cl``'s walk kernels, docs/adr/0154): the
interaction lists of native ``fmm_lists`` (cpu-fmm's), computed breadth first over node pairs.

Each step classifies the frontier's pairs (``walk_count``), places every output with one
exclusive scan over three runs of counts (M2L pairs, P2P pairs, next frontier: the compute
layer's :class:`DeviceScan`) and writes them (``walk_emit``). The one host round trip of a
step is its three totals (12 bytes), which size the next step's launch and the output arrays;
a walk has at most twice the tree's depth steps. The unordered pairs then become per-target
lists: both directions as ``target << 32 | source`` keys, sorted by the compute layer's key sort,
and ``list_starts`` cuts them by target. Sorted by (target, source), the lists are exactly the
host's, entry for entry.

Arrays are kept between walks and grow by a quarter beyond what a walk needed (the pair lists
grow mid-walk with a device copy of what they hold), so a steady simulation allocates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..compute import Context, DeviceArray, DeviceScan, KernelEvent, launch_size
from ..errors import InvalidInputError
from ._device_tree import ITEM_GROUP

# Kernels index list entries and walk counts with 32-bit signed integers.
MAX_ENTRIES = 2**31 - 1


def _grown(size: int) -> int:
    return max(1, size + size // 4)


@dataclass
class InteractionLists:
    """Per-target lists on the device: the sources of node i are ``source[start[i]:start[i+1]]``
    (``m2l_*`` cells through expansions, ``p2p_*`` leaves pair by pair), ``m2l_pairs`` and
    ``p2p_pairs`` unordered pairs (each list holds twice as many entries)."""

    m2l_start: DeviceArray
    m2l_source: DeviceArray
    p2p_start: DeviceArray
    p2p_source: DeviceArray
    m2l_pairs: int
    p2p_pairs: int
    steps: int


class DeviceDualWalk:
    """Runs the walk for one solver, keeping its arrays. ``program``: the built ``fmm.cl``."""

    def __init__(self, context: Context, program):
        self.context = context
        self._k = {name: program.kernel(name) for name in
                   ("walk_count", "walk_emit", "walk_totals", "copy_pairs", "directed_keys", "list_starts")}
        self._scan = DeviceScan(context)
        self._sort = context.key_sort()
        self._root = context.upload(np.zeros(1, np.uint64))  # the pair (root, root)
        self._totals = context.empty(3, np.uint32)
        self._arrays: dict[str, DeviceArray] = {}

    def _array(self, name: str, size: int, dtype) -> DeviceArray:
        """Scratch array ``name`` with room for ``size`` entries (contents not kept on growth)."""
        array = self._arrays.get(name)
        if array is None or array.size < max(1, size):
            array = self._arrays[name] = self.context.empty(_grown(size), dtype)
        return array

    def _keep_growing(self, name: str, size: int, filled: int, events: list[KernelEvent]) -> DeviceArray:
        """Pair list ``name`` with room for ``size``, keeping its first ``filled`` entries."""
        array = self._arrays.get(name)
        if array is not None and array.size >= max(1, size):
            return array
        grown = self.context.empty(_grown(size), np.uint64)
        if array is not None and filled:
            events.append(self._k["copy_pairs"].launch(launch_size(filled, ITEM_GROUP), ITEM_GROUP, array,
                                                       np.int32(filled), grown))
        self._arrays[name] = grown
        return grown

    def walk(self, nodes: DeviceArray, node_count: int, shape: DeviceArray, theta: float,
             events: dict[str, list[KernelEvent]]) -> InteractionLists:
        """The lists of the tree ``nodes`` with the geometry ``shape`` (``upward``'s); appends the
        launches to ``events["walk"]`` and ``events["lists"]``."""
        k, walk_events = self._k, events["walk"]
        theta2 = np.float64(theta * theta).astype(shape.dtype)
        pairs, count, steps = self._root, 1, 0
        filled = {"m2l": 0, "p2p": 0}
        frontiers = ("frontier_a", "frontier_b")
        while count:
            counts = self._array("counts", 3 * count + 1, np.uint32)
            width = launch_size(count, ITEM_GROUP)
            common = (pairs, np.int32(count), nodes, shape, theta2)
            walk_events.append(k["walk_count"].launch(width, ITEM_GROUP, *common, counts))
            walk_events += self._scan.scan(counts, 3 * count, counts)
            walk_events.append(k["walk_totals"].launch(1, 1, counts, np.int32(count), self._totals))
            m2l_new, p2p_new, following = (int(v) for v in self._totals.download())
            if 2 * (filled["m2l"] + m2l_new) > MAX_ENTRIES or 3 * following > MAX_ENTRIES:
                raise InvalidInputError(f"gpu-fmm's interaction lists outgrow 32-bit indices at this N "
                                        f"and theta ({filled['m2l'] + m2l_new} M2L pairs so far)")
            m2l = self._keep_growing("m2l", filled["m2l"] + m2l_new, filled["m2l"], walk_events)
            p2p = self._keep_growing("p2p", filled["p2p"] + p2p_new, filled["p2p"], walk_events)
            next_pairs = self._array(frontiers[steps % 2], following, np.uint64)
            walk_events.append(k["walk_emit"].launch(width, ITEM_GROUP, *common, counts, m2l,
                                                     np.uint32(filled["m2l"]), p2p, np.uint32(filled["p2p"]),
                                                     next_pairs))
            filled["m2l"] += m2l_new
            filled["p2p"] += p2p_new
            pairs, count, steps = next_pairs, following, steps + 1
        m2l_start, m2l_source = self._directed("m2l", filled["m2l"], node_count, events["lists"])
        p2p_start, p2p_source = self._directed("p2p", filled["p2p"], node_count, events["lists"])
        return InteractionLists(m2l_start, m2l_source, p2p_start, p2p_source, filled["m2l"], filled["p2p"],
                                steps)

    def _directed(self, name: str, pair_count: int, node_count: int,
                  events: list[KernelEvent]) -> tuple[DeviceArray, DeviceArray]:
        entries = 2 * pair_count
        keys = self._array("keys", entries, np.uint64)
        start = self._array(f"{name}_start", node_count + 1, np.uint32)
        source = self._array(f"{name}_source", entries, np.uint32)
        if entries:
            events.append(self._k["directed_keys"].launch(launch_size(pair_count, ITEM_GROUP), ITEM_GROUP,
                                                          self._arrays[name], np.int32(pair_count), keys))
            sort_events, keys = self._sort.sort_keys(keys, self._array("spare_keys", entries, np.uint64), entries)
            events += sort_events
        events.append(self._k["list_starts"].launch(launch_size(entries + 1, ITEM_GROUP), ITEM_GROUP, keys,
                                                    np.int32(entries), np.int32(node_count), start, source))
        return start, source
