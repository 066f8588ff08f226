"""The VJP of the FMMs' evaluation with its tree and lists held fixed, float64, on the host.

cpu-fmm (``native/fmm.cpp``, the algebra in ``native/fmm_expansions.hpp``) evaluates, for
expansion order p and multi-indices k, n with ``t_n(v) = v^n / n!``:

    P2M   M_n(leaf)    = sum_j m_j t_n(x_j - z_leaf)
    M2M   M_s(parent) += sum_{k+n=s} M_k(child) t_n(z_child - z_parent)
    M2L   L_k(target) += sum_{|k|+|n|<=p} D_{k+n}(z_target - z_source) (-1)^|n| M_n(source)
    L2L   L_k(child)  += sum_n L_{k+n}(parent) t_n(z_child - z_parent)
    L2P   a(x) = sum_{|k|<p} L_{k+e_i}(leaf) t_k(x - z_leaf),  phi(x) = -sum_k L_k t_k(x - z_leaf)
    P2P   the softened direct sum over the leaf's other particles and its P2P leaves' particles

with ``D_m = d^m (1/r)``, ``r^2 = |R|^2 + eps^2``; gpu-fmm evaluates the same lists and algebra
on its device (``engine/solvers/kernels/fmm.cl``), and its VJP there
(``engine/solvers/kernels/fmm_vjp.cl``) is this module's, stage for stage. The expansion centres are the nodes' key
boxes' centres: ``z = lo + g side / 2^22``, where ``g`` (twice the box centre in finest Morton
cells) is an integer fixed with the keys, and ``lo`` (the particles' smallest coordinate on
each axis) and ``side`` (the largest extent over the axes) are the bounding cube's. With the
keys, the tree and the lists fixed (decided once, at the evaluated positions), the evaluation
is a smooth function of positions and masses: the centres move with the cube's extreme
particles, and this module's VJP carries the chain rule through them too. Heavy nodes
(``heavy_share``) change which lists the walk makes, not this algebra.

The reverse pass takes each stage back: L2P, L2L (the transposed shift is M2M's form), M2L
(its matrix ``D_{k+n}`` is symmetric, so the transposed contraction is M2L's own), M2M (the
transposed shift is L2L's form), P2M, P2P, and the offsets of every stage back to the centres,
which the cube's ``lo`` and ``side`` take back to the extreme particles:

    dL/dlo_a = sum_nodes dL/dz_a,    dL/dside = sum_nodes dL/dz . g / 2^22

:func:`fmm_lists` takes the lists from cpu-fmm's own evaluation (the native engine) and the
leaves' particles from the native tree build (the same tree, ADR-0010), through
:func:`evaluated_lists`, which the tests also give gpu-fmm's lists, downloaded from its device,
to hold its device VJP to this one.
:func:`fixed_fmm_forces` evaluates them in numpy (the tests' check that they are what the
solver evaluated, and the function whose differences the VJP is checked against);
:func:`fmm_vjp` is its VJP, for the accelerations' cotangents and optionally the potentials'.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .. import _native
from .errors import InvalidInputError

# native morton.hpp's kMortonLevels: a node's centre is lo + (g / 2) side / 2^KEY_LEVELS.
KEY_LEVELS = 21
# Elements of a block's pair products (M2L pairs times term pairs): 16 MiB of float64.
_BLOCK = 1 << 21


@dataclass(frozen=True)
class FmmLists:
    """What an FMM evaluated at one set of positions, as caller indices (particles) and node
    indices: the tree, its lists and the cube's geometry that places the centres."""

    order: int
    leaf_of: np.ndarray        # (n,) each particle's leaf
    leaves: np.ndarray         # leaf nodes
    members: tuple[np.ndarray, ...]  # each leaf's particles (as leaves)
    near: tuple[np.ndarray, ...]     # the particles of each leaf's P2P leaves (as leaves)
    parent: np.ndarray         # each node's parent (the root's is itself)
    levels: tuple[np.ndarray, ...]   # the nodes of each tree depth, the root's first
    m2l_target: np.ndarray     # M2L pairs, each direction: target node
    m2l_source: np.ndarray     # and source node
    offset: np.ndarray         # (nodes, 3): g / 2^22, so that z = lo + offset * side
    low_index: np.ndarray      # (3,) the particle at the cube's lo on each axis
    side_axis: int             # the axis of the cube's side, -1 where it is fixed (one point)
    high_index: int            # the particle at the high end of that axis


