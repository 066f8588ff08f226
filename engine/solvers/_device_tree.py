"""Building the Barnes-Hut tree on a compute device, every stage there: bounding cube
(reduction), Morton keys, key sort, gather into key order, parallel topology build and
bottom-up moments. The result is cpu-tree's node array (ADR-0010: depth-first, skip indices,
32-bit indices, 32-byte float32 nodes), node for node; kernels in ``tree_keys.cl``,
``tree_build.cl``, ``tree_moments.cl`` (and ``scan.cl``, ``radix_sort.cl``).

Nothing comes back to the host during a build (ADR 0162): the node and walk-group counts stay
on the device, where the kernels that follow read them; the node arrays are sized for the most
nodes a tree of n bodies can have (2n - 1), or for the nodes a caller that knows the tree's shape
plans (gpu-fmm: a tree with more nodes writes none past them, and its count says so), and the
kernels over nodes or groups step by their launch's width. So a whole evaluation queues without waiting for the device. The host reads the counts
only when asked (``DeviceTree.node_count``, ``group_count``: statistics, tests, gpu-fmm's
first evaluation), and with the node count the cell levels that hold nodes (``occupied_levels``,
on the device ``level_mask``: gpu-fmm launches its level passes only for those).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from ..compute import (Context, DeviceArray, DeviceScan, KernelEvent, ceil_div, launch_size,
                       resident_size)
from ..errors import InvalidInputError

MORTON_LEVELS = 21
# Work-group sizes: the box reduction, and every one-item-per-body or per-node kernel.
BOX_GROUP = 256
BOX_PARTIALS = 512
ITEM_GROUP = 128
# Node indices are 32-bit and a tree of n bodies has up to 2n - 1 nodes; kernels index bodies
# with 32-bit signed integers.
MAX_BODIES = 2**31 - 1
STAGES = ("box", "keys", "sort", "build", "moments")


def levels_of(mask: int) -> tuple[int, ...]:
    """The cell levels of a level mask (bit l: level l), ascending."""
    return tuple(level for level in range(MORTON_LEVELS + 1) if mask >> level & 1)


def node_dtype(real: np.dtype) -> np.dtype:
    """The host view of a device node record (the layout of cpu-tree's ``build_tree_f32`` nodes)."""
    real = np.dtype(real)
    size = 4 * real.itemsize + real.itemsize + 12
    itemsize = 32 if real.itemsize == 4 else ceil_div(size, 8) * 8
    return np.dtype({"names": ["com", "mass", "open2", "skip", "first", "count"],
                     "formats": [(real, 3), real, real, "<u4", "<u4", "<u4"],
                     "offsets": [0, 3 * real.itemsize, 4 * real.itemsize, 5 * real.itemsize,
                                 5 * real.itemsize + 4, 5 * real.itemsize + 8],
                     "itemsize": itemsize})


def array_bytes(*tables: dict[str, tuple[str, tuple[int, ...], np.dtype]]) -> dict[str, int]:
    """Bytes per array name of tables of arrays (attribute -> name, shape, dtype)."""
    sums: dict[str, int] = {}
    for table in tables:
        for name, shape, dtype in table.values():
            sums[name] = sums.get(name, 0) + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return sums


@dataclass
class DeviceTree:
    """A built tree in device memory. ``body`` holds the bodies in key order, ``order[k]`` the
    caller's index of body k, ``nodes`` ``node_count`` records (more rows follow: capacity),
    ``quadrupoles`` 6 per node when built with them, ``groups`` the walk groups' node indices.
    ``starts[count]`` is the node count and ``group_starts[count]`` the group count, on the
    device; the properties read them (waiting for the build). ``read_entry(values, index)``
    gives ``values[index]`` and the mask of the cell levels that hold nodes, in one read."""

    count: int
    body: DeviceArray
    keys: DeviceArray
    order: DeviceArray
    nodes: DeviceArray
    levels: DeviceArray
    quadrupoles: DeviceArray
    groups: DeviceArray | None  # None: built without walk groups (gpu-fmm)
    starts: DeviceArray
    group_starts: DeviceArray | None
    read_entry: Callable[[DeviceArray, int], tuple[int, int]]
    events: dict[str, list[KernelEvent]] = field(default_factory=dict)
    # The cube the keys quantise: (min x, min y, min z, side) in the accumulation type.
    cube: DeviceArray | None = None
    # The cell levels that hold nodes, a bit each (bit MORTON_LEVELS the deepest), on the device.
    level_mask: DeviceArray | None = None

    @cached_property
    def _node_total(self) -> tuple[int, int]:
        return self.read_entry(self.starts, self.count)

    @cached_property
    def node_count(self) -> int:
        return self._node_total[0]

    @cached_property
    def occupied_mask(self) -> int:
        """The cell levels that hold nodes, a bit each (bit l: level l); read with the node count."""
        return self._node_total[1]

    @cached_property
    def occupied_levels(self) -> tuple[int, ...]:
        """The cell levels (0 the root's, ``MORTON_LEVELS`` the deepest) that hold nodes,
        ascending; read with the node count."""
        return levels_of(self.occupied_mask)

    @cached_property
    def group_count(self) -> int:
        return self.read_entry(self.group_starts, self.count)[0]

    def node_records(self, real) -> np.ndarray:
        """The nodes as a host structured array (copied from the device)."""
        words = self.nodes.download()[:self.node_count]
        return np.ascontiguousarray(words).view(node_dtype(real)).reshape(-1)


class DeviceTreeBuilder:
    """Builds :class:`DeviceTree` s for one solver's settings, keeping its scratch arrays
    between builds (they are reallocated only when the body count or node count grows)."""

    def __init__(self, context: Context, dtype, *, leaf_capacity: int, group_capacity: int | None,
                 quadrupole: bool):
        """``group_capacity``: the walk groups' most bodies (gpu-tree's); None: no groups are
        listed, and their arrays (8 bytes a body) are not allocated."""
        self.context = context
        self.grouped = group_capacity is not None
        self.dtype = np.dtype(dtype)
        self.quadrupole = quadrupole
        fp64 = context.info.fp64
        self.accum = np.dtype(np.float64 if fp64 else np.float32)
        common = {"REAL_BITS": self.dtype.itemsize * 8, "ACCUM_BITS": self.accum.itemsize * 8}
        keys = context.build(["tree_common.cl", "tree_keys.cl"], package=__package__,
                             defines={**common, "BOX_GROUP": BOX_GROUP})
        grouping = {"GROUP_CAPACITY": group_capacity} if self.grouped else {}
        build = context.build(["tree_common.cl", "tree_build.cl"], package=__package__,
                              defines={**common, "LEAF_CAPACITY": leaf_capacity, **grouping})
        moments = context.build(["tree_common.cl", "tree_moments.cl"], package=__package__,
                                defines={**common, "QUADRUPOLE": quadrupole})
        self._k = {name: keys.kernel(name) for name in
                   ("box_partials", "box_finish", "morton_keys", "gather_bodies",
                    "scatter_results")}
        self._b = {name: build.kernel(name) for name in
                   ("node_chain_lengths", "node_chains", "read_entry")}
        self._m = {name: moments.kernel(name) for name in ("leaf_moments", "internal_moments")}
        self._scan = DeviceScan(context)
        self._sort = context.key_sort()
        self._count = 0
        self._node_capacity = 0
        self._moment_capacity = 0
        self._entry = context.empty(2, np.uint32, "temporaries.tree_entry")
        self._level_mask = context.empty(1, np.uint32, "tree.level_mask")
        self._cube = context.empty(4, self.accum, "tree.cube")
        self._partials = context.empty((2 * BOX_PARTIALS, 4), self.dtype, "temporaries.box_partials")
        # What the build kernels take for the group arrays where there are none (never read).
        self._no_groups = None if self.grouped else context.empty(1, np.uint32, "temporaries.no_groups")

    def body_arrays(self, count: int) -> dict[str, tuple[str, tuple[int, ...], np.dtype]]:
        """The arrays of a build of ``count`` bodies that the count sizes (attribute -> name,
        shape, dtype). The sort leaves keys and order in either array of each pair, so both are
        the tree's."""
        groups = {"group_starts": ("tree.group_starts", (count + 1,), np.dtype(np.uint32)),
                  "groups": ("tree.groups", (count,), np.dtype(np.uint32))} if self.grouped else {}
        return {"keys": ("tree.keys", (count,), np.dtype(np.uint64)),
                "spare_keys": ("tree.keys", (count,), np.dtype(np.uint64)),
                "order": ("tree.order", (count,), np.dtype(np.uint32)),
                "spare_order": ("tree.order", (count,), np.dtype(np.uint32)),
                "sorted": ("bodies.key_order", (count, 4), self.dtype),
                "starts": ("tree.node_starts", (count + 1,), np.dtype(np.uint32)),
                **groups}

    def node_arrays(self, capacity: int) -> dict[str, tuple[str, tuple[int, ...], np.dtype]]:
        """The arrays of ``capacity`` node records and their cell levels."""
        return {"nodes": ("tree.nodes", (capacity, node_dtype(self.dtype).itemsize // 4), np.dtype(np.uint32)),
                "levels": ("tree.levels", (capacity,), np.dtype(np.uint32))}

    def moment_arrays(self, capacity: int) -> dict[str, tuple[str, tuple[int, ...], np.dtype]]:
        """The arrays of the moments of ``capacity`` nodes (attribute -> name, shape, dtype)."""
        quad_rows = capacity if self.quadrupole else 1
        return {"sums": ("tree.moment_sums", (4 * capacity,), self.accum),
                "centres": ("tree.centres", (4 * capacity,), self.accum),
                "moments": ("tree.second_moments", (6 * quad_rows,), self.accum),
                "quadrupoles": ("tree.quadrupoles", (6 * quad_rows,), self.dtype)}

    def build_bytes(self, count: int, *, moments: bool) -> dict[str, int]:
        """Bytes per array name that builds of ``count`` bodies allocate with node arrays for
        the most nodes such a tree can have (every internal node has at least two children:
        2 count - 1; ``moments``: with gpu-tree's moments), from the tables the builder
        allocates by."""
        tables = [self.body_arrays(count), self.node_arrays(2 * count - 1)]
        if moments:
            tables.append(self.moment_arrays(2 * count - 1))
        return array_bytes(*tables)

    def _allocate(self, table: dict) -> dict[str, DeviceArray]:
        return {attribute: self.context.empty(shape, dtype, name)
                for attribute, (name, shape, dtype) in table.items()}

    def _body_arrays(self, count: int) -> None:
        """Every array of a build of ``count`` bodies (``body_arrays``)."""
        if count == self._count:
            return
        arrays = self._allocate(self.body_arrays(count))
        self._keys = (arrays["keys"], arrays["spare_keys"])
        self._order = (arrays["order"], arrays["spare_order"])
        self._sorted, self._starts = arrays["sorted"], arrays["starts"]
        self._group_starts, self._groups = arrays.get("group_starts"), arrays.get("groups")
        self._count = count

    def _node_arrays(self, capacity: int) -> None:
        """Node arrays for ``capacity`` nodes, the old ones released first (they never hold
        memory together)."""
        if self._node_capacity == capacity:
            return
        self._nodes = self._levels = None
        arrays = self._allocate(self.node_arrays(capacity))
        self._nodes, self._levels = arrays["nodes"], arrays["levels"]
        self._node_items = launch_size(min(capacity, resident_size(self.context.info)), ITEM_GROUP)
        self._node_capacity = capacity

    def _moment_arrays(self, capacity: int) -> None:
        arrays = self._allocate(self.moment_arrays(capacity))
        self._sums, self._centres = arrays["sums"], arrays["centres"]
        self._moments, self._quadrupoles = arrays["moments"], arrays["quadrupoles"]
        self._moment_capacity = capacity

    def scatter(self, tree: DeviceTree, result: DeviceArray, out: DeviceArray) -> KernelEvent:
        """``out[order[k]] = result[k]``: key-ordered results back in the caller's order."""
        return self._k["scatter_results"].launch(launch_size(tree.count, ITEM_GROUP), ITEM_GROUP, result,
                                                 tree.order, np.int32(tree.count), out)

    def _read(self, values: DeviceArray, index: int) -> tuple[int, int]:
        self._b["read_entry"].launch(ITEM_GROUP, ITEM_GROUP, values, np.int32(index), self._level_mask,
                                     self._entry)
        entry, mask = self._entry.download()
        return int(entry), int(mask)

    def build(self, body: DeviceArray, count: int, *, theta: float | None,
              node_capacity: int | None = None) -> DeviceTree:
        """The tree of the first ``count`` rows of ``body`` (real4: x, y, z, mass) and its walk
        groups, with the nodes' centres of mass, masses and opening distances for the opening
        angle ``theta`` (the one this evaluation uses); with ``theta=None`` those stay unset
        (gpu-fmm computes its own expansions). Node arrays for ``node_capacity`` nodes (None:
        the most a tree of ``count`` bodies can have); a tree with more has only its count
        (``node_count``) and the first ``node_capacity`` nodes, so build it again with room."""
        moments = theta is not None
        if count < 1:
            raise InvalidInputError("a tree needs at least one body")
        if count > MAX_BODIES:
            raise InvalidInputError(f"gpu-tree holds at most {MAX_BODIES} bodies (32-bit node "
                                    f"indices for up to 2n - 1 nodes), got {count}")
        self._body_arrays(count)
        self._node_arrays(2 * count - 1 if node_capacity is None else min(node_capacity, 2 * count - 1))
        n = np.int32(count)
        k, b, m = self._k, self._b, self._m
        events: dict[str, list[KernelEvent]] = {stage: [] for stage in STAGES}
        partial_groups = min(BOX_PARTIALS, ceil_div(count, BOX_GROUP))
        events["box"] = [
            k["box_partials"].launch(partial_groups * BOX_GROUP, BOX_GROUP, body, n, self._partials),
            k["box_finish"].launch(BOX_GROUP, BOX_GROUP, self._partials, np.int32(partial_groups),
                                   self._cube)]
        events["keys"] = [k["morton_keys"].launch(launch_size(count, ITEM_GROUP), ITEM_GROUP, body, n,
                                                  self._cube, self._keys[0], self._order[0])]
        sort_events, (keys, order) = self._sort.sort(self._keys[0], self._order[0], self._keys[1],
                                                     self._order[1], count)
        events["sort"] = sort_events + [
            k["gather_bodies"].launch(launch_size(count, ITEM_GROUP), ITEM_GROUP, body, order, n, self._sorted)]

        starts = self._starts
        group_starts, groups = ((self._group_starts, self._groups) if self.grouped
                                else (self._no_groups, self._no_groups))
        events["build"] = [b["node_chain_lengths"].launch(launch_size(count, ITEM_GROUP), ITEM_GROUP, keys, n,
                                                          starts, group_starts, self._level_mask)]
        events["build"] += self._scan.scan(starts, count, starts)
        if self.grouped:
            events["build"] += self._scan.scan(group_starts, count, group_starts)
        events["build"].append(b["node_chains"].launch(launch_size(count, ITEM_GROUP), ITEM_GROUP, keys, n,
                                                       starts, group_starts, np.uint32(self._node_capacity),
                                                       self._nodes, self._levels, groups,
                                                       self._level_mask))
        if moments and self._moment_capacity != self._nodes.shape[0]:
            self._moment_arrays(self._nodes.shape[0])
        tree = DeviceTree(count=count, body=self._sorted, keys=keys, order=order, nodes=self._nodes,
                          levels=self._levels,
                          quadrupoles=self._quadrupoles if moments else None,
                          groups=self._groups, starts=starts, group_starts=self._group_starts,
                          read_entry=self._read, events=events, cube=self._cube,
                          level_mask=self._level_mask)
        if not moments:
            del events["moments"]
            return tree
        theta = self.accum.type(theta)
        width = self._node_items
        moment_arrays = (self._sums, self._centres, self._moments, self._quadrupoles)
        events["moments"] = [m["leaf_moments"].launch(width, ITEM_GROUP, self._nodes, self._levels,
                                                      keys, self._sorted, self._cube, theta,
                                                      *moment_arrays)]
        for level in range(MORTON_LEVELS - 1, -1, -1):
            events["moments"].append(m["internal_moments"].launch(
                width, ITEM_GROUP, self._nodes, self._levels, keys, np.int32(level), self._cube,
                theta, *moment_arrays))
        return tree
