"""Locally essential sources: what one rank's particles contribute to another rank's domain.

The sender's particles are sorted by Morton key in the global bounding cube, so every cell of
the octree is a contiguous run of keys. Walking down from the root, one level at a time for all
open cells at once:

1. a cell whose centre of mass is far enough from the receiver's domain, ``d > side / theta +
   |com - centre|`` (cpu-tree's opening test, with d the distance from the centre of mass to the
   nearest point of the domain), goes as one pseudo-particle: its mass at its centre of mass;
2. a cell with at most ``leaf_capacity`` particles that must be opened goes as its particles;
3. any other cell is split into its (up to) eight children.

The receiver's domain is described by the bounding boxes of its particles in octree cells split
until each holds at most 1/128 of them (:func:`domain_boxes`): compact pieces of space, where
one box around them all would reach across the gaps and make every cell look near. The receiver adds these sources to its
own particles. Every cell is opened against the whole receiving domain, so the far field is never
coarser than the receiver's own tree walk would make it.
"""

from __future__ import annotations

import numpy as np

KEY_BITS = 21  # per axis: 63-bit keys
# A rank's domain is described by octree cells holding at most this fraction of its particles.
DOMAIN_PIECES = 128


def morton_keys(pos: np.ndarray, low: np.ndarray, side: float) -> np.ndarray:
    """63-bit Morton keys of ``pos`` in the cube [low, low + side)."""
    cells = (1 << KEY_BITS)
    scaled = np.clip(((pos - low) / side * cells).astype(np.int64), 0, cells - 1).astype(np.uint64)
    return _spread(scaled[:, 0]) << np.uint64(2) | _spread(scaled[:, 1]) << np.uint64(1) \
        | _spread(scaled[:, 2])


def _spread(x: np.ndarray) -> np.ndarray:
    """Put the 21 bits of x two zero bits apart."""
    x = x & np.uint64(0x1FFFFF)
    x = (x | x << np.uint64(32)) & np.uint64(0x1F00000000FFFF)
    x = (x | x << np.uint64(16)) & np.uint64(0x1F0000FF0000FF)
    x = (x | x << np.uint64(8)) & np.uint64(0x100F00F00F00F00F)
    x = (x | x << np.uint64(4)) & np.uint64(0x10C30C30C30C30C3)
    x = (x | x << np.uint64(2)) & np.uint64(0x1249249249249249)
    return x