def fmm_lists(pos, mass, *, theta: float, order: int, leaf_capacity: int,
              heavy_share: float = 0.0, precision: str = "f64", threads: int = 0) -> FmmLists:
    """The tree and lists cpu-fmm evaluates at ``pos``, ``mass`` with these settings, from its
    own native engine (one evaluation) in ``precision``."""
    dtype = np.float32 if precision == "f32" else np.float64
    pos = np.ascontiguousarray(pos, dtype)
    mass = np.ascontiguousarray(mass, dtype)
    engine = _native.FmmF32() if precision == "f32" else _native.FmmF64()
    engine.evaluate(pos, mass, 0.0, theta, order, leaf_capacity, threads=threads,
                    heavy_share=heavy_share)
    build = _native.build_tree_f32 if precision == "f32" else _native.build_tree_f64
    tree = build(pos, mass, leaf_capacity, False, theta, threads)
    return evaluated_lists(pos, order, engine.lists, tree["nodes"], tree["order"])


def evaluated_lists(pos, order: int, lists: dict, nodes, sorted_index) -> FmmLists:
    """:class:`FmmLists` of an FMM evaluation at ``pos`` (in the precision it evaluated):
    ``lists`` its lists, parents and centres (``last_lists``' names: ``m2l_start``,
    ``m2l_source``, ``p2p_start``, ``p2p_source``, ``parent``, ``centre``), ``nodes`` its
    tree's records (``first``, ``count``, ``skip``) and ``sorted_index`` the caller's index of
    each body in key order."""
    first, count, skip = (np.asarray(nodes[f], np.int64) for f in ("first", "count", "skip"))
    sorted_index = np.asarray(sorted_index, np.int64)

    def particles(of) -> np.ndarray:
        return np.concatenate([sorted_index[first[node]:first[node] + count[node]]
                               for node in of] + [np.zeros(0, np.int64)])

    leaves = np.flatnonzero(skip == np.arange(1, len(skip) + 1))
    members = tuple(particles([leaf]) for leaf in leaves)
    leaf_of = np.empty(len(pos), np.int64)
    for leaf, own in zip(leaves, members):
        leaf_of[own] = leaf
    p2p_start, p2p_source = (np.asarray(lists[k], np.int64) for k in ("p2p_start", "p2p_source"))
    near = tuple(particles(p2p_source[p2p_start[leaf]:p2p_start[leaf + 1]]) for leaf in leaves)
    parent = np.asarray(lists["parent"], np.int64)
    depth = np.zeros(len(parent), np.int64)
    for node in range(1, len(parent)):  # depth first: a parent comes before its children
        depth[node] = depth[parent[node]] + 1
    m2l_start = np.asarray(lists["m2l_start"], np.int64)
    cube = _Cube.of(np.asarray(pos).astype(np.float64))
    return FmmLists(
        order=order, leaf_of=leaf_of, leaves=leaves, members=members, near=near, parent=parent,
        levels=tuple(np.flatnonzero(depth == d) for d in range(depth.max() + 1)),
        m2l_target=np.repeat(np.arange(len(m2l_start) - 1), np.diff(m2l_start)),
        m2l_source=np.asarray(lists["m2l_source"], np.int64),
        offset=np.rint((lists["centre"] - cube.lo) / cube.side * 2.0 ** (KEY_LEVELS + 1))
        / 2.0 ** (KEY_LEVELS + 1),
        low_index=cube.low_index, side_axis=cube.side_axis, high_index=cube.high_index)


@dataclass(frozen=True)
class _Cube:
    """native morton.cpp's bounding_cube: lo, the largest extent (1 where every particle is at
    one point), and the particles they are taken from."""

    lo: np.ndarray
    side: float
    low_index: np.ndarray
    side_axis: int
    high_index: int

    @classmethod
    def of(cls, pos) -> _Cube:
        low_index = pos.argmin(axis=0)
        high_index = pos.argmax(axis=0)
        lo = pos[low_index, [0, 1, 2]]
        extent = pos[high_index, [0, 1, 2]] - lo
        axis = int(extent.argmax())  # the first of equal extents, as the native loop keeps
        if extent[axis] == 0:
            return cls(lo, 1.0, low_index, -1, 0)
        return cls(lo, float(extent[axis]), low_index, axis, int(high_index[axis]))


