"""The VJP of cpu-tree's evaluation with its tree held fixed, float64.

cpu-tree (monopole cells) sums, for the targets of each group (``native/tree_walk.hpp``): the
softened direct kernel ``K(d) = d / (|d|^2 + eps^2)^(3/2)`` over the group's own other particles,
the particles of the leaves it opens and the cells it accepts, each cell a point of mass ``M_c =
sum m_j`` at its centre of mass ``X_c = sum m_j x_j / M_c`` (j over the cell's particles). With
the lists fixed (which cells and leaves each group meets, decided once at the evaluated
positions), the evaluation is a smooth function of positions and masses, and this module gives
its exact VJP, the chain rule through each cell's mass and centre of mass included:

    dL/dx_j += (m_j / M_c) dL/dX_c,     dL/dm_j += dL/dM_c + dL/dX_c . (x_j - X_c) / M_c

:func:`tree_lists` walks the tree the native build returns (``_native.build_tree_f64``) with the
walk's own rules, so the lists are those cpu-tree evaluated; :func:`fixed_tree_accelerations`
evaluates them in numpy (the tests' check that the lists are cpu-tree's, and the function whose
finite differences the VJP is checked against); :func:`tree_vjp` is its VJP. The quadrupole
cells' VJP is not offered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _native
from .errors import InvalidInputError


@dataclass(frozen=True)
class Group:
    """One walk's lists, as indices into the caller's particles (targets, particles) and into
    the tree's nodes (cells)."""

    targets: np.ndarray
    particles: np.ndarray
    cells: np.ndarray


@dataclass(frozen=True)
class TreeLists:
    """What cpu-tree's walk met at one set of positions: its groups, and each node's particles
    (caller indices) for the cells' masses and centres of mass."""

    groups: tuple[Group, ...]
    members: tuple[np.ndarray, ...]


def tree_lists(pos, mass, *, theta: float, leaf_capacity: int, group_capacity: int,
               precision: str = "f64", threads: int = 0) -> TreeLists:
    """The lists of cpu-tree's walk (monopole cells) at ``pos``, ``mass``: the tree built by
    the native build in ``precision``, walked by the rules of ``native/tree_walk.cpp``."""
    build = _native.build_tree_f32 if precision == "f32" else _native.build_tree_f64
    dtype = np.float32 if precision == "f32" else np.float64
    tree = build(np.ascontiguousarray(pos, dtype), np.ascontiguousarray(mass, dtype),
                 leaf_capacity, False, theta, threads)
    nodes, order = tree["nodes"], np.asarray(tree["order"], np.int64)
    first, count, skip = (nodes[f].astype(np.int64) for f in ("first", "count", "skip"))
    members = tuple(order[f:f + c] for f, c in zip(first, count))
    sorted_pos = np.asarray(pos, dtype)[order]
    groups = []
    node = 0
    while node < len(nodes):
        # A group: the first node in depth-first order within capacity, or a leaf over it.
        if count[node] <= group_capacity or skip[node] == node + 1:
            groups.append(_walk(nodes, first, count, skip, node, order, sorted_pos))
            node = skip[node]
        else:
            node += 1
    return TreeLists(tuple(groups), members)


def _walk(nodes, first, count, skip, own: int, order, sorted_pos) -> Group:
    targets = sorted_pos[first[own]:first[own] + count[own]]
    low, high = targets.min(axis=0), targets.max(axis=0)
    com, open2 = nodes["com"], nodes["open2"]
    particles, cells = [], []
    node = 0
    while node < len(nodes):
        if node == own:
            node = skip[node]
            continue
        gap = np.maximum(np.maximum(low - com[node], com[node] - high), 0)
        # Summed in the walk's order and precision, so that a borderline cell goes its way.
        if gap[0] * gap[0] + gap[1] * gap[1] + gap[2] * gap[2] > open2[node]:
            cells.append(node)
            node = skip[node]
        elif skip[node] == node + 1:
            particles.append(order[first[node]:first[node] + count[node]])
            node += 1
        else:
            node += 1
    return Group(order[first[own]:first[own] + count[own]],
                 np.concatenate(particles) if particles else np.zeros(0, np.int64),
                 np.asarray(cells, np.int64))


