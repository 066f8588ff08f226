"""The flocking step in NumPy, written for clarity: the yardstick the native and device
implementations are tested against (all of them agree with it bit for bit, see
docs/flocking.md).

One step, for every boid i, over every other boid j (numbered steps as the kernels do them):

1. Offset ``d = p_j - p_i`` in float32, moved to the nearest periodic image (add or subtract
   the world once); ``r2 = (dx*dx + dy*dy) + dz*dz`` in float32. Positions lie on a grid of
   ``quantum``, so ``d`` is exact.
2. Within the separation radius sum ``d``; within the cohesion radius sum ``d`` and count;
   within the alignment radius sum ``v_j`` and count. Sums are float64 and exact (every term is
   a multiple of a quantum far above float64's resolution), so their order does not matter.
3. Steering (float64): ``a = -(w_s * S_sep) + w_c * (S_coh / n_c) + w_a * (S_ali / n_a - v_i)``,
   a term dropped when its count is zero; ``v = v_i + dt * a``; if ``|v|^2 > v_max^2`` then
   ``v = v * (v_max / sqrt(|v|^2))``; ``v`` rounded to the velocity quantum.
4. ``p = p_i + dt * v`` (float64), wrapped once into ``[0, world)``, rounded to the quantum and
   wrapped again if it rounded up to ``world``. Both are then float32 exactly.
"""

from __future__ import annotations

import numpy as np

# Rows of the (rows, n) pair tables computed at a time: about 50 MB of temporaries at n = 5000.
_ROWS = 512


def step(pos: np.ndarray, vel: np.ndarray, constants: dict) -> tuple[np.ndarray, np.ndarray]:
    """One step from float32 ``pos``/``vel`` (n, 3); returns new float32 arrays."""
    c = constants
    pos = np.asarray(pos, np.float32)
    vel = np.asarray(vel, np.float32)
    n = len(pos)
    world, half = np.float32(c["world"]), np.float32(c["half_world"])
    radii2 = {name: np.float32(c[f"{name}_radius2"]) for name in ("separation", "alignment",
                                                                    "cohesion")}
    sums = {name: np.zeros((n, 3)) for name in radii2}
    counts = {name: np.zeros(n, np.int64) for name in radii2}
    for begin in range(0, n, _ROWS):
        rows = slice(begin, min(n, begin + _ROWS))
        d = pos[None, :, :] - pos[rows, None, :]
        d = np.where(d > half, d - world, d)
        d = np.where(d < -half, d + world, d)
        r2 = (d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2]
        not_self = np.ones(r2.shape, bool)
        not_self[np.arange(r2.shape[0]), np.arange(begin, rows.stop)] = False
        for name, limit in radii2.items():
            inside = (r2 < limit) & not_self
            counts[name][rows] = inside.sum(axis=1)
            terms = vel[None, :, :] if name == "alignment" else d
            sums[name][rows] = np.einsum("ij,ijk->ik", inside.astype(np.float64),
                                         np.broadcast_to(terms, d.shape).astype(np.float64))
    return finish(pos, vel, sums, counts, c)


def finish(pos, vel, sums: dict, counts: dict, c: dict) -> tuple[np.ndarray, np.ndarray]:
    """Steps 3 and 4 from the neighbour sums and counts (float64 (n, 3) and int (n,))."""
    v0 = vel.astype(np.float64)
    a = -(c["separation_weight"] * sums["separation"])
    n_c = counts["cohesion"][:, None]
    a = np.where(n_c > 0, a + c["cohesion_weight"] * (sums["cohesion"] / np.maximum(n_c, 1)), a)
    n_a = counts["alignment"][:, None]
    a = np.where(n_a > 0, a + c["alignment_weight"] * (sums["alignment"] / np.maximum(n_a, 1) - v0),
                 a)
    v = v0 + c["dt"] * a
    s2 = (v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1]) + v[:, 2] * v[:, 2]
    fast = s2 > c["max_speed"] * c["max_speed"]
    v[fast] = v[fast] * (c["max_speed"] / np.sqrt(s2[fast]))[:, None]
    v = quantise(v, c["velocity_quantum"]).astype(np.float32)
    p = pos.astype(np.float64) + c["dt"] * v.astype(np.float64)
    return wrap(p, c), v


def quantise(values: np.ndarray, quantum: float) -> np.ndarray:
    """Round to the nearest multiple of ``quantum`` (a power of two: both products are exact)."""
    return np.rint(values * (1.0 / quantum)) * quantum


def wrap(p: np.ndarray, c: dict) -> np.ndarray:
    """Float64 positions at most one world outside the box -> float32 on the quantum grid."""
    world = c["world"]
    p = np.where(p < 0, p + world, p)
    p = np.where(p >= world, p - world, p)
    p = quantise(p, c["quantum"])
    return np.where(p >= world, p - world, p).astype(np.float32)