def domain_boxes(pos: np.ndarray, low: np.ndarray, side: float,
                 pieces: int = DOMAIN_PIECES) -> np.ndarray:
    """(B, 2, 3) lower and upper corners of the particles in octree cells of the cube [low,
    low + side), each split until it holds at most 1/``pieces`` of ``pos`` (no particles: one
    empty box at infinity, which nothing is near)."""
    if len(pos) == 0:
        return np.full((1, 2, 3), np.inf)
    keys = morton_keys(pos.astype(np.float64), low, side)
    order = np.argsort(keys, kind="stable")
    keys, ordered = keys[order], pos[order].astype(np.float64)
    limit = max(len(keys) // pieces, 1)
    starts, ends, prefixes = np.array([0]), np.array([len(keys)]), np.array([0], np.uint64)
    done_starts, done_ends = [], []
    for level in range(KEY_BITS):
        small = (ends - starts) <= limit
        done_starts.append(starts[small])
        done_ends.append(ends[small])
        if small.all():
            break
        starts, ends, prefixes = _children(keys, starts[~small], ends[~small], prefixes[~small],
                                           level)
    else:
        done_starts.append(starts)
        done_ends.append(ends)
    starts, ends = np.concatenate(done_starts), np.concatenate(done_ends)
    lower = np.array([ordered[a:b].min(axis=0) for a, b in zip(starts, ends)])
    upper = np.array([ordered[a:b].max(axis=0) for a, b in zip(starts, ends)])
    return np.stack([lower, upper], axis=1)


def essential_sources(pos: np.ndarray, mass: np.ndarray, boxes: np.ndarray, *,
                      low: np.ndarray, side: float, theta: float,
                      leaf_capacity: int = 16) -> tuple[np.ndarray, np.ndarray]:
    """Positions and masses that stand for ``pos``/``mass`` in the field inside the receiver's
    domain (``boxes``: (B, 2, 3) lower and upper corners), walking the octree of the cube
    [low, low + side)."""
    if len(pos) == 0:
        return pos[:0], mass[:0]
    keys = morton_keys(pos, low, side)
    order = np.argsort(keys, kind="stable")
    keys, pos64, mass64 = keys[order], pos[order].astype(np.float64), mass[order].astype(np.float64)
    # prefix sums give every cell's mass and first moment in O(1)
    cumulative_mass = np.concatenate([[0.0], np.cumsum(mass64)])
    cumulative_moment = np.vstack([np.zeros(3), np.cumsum(pos64 * mass64[:, None], axis=0)])
    boxes = np.asarray(boxes, dtype=np.float64)

    out_pos, out_mass = [], []
    starts, ends, prefixes = np.array([0]), np.array([len(keys)]), np.array([0], np.uint64)
    for level in range(KEY_BITS + 1):
        if len(starts) == 0:
            break
        cell_mass = cumulative_mass[ends] - cumulative_mass[starts]
        with np.errstate(invalid="ignore", divide="ignore"):
            com = (cumulative_moment[ends] - cumulative_moment[starts]) / cell_mass[:, None]
        cell_side = side / (1 << level)
        centre = _cell_corner(prefixes, level, low, side) + 0.5 * cell_side
        distance = _distance_to_boxes(com, boxes)
        offset = np.linalg.norm(com - centre, axis=1)
        far = (cell_mass > 0) & (distance > cell_side / theta + offset)
        out_pos.append(com[far])
        out_mass.append(cell_mass[far])
        near = ~far
        small = near & ((ends - starts) <= leaf_capacity)
        if level == KEY_BITS:  # cells of one key: send what is left as particles
            small = near
        for s, e in zip(starts[small], ends[small]):
            out_pos.append(pos64[s:e])
            out_mass.append(mass64[s:e])
        split = near & ~small
        if not split.any():
            break
        starts, ends, prefixes = _children(keys, starts[split], ends[split], prefixes[split],
                                           level)
    return (np.concatenate(out_pos).astype(pos.dtype), np.concatenate(out_mass).astype(mass.dtype))


def _distance_to_boxes(points: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Distance from each point to the nearest of the boxes."""
    nearest = np.clip(points[:, None, :], boxes[None, :, 0], boxes[None, :, 1])
    return np.sqrt(((points[:, None, :] - nearest) ** 2).sum(axis=2)).min(axis=1)


def _cell_corner(prefixes: np.ndarray, level: int, low: np.ndarray, side: float) -> np.ndarray:
    """Lower corners of the cells at ``level`` with these key prefixes."""
    ix = np.zeros(len(prefixes), np.int64)
    iy, iz = ix.copy(), ix.copy()
    for bit in range(level):
        triple = (prefixes >> np.uint64(3 * (level - 1 - bit))) & np.uint64(7)
        ix = ix << 1 | ((triple >> np.uint64(2)) & np.uint64(1)).astype(np.int64)
        iy = iy << 1 | ((triple >> np.uint64(1)) & np.uint64(1)).astype(np.int64)
        iz = iz << 1 | (triple & np.uint64(1)).astype(np.int64)
    return low + np.column_stack([ix, iy, iz]) * (side / (1 << level))


def _children(keys, starts, ends, prefixes, level):
    """The non-empty children of cells one level down. Keys are sorted, so a child's run is
    found by searching the whole array: it lies inside its parent's run."""
    shift = np.uint64(3 * (KEY_BITS - level - 1))
    child = (prefixes[:, None] << np.uint64(3)) | np.arange(8, dtype=np.uint64)[None, :]
    lo = np.searchsorted(keys, (child << shift).ravel())
    hi = np.searchsorted(keys, ((child + np.uint64(1)) << shift).ravel())
    keep = hi > lo
    return lo[keep], hi[keep], child.ravel()[keep]