def _centres(pos, lists: FmmLists) -> np.ndarray:
    lo = pos[lists.low_index, [0, 1, 2]]
    axis = lists.side_axis
    side = 1.0 if axis < 0 else pos[lists.high_index, axis] - pos[lists.low_index[axis], axis]
    return lo + lists.offset * side


class _Terms:
    """fmm_expansions.hpp's terms of order p (numbered by degree, then descending nx, then
    descending ny, so the first terms(q) are those of degree < q), their pairs (k, n) with
    |k| + |n| <= p, and the index maps of the order p + 1 that the derivative needs."""

    def __init__(self, order: int):
        p = order
        multi = np.array([(nx, ny, d - nx - ny) for d in range(p + 2) for nx in range(d, -1, -1)
                          for ny in range(d - nx, -1, -1)], np.int64)
        index = {tuple(m): q for q, m in enumerate(multi)}
        self.order, self.multi = p, multi
        self.terms, self.gradient, self.hessian = (_term_count(q) for q in (p, p - 1, p - 2))
        self.degree = multi.sum(axis=1)
        self.factorial = np.array([math.prod(math.factorial(c) for c in m) for m in multi],
                                  np.float64)
        unit = np.eye(3, dtype=np.int64)
        # minus[a][q]: the term q - e_a, -1 where absent; minus2: q - 2 e_a; plus[a][q]: q + e_a.
        self.minus = np.array([[index.get(tuple(m - unit[a]), -1) for m in multi]
                               for a in range(3)])
        self.minus2 = np.array([[index.get(tuple(m - 2 * unit[a]), -1) for m in multi]
                                for a in range(3)])
        self.plus = np.array([[index[tuple(m + unit[a])] for m in multi[:self.terms]]
                              for a in range(3)])
        pairs = [(k, n, index[tuple(multi[k] + multi[n])]) for k in range(self.terms)
                 for n in range(self.terms) if self.degree[k] + self.degree[n] <= p]
        self.pair_k, self.pair_n, self.pair_sum = (np.array(c, np.int64) for c in zip(*pairs))
        # Pairs are grouped by k; by_sum groups them by k + n instead.
        self.k_starts = np.searchsorted(self.pair_k, np.arange(self.terms))
        self.by_sum = np.argsort(self.pair_sum, kind="stable")
        self.sum_starts = np.searchsorted(self.pair_sum[self.by_sum], np.arange(self.terms))
        self.sign = np.where(self.degree[:self.terms] % 2, -1.0, 1.0)
        # The L2P Hessian: for |k| < p - 1, the terms k + e_a + e_c.
        self.plus_two = self.plus[:, self.plus[:, :self.hessian]]  # [c][a][k]

    def monomials(self, v) -> np.ndarray:
        """t_n(v) for every term of order p, rows of ``v`` (m, 3)."""
        m = self.multi[:self.terms]
        power = v[:, :, None] ** np.arange(self.order + 1)[None, None, :]
        return (power[:, 0, m[:, 0]] * power[:, 1, m[:, 1]] * power[:, 2, m[:, 2]]
                / self.factorial[:self.terms])

    def derivatives(self, R, eps2: float, terms: int) -> np.ndarray:
        """D_m(R) = d^m (1/r) for the first ``terms`` terms (up to order p + 1), rows of R,
        by fmm_expansions.hpp's recurrence of the Taylor coefficients."""
        inverse_r2 = 1.0 / (np.einsum("pa,pa->p", R, R) + eps2)
        a = np.empty((len(R), terms))
        a[:, 0] = np.sqrt(inverse_r2)
        for q in range(1, terms):
            degree = self.degree[q]
            first = sum(R[:, c] * a[:, self.minus[c, q]] for c in range(3) if self.minus[c, q] >= 0)
            second = sum(a[:, self.minus2[c, q]] for c in range(3) if self.minus2[c, q] >= 0)
            a[:, q] = -((2 * degree - 1) / degree * first
                        + (degree - 1) / degree * second) * inverse_r2
        return a * self.factorial[:terms]

    def contract(self, Y, X) -> np.ndarray:
        """out_k = sum_{|k|+|n|<=p} Y_{k+n} X_n, row by row: L2L (Y the parent's local, X the
        shift's monomials), M2L (Y the derivatives, X the signed multipoles) and their
        transposes."""
        return np.add.reduceat(Y[:, self.pair_sum] * X[:, self.pair_n], self.k_starts, axis=1)

    def spread(self, X, t) -> np.ndarray:
        """out_s = sum_{k+n=s} X_k t_n, row by row: M2M (X the child's multipole) and the
        transpose of L2L."""
        products = (X[:, self.pair_k] * t[:, self.pair_n])[:, self.by_sum]
        return np.add.reduceat(products, self.sum_starts, axis=1)

    def shift_gradient(self, Y, X, t) -> np.ndarray:
        """(m, 3): d/dv of sum_{k+n=s} Y_s X_k t_n(v), the gradient of a shift by v whose
        parent side is Y and child side X (M2M: Y the parent's multipole cotangent, X the
        child's multipole; L2L: Y the parent's local, X the child's local cotangent)."""
        weight = Y[:, self.pair_sum] * X[:, self.pair_k]
        t = np.concatenate([t, np.zeros((len(t), 1))], axis=1)  # t[-1]: the absent term, 0
        return np.stack([np.einsum("mq,mq->m", weight, t[:, self.minus[a][self.pair_n]])
                         for a in range(3)], axis=1)

    def offset_gradient(self, Y, X, D) -> np.ndarray:
        """(m, 3): d/dR of sum_{|k|+|n|<=p} Y_k D_{k+n}(R) X_n (M2L's pairs; D up to order
        p + 1, since d/dR_a D_m = D_{m+e_a})."""
        weight = Y[:, self.pair_k] * X[:, self.pair_n]
        return np.stack([np.einsum("mq,mq->m", weight, D[:, self.plus[a][self.pair_sum]])
                         for a in range(3)], axis=1)