def _cells(lists: TreeLists, pos, mass, cells) -> tuple[np.ndarray, np.ndarray]:
    """The cells' masses and centres of mass, from their particles."""
    cell_mass = np.array([mass[lists.members[cell]].sum() for cell in cells])
    moment = np.array([mass[lists.members[cell]] @ pos[lists.members[cell]] for cell in cells])
    return cell_mass, moment.reshape(-1, 3) / cell_mass.reshape(-1, 1)


def _sources(lists: TreeLists, group: Group, pos, mass):
    cell_mass, centre = _cells(lists, pos, mass, group.cells)
    own = len(group.targets)
    return (np.concatenate([pos[group.targets], pos[group.particles], centre]),
            np.concatenate([mass[group.targets], mass[group.particles], cell_mass]), own)


def _pairs(x, y, own: int, eps2: float):
    """d = y_s - x_t, 1/s^(3/2) and 1/s^(5/2), the group's own pairs t == s left out."""
    d = y[None, :, :] - x[:, None, :]
    s = np.einsum("tsc,tsc->ts", d, d) + eps2
    rows = np.arange(own)
    s[rows, rows] = np.inf
    r3 = 1.0 / (s * np.sqrt(s))
    return d, r3, r3 / s


def fixed_tree_accelerations(pos, mass, softening: float, lists: TreeLists) -> np.ndarray:
    """cpu-tree's accelerations over ``lists`` (monopole cells), float64, the cells' masses and
    centres of mass computed from ``pos`` and ``mass``."""
    pos, mass = _float64(pos, mass)
    acc = np.zeros_like(pos)
    for group in lists.groups:
        y, mu, own = _sources(lists, group, pos, mass)
        d, r3, _ = _pairs(pos[group.targets], y, own, float(softening) ** 2)
        acc[group.targets] = np.einsum("ts,tsc->tc", r3 * mu[None, :], d)
    return acc


def tree_vjp(pos, mass, softening: float, acc_bar, lists: TreeLists
             ) -> tuple[np.ndarray, np.ndarray]:
    """``(pos_bar (n, 3), mass_bar (n,))`` of :func:`fixed_tree_accelerations` for the
    cotangent ``acc_bar`` (n, 3) of the accelerations."""
    pos, mass = _float64(pos, mass)
    acc_bar = np.asarray(acc_bar, np.float64)
    if acc_bar.shape != pos.shape:
        raise InvalidInputError(f"acc_bar must have shape {pos.shape}, got {acc_bar.shape}")
    pos_bar, mass_bar = np.zeros_like(pos), np.zeros_like(mass)
    eps2 = float(softening) ** 2
    for group in lists.groups:
        y, mu, own = _sources(lists, group, pos, mass)
        abar = acc_bar[group.targets]
        d, r3, r5 = _pairs(pos[group.targets], y, own, eps2)
        d_dot_abar = np.einsum("tsc,tc->ts", d, abar)
        # T(d) abar_t = abar_t / s^(3/2) - 3 (d . abar_t) d / s^(5/2), T the kernel's gradient.
        tidal = r3[:, :, None] * abar[:, None, :] - 3.0 * (r5 * d_dot_abar)[:, :, None] * d
        source_bar = mu[:, None] * tidal.sum(axis=0)
        source_mass_bar = np.einsum("ts,ts->s", r3, d_dot_abar)
        pos_bar[group.targets] -= np.einsum("s,tsc->tc", mu, tidal)
        listed = np.concatenate([group.targets, group.particles])
        np.add.at(pos_bar, listed, source_bar[:len(listed)])
        np.add.at(mass_bar, listed, source_mass_bar[:len(listed)])
        cell_mass, centre = _cells(lists, pos, mass, group.cells)
        for cell, centre_bar, cell_mass_bar, total, at in zip(
                group.cells, source_bar[len(listed):], source_mass_bar[len(listed):],
                cell_mass, centre):
            members = lists.members[cell]
            pos_bar[members] += (mass[members] / total)[:, None] * centre_bar
            mass_bar[members] += cell_mass_bar + (pos[members] - at) @ centre_bar / total
    return pos_bar, mass_bar


def _float64(pos, mass) -> tuple[np.ndarray, np.ndarray]:
    pos, mass = np.asarray(pos, np.float64), np.asarray(mass, np.float64)
    if not (mass > 0).all():
        raise InvalidInputError("cpu-tree's VJP needs positive masses: a cell of no mass has "
                                "no centre of mass to differentiate")
    return pos, mass
