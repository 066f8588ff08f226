"""gpu-fmm's force VJP on its device (``kernels/fmm_vjp.cl``, docs/adr/0326): the reverse passes
over the last evaluation's tree, lists, centres and expansions, held fixed, and the arrays of
cotangents they fill (a node's local cotangents, its centre's cotangents and the cube's side's
from its M2L terms and shifts, the bodies' cotangent rows in key order and the cube's), kept
between calls and grown as the trees grow. Two take no array of their own: the bodies'
far-field cotangents are summed in the output's rows, and the nodes' multipole cotangents are
written over the evaluation's local expansions once the transposed L2P and the first shifts'
gradients have read them (so an evaluation has one VJP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..compute import DeviceArray, KernelEvent, launch_size
from ._device_fmm_walk import STATE_DEFINES, InteractionLists
from ._device_tree import ITEM_GROUP, MORTON_LEVELS, DeviceTree, levels_of
from ._fmm_code import expansion_code, vjp_code

# vjp_cube's work-group, and the count of groups of its first stage, which read every body and
# node once between them (one group alone took 2.7 ms of a 15 ms VJP at 2^20 bodies on an H100).
CUBE_GROUP = 256
# vjp_p2p is fmm.cl's p2p built with P2P_VJP at the evaluation's P2P defines (its cotangent tile
# doubles the tile's local memory: 41.5 KiB a group in float64, within CUDA's 48). At the
# forward's residency (64 registers a thread in float32, no spill) it took 1.76 ms at 2^20 on an
# H100, where half as many threads a multiprocessor (90 registers) took 1.85.
VJP_KERNELS = ("vjp_l2p", "vjp_l2l", "vjp_shifts", "vjp_m2l", "vjp_p2m", "vjp_cube_parts", "vjp_cube", "vjp_p2p")


@dataclass(frozen=True)
class FmmEvaluation:
    """What the VJP differentiates: an evaluation's tree and lists, its state on the device, the
    node plan's slots and cell levels, its centres, shapes, signed multipoles and local
    expansions (the VJP's room for the multipoles' cotangents once read), fmm.cl's defines it
    was built with, M2L's schedule, and its M2L (over its lists, in that schedule) and L2L (over
    its parents) for other expansions."""

    tree: DeviceTree
    lists: InteractionLists
    state: DeviceArray
    slots: int
    levels: int
    centre: DeviceArray
    shape: DeviceArray
    multipole: DeviceArray
    local: DeviceArray
    defines: dict
    schedule: DeviceArray  # M2L's: the nodes, longest list first (sort keys)
    shift: np.int32  # the bits of a node index in the schedule's keys
    m2l: Callable[[DeviceArray, DeviceArray], KernelEvent]  # its M2L: (sources, field) -> event
    l2l: Callable[[DeviceArray], list[KernelEvent]]  # its L2L down the levels: field -> events


class DeviceFmmVjp:
    """The VJP passes of one gpu-fmm solver (``solver``: its context, precisions and order)."""

    def __init__(self, solver):
        self.solver = solver
        self._programs: dict[tuple, dict] = {}
        self._nodes = self._stride = self._bodies = 0  # what the arrays hold
        context, accum = solver.context, solver.accum
        self._cube_bar = context.empty(6, accum, "adjoint.fmm_cube")
        self._cube_index = context.empty(6, np.int32, "adjoint.fmm_cube")
        # The first stage's rows: each group's extremes (value, caller index) and sums.
        self._part_value = context.empty(6 * CUBE_GROUP, accum, "adjoint.fmm_cube")
        self._part_index = context.empty(6 * CUBE_GROUP, np.uint32, "adjoint.fmm_cube")
        self._part_sum = context.empty(4 * CUBE_GROUP, accum, "adjoint.fmm_cube")

    def _kernels(self, defines: dict, potential: bool) -> dict:
        solver = self.solver
        key = (solver.order, potential, solver.softening == 0)
        if key not in self._programs:
            text = expansion_code(solver.order).text + vjp_code(solver.order)
            program = solver.context.build(
                ["tree_common.cl", "softened_pair.cl", "fmm.cl", "fmm_vjp.cl"], package=__package__, text=text,
                defines={**defines, "WITH_POTENTIAL": potential, "ZERO_SOFTENING": solver.softening == 0,
                         "P2P_VJP": True, "CUBE_GROUP": CUBE_GROUP, **STATE_DEFINES})
            self._programs[key] = {name: program.kernel(name) for name in VJP_KERNELS}
        return self._programs[key]

    def _reserve(self, nodes: int, stride: int, bodies: int) -> None:
        """Room for ``nodes`` nodes of ``stride`` expansion terms (MULTIPOLE_STRIDE: the local
        cotangents are M2L's sources) and ``bodies`` bodies."""
        solver, context = self.solver, self.solver.context
        if nodes > self._nodes or stride > self._stride:
            self._nodes, self._stride = max(nodes, self._nodes), max(stride, self._stride)
            size = self._nodes * self._stride
            self._local_bar = context.empty(size, solver.expansion, "adjoint.fmm_locals")
            self._centre_bar = context.empty(3 * self._nodes, solver.accum, "adjoint.fmm_centres")
            self._side_bar = context.empty(self._nodes, solver.accum, "adjoint.fmm_centres")
        if bodies > self._bodies:
            self._sorted_bar = context.empty((bodies, 4), solver.dtype, "adjoint.fmm_bodies")
            self._bodies = bodies

    def launch(self, evaluation: FmmEvaluation, cotangent: DeviceArray, out: DeviceArray, count: int, *,
               potential: bool) -> list[KernelEvent]:
        """Queue the VJP of ``evaluation`` (the solver's last: ``tree``, ``lists``, the node
        plan's ``slots``, ``levels`` and arrays, the program's ``defines``) for the cotangent
        rows ``cotangent`` (the caller's order): (pos_bar, mass_bar) rows into ``out``."""
        e = evaluation
        k = self._kernels(e.defines, potential)
        self._reserve(e.slots, e.defines["MULTIPOLE_STRIDE"], count)
        solver, tree, lists = self.solver, e.tree, e.lists
        state, width = e.state, launch_size(e.slots, ITEM_GROUP)
        # The multipoles' cotangents have M2L's output's rows, as the local expansions do, which
        # only vjp_l2p and the first vjp_shifts read: the M2L transpose then writes over them
        # (the queue runs in order), as a cotangent array of their own would take 25 bytes a
        # body at order 7.
        local_bar, multipole_bar, centre_bar = self._local_bar, e.local, self._centre_bar
        leaf_width = launch_size(e.slots * e.defines["P2M_LANES"], ITEM_GROUP)  # upward_leaves' lanes a leaf
        events = [k["vjp_l2p"].launch(leaf_width, ITEM_GROUP, state, tree.nodes, tree.body, tree.order, cotangent,
                                      e.centre, e.local, self._sorted_bar, local_bar, centre_bar, out)]
        cells = [level for level in levels_of(e.levels) if level < MORTON_LEVELS]
        for level in reversed(cells):
            events.append(k["vjp_l2l"].launch(width, ITEM_GROUP, np.int32(level), state, tree.nodes, tree.levels,
                                              e.centre, local_bar))
        events.append(k["vjp_shifts"].launch(width, ITEM_GROUP, np.int32(1), state, tree.nodes, e.centre, e.shape,
                                             e.local, local_bar, self._side_bar))
        # M2L transposed is M2L: the signed local cotangents as sources give the multipoles'
        events.append(e.m2l(local_bar, multipole_bar))
        lanes, group = e.defines["M2L_LANES"], e.defines["M2L_GROUP"]
        events.append(k["vjp_m2l"].launch(launch_size(e.slots * lanes, group), group, state, e.shift, e.schedule,
                                          lists.m2l_start, lists.m2l_source, e.centre, e.shape,
                                          solver.expansion.type(solver.softening ** 2), e.multipole, local_bar,
                                          self._side_bar))
        # M2M transposed is L2L: each node's multipole cotangent shifted down into its children's
        events += e.l2l(multipole_bar)
        events.append(k["vjp_shifts"].launch(width, ITEM_GROUP, np.int32(0), state, tree.nodes, e.centre, e.shape,
                                             multipole_bar, e.multipole, self._side_bar))
        events.append(k["vjp_p2m"].launch(width, ITEM_GROUP, state, tree.nodes, tree.body, tree.order,
                                          e.centre, multipole_bar, centre_bar, out))
        parts = (self._part_value, self._part_index, self._part_sum)
        events.append(k["vjp_cube_parts"].launch(CUBE_GROUP * CUBE_GROUP, CUBE_GROUP, state, tree.body, tree.order,
                                                 np.int32(count), e.shape, centre_bar, self._side_bar, *parts))
        events.append(k["vjp_cube"].launch(CUBE_GROUP, CUBE_GROUP, *parts, self._cube_bar, self._cube_index))
        group = e.defines["P2P_GROUP"]
        events.append(k["vjp_p2p"].launch(e.slots * group, group, tree.body, state, tree.nodes, lists.p2p_start,
                                          lists.p2p_source, solver.dtype.type(solver.softening ** 2), tree.order,
                                          self._sorted_bar, self._cube_bar, self._cube_index, out))
        return events