def _term_count(order: int) -> int:
    """fmm_terms: the terms of degree <= order (0 for a negative order)."""
    return (order + 1) * (order + 2) * (order + 3) // 6 if order >= 0 else 0


@functools.lru_cache(maxsize=None)
def _terms(order: int) -> _Terms:
    return _Terms(order)


def _sum_rows(index, rows, size: int) -> np.ndarray:
    """out[i] = the sum of the rows whose index is i (size rows)."""
    out = np.zeros((size, *rows.shape[1:]))
    if len(index):
        order = np.argsort(index, kind="stable")
        present, starts = np.unique(index[order], return_index=True)
        out[present] = np.add.reduceat(rows[order], starts, axis=0)
    return out


def _blocks(count: int, width: int):
    step = max(1, _BLOCK // width)
    return (slice(start, min(count, start + step)) for start in range(0, count, step))


class _FarField:
    """The expansions of one evaluation: the particles' monomials about their leaves' centres,
    the multipoles and the locals (kept for the reverse pass)."""

    def __init__(self, pos, mass, softening: float, lists: FmmLists):
        terms = self.terms = _terms(lists.order)
        self.eps2 = float(softening) ** 2
        self.centre = _centres(pos, lists)
        nodes = len(lists.parent)
        self.t = terms.monomials(pos - self.centre[lists.leaf_of])
        self.multipole = _sum_rows(lists.leaf_of, mass[:, None] * self.t, nodes)
        for level in reversed(lists.levels[1:]):
            parents = lists.parent[level]
            shift = terms.monomials(self.centre[level] - self.centre[parents])
            self.multipole += _sum_rows(parents, terms.spread(self.multipole[level], shift), nodes)
        self.signed = self.multipole * terms.sign
        self.local = np.zeros_like(self.multipole)
        pairs = len(lists.m2l_target)
        for block in _blocks(pairs, len(terms.pair_k)):
            target, source = lists.m2l_target[block], lists.m2l_source[block]
            D = terms.derivatives(self.centre[target] - self.centre[source], self.eps2,
                                  terms.terms)
            self.local += _sum_rows(target, terms.contract(D, self.signed[source]), nodes)
        for level in lists.levels[1:]:
            parents = lists.parent[level]
            shift = terms.monomials(self.centre[level] - self.centre[parents])
            self.local[level] += terms.contract(self.local[parents], shift)
        at = self.local[lists.leaf_of]
        self.acc = np.stack([np.einsum("jk,jk->j", at[:, terms.plus[a, :terms.gradient]],
                                       self.t[:, :terms.gradient]) for a in range(3)], axis=1)
        self.pot = -np.einsum("jk,jk->j", at, self.t)


def _near_pairs(pos, targets, sources, eps2: float):
    """d = x_s - x_t, 1/s^(1/2), 1/s^(3/2), 1/s^(5/2) over a leaf's targets and sources (the
    targets first), the targets' own pairs t == s left out."""
    d = pos[sources][None, :, :] - pos[targets][:, None, :]
    s = np.einsum("tsc,tsc->ts", d, d) + eps2
    rows = np.arange(len(targets))
    s[rows, rows] = np.inf
    inverse = 1.0 / np.sqrt(s)
    r3 = inverse / s
    return d, inverse, r3, r3 / s


def fixed_fmm_forces(pos, mass, softening: float, lists: FmmLists
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(acc (n, 3), pot (n,))``: cpu-fmm's evaluation over ``lists``, float64, the centres
    placed by the cube of ``pos``."""
    pos, mass = _float64(pos, mass)
    far = _FarField(pos, mass, softening, lists)
    acc, pot = far.acc.copy(), far.pot.copy()
    for targets, near in zip(lists.members, lists.near):
        sources = np.concatenate([targets, near])
        d, inverse, r3, _ = _near_pairs(pos, targets, sources, far.eps2)
        acc[targets] += np.einsum("ts,tsc->tc", r3 * mass[sources], d)
        pot[targets] -= inverse @ mass[sources]
    return acc, pot


def fmm_vjp(pos, mass, softening: float, acc_bar, lists: FmmLists,
            pot_bar=None) -> tuple[np.ndarray, np.ndarray]:
    """``(pos_bar (n, 3), mass_bar (n,))`` of :func:`fixed_fmm_forces` for the cotangents
    ``acc_bar`` (n, 3) of the accelerations and ``pot_bar`` (n,) of the potentials (None: 0)."""
    pos, mass = _float64(pos, mass)
    acc_bar = _cotangent(acc_bar, pos.shape, "acc_bar")
    pot_bar = np.zeros(len(mass)) if pot_bar is None else _cotangent(pot_bar, mass.shape,
                                                                      "pot_bar")
    far = _FarField(pos, mass, softening, lists)
    terms, nodes = far.terms, len(lists.parent)
    pos_bar, mass_bar = _near_vjp(pos, mass, far.eps2, acc_bar, pot_bar, lists)
    centre_bar = np.zeros((nodes, 3))
    # L2P: the locals' cotangents; a particle's own offset through the expansion's Hessian.
    local_at = far.local[lists.leaf_of]
    local_bar_at = -pot_bar[:, None] * far.t
    gradient_t = far.t[:, :terms.gradient]
    for a in range(3):
        local_bar_at[:, terms.plus[a, :terms.gradient]] += acc_bar[:, a, None] * gradient_t
    offset_bar = -pot_bar[:, None] * far.acc
    for c in range(3):
        for a in range(3):
            offset_bar[:, c] += acc_bar[:, a] * np.einsum(
                "jk,jk->j", local_at[:, terms.plus_two[c, a]], far.t[:, :terms.hessian])
    local_bar = _sum_rows(lists.leaf_of, local_bar_at, nodes)
    pos_bar += offset_bar
    centre_bar -= _sum_rows(lists.leaf_of, offset_bar, nodes)
    # L2L back, deepest first: the transposed shift is M2M's form.
    for level in reversed(lists.levels[1:]):
        parents = lists.parent[level]
        v = far.centre[level] - far.centre[parents]
        shift = terms.monomials(v)
        local_bar += _sum_rows(parents, terms.spread(local_bar[level], shift), nodes)
        shift_bar = terms.shift_gradient(far.local[parents], local_bar[level], shift)
        centre_bar[level] += shift_bar
        centre_bar -= _sum_rows(parents, shift_bar, nodes)
    # M2L back: D_{k+n} is symmetric in k and n, so the sources' cotangents are M2L's own
    # contraction of the targets' local cotangents.
    signed_bar = np.zeros_like(far.signed)
    for block in _blocks(len(lists.m2l_target), len(terms.pair_k)):
        target, source = lists.m2l_target[block], lists.m2l_source[block]
        D = terms.derivatives(far.centre[target] - far.centre[source], far.eps2,
                              len(terms.multi))
        signed_bar += _sum_rows(source, terms.contract(D, local_bar[target]), nodes)
        offset = terms.offset_gradient(local_bar[target], far.signed[source], D)
        centre_bar += _sum_rows(target, offset, nodes) - _sum_rows(source, offset, nodes)
    multipole_bar = signed_bar * terms.sign
    # M2M back, root side first: the transposed shift is L2L's form.
    for level in lists.levels[1:]:
        parents = lists.parent[level]
        shift = terms.monomials(far.centre[level] - far.centre[parents])
        multipole_bar[level] += terms.contract(multipole_bar[parents], shift)
        shift_bar = terms.shift_gradient(multipole_bar[parents], far.multipole[level], shift)
        centre_bar[level] += shift_bar
        centre_bar -= _sum_rows(parents, shift_bar, nodes)
    # P2M back.
    multipole_bar_at = multipole_bar[lists.leaf_of]
    mass_bar += np.einsum("jk,jk->j", multipole_bar_at, far.t)
    source_bar = mass[:, None] * np.stack(
        [np.einsum("jk,jk->j", multipole_bar_at[:, terms.plus[a, :terms.gradient]],
                   far.t[:, :terms.gradient]) for a in range(3)], axis=1)
    pos_bar += source_bar
    centre_bar -= _sum_rows(lists.leaf_of, source_bar, nodes)
    _cube_back(pos_bar, centre_bar, lists)
    return pos_bar, mass_bar


def _near_vjp(pos, mass, eps2: float, acc_bar, pot_bar, lists: FmmLists):
    """P2P's VJP, leaf by leaf (the softened kernel's, as engine/force_vjp.py states it)."""
    pos_bar, mass_bar = np.zeros_like(pos), np.zeros_like(mass)
    for targets, near in zip(lists.members, lists.near):
        sources = np.concatenate([targets, near])
        d, inverse, r3, r5 = _near_pairs(pos, targets, sources, eps2)
        abar, pbar = acc_bar[targets], pot_bar[targets]
        d_dot_abar = np.einsum("tsc,tc->ts", d, abar)
        # A source's pull on the target, moved by the source: T(d) abar_t + pbar_t d / s^(3/2)
        # = r3 abar_t - weight d; summed over sources for the target, over targets for each source.
        weight = 3.0 * r5 * d_dot_abar - r3 * pbar[:, None]
        mu = mass[sources]
        pos_bar[targets] += (np.einsum("ts,tsc->tc", weight * mu, d)
                             - (r3 @ mu)[:, None] * abar)
        np.add.at(pos_bar, sources,
                  mu[:, None] * (r3.T @ abar - np.einsum("ts,tsc->sc", weight, d)))
        np.add.at(mass_bar, sources, np.einsum("ts,ts->s", r3, d_dot_abar) - pbar @ inverse)
    return pos_bar, mass_bar


def _cube_back(pos_bar, centre_bar, lists: FmmLists) -> None:
    """The centres' cotangents to the cube's extreme particles: z = lo + offset * side."""
    pos_bar[lists.low_index, [0, 1, 2]] += centre_bar.sum(axis=0)
    axis = lists.side_axis
    if axis >= 0:
        side_bar = float(np.einsum("na,na->", centre_bar, lists.offset))
        pos_bar[lists.high_index, axis] += side_bar
        pos_bar[lists.low_index[axis], axis] -= side_bar


def _cotangent(values, shape: tuple, name: str) -> np.ndarray:
    values = np.asarray(values, np.float64)
    if values.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {values.shape}")
    return values


def _float64(pos, mass) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(pos, np.float64), np.asarray(mass, np.float64)
