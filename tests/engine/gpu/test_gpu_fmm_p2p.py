"""gpu-fmm's P2P kernel (fmm.cl's p2p) for each work-group size, targets a work-item and batch
rule the host may choose: leaves of 1, a few, one less than a batch, exactly a batch, one more,
and many more (coincident) bodies sum exactly their pairs, against a float64 NumPy sum of the
same pairs, with the same bits run to run; with the potential (the body itself masked) and
without (the body itself adds exact zeros). The same kernel built as the VJP's (P2P_VJP) sums
exactly the pairs' cotangents, against cpu-direct's float64 VJP."""

import numpy as np
import pytest

from orrery.engine import make_solver
from orrery.engine.force_vjp import force_vjp
from orrery.engine.solvers import gpu_fmm

from ..differences import relative_error

SOFTENING = 0.01
# float32 pair sums against float64: each of a body's ~2000 terms is rounded a few times and
# RSQRT is approximate (CUDA: 2 ulp), so the error stays below ~1e-6 of the sum of the terms'
# magnitudes; one missing or doubled pair would be ~1/N = 5e-4 of it.
PAIR_ROUNDING = 1e-5


def _clusters(batch: int, ball: int, rng) -> tuple[np.ndarray, list[int]]:
    """A uniform ball of `ball` bodies (1500: leaves of every size, lists longer than a window of
    a group's runs; 0: lists shorter than one) and, at the corners of the root cube, clusters of
    the sizes to test, each one leaf: tiny ones, and one of coincident bodies far above the leaf
    capacity (`batch` + 1, batch: the targets of a work-group at once)."""
    sizes = [1, 2, 5, 19, batch - 1, batch, batch + 1, 3 * batch + 7]
    ball = rng.uniform(-1, 1, (ball, 3))
    corners = [np.array([x, y, z]) for x in (-4, 4) for y in (-4, 4) for z in (-4, 4)]
    parts = [ball]
    for size, corner in zip(sizes, corners):
        spread = 0 if size > batch + 1 else 1e-3
        parts.append(corner + rng.uniform(-spread, spread, (size, 3)))
    return np.concatenate(parts), sizes


def _pair_sums(pos: np.ndarray, mass: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Softened pairwise accelerations and potentials in float64 over every j != i, with the
    sums of the terms' magnitudes (the rounding scale)."""
    d = pos[None, :, :] - pos[:, None, :]
    r2 = np.einsum("ijk,ijk->ij", d, d) + SOFTENING ** 2
    inv_r = 1 / np.sqrt(r2)
    np.fill_diagonal(inv_r, 0)
    w = mass[None, :] * inv_r ** 3
    acc = np.einsum("ij,ijk->ik", w, d)
    acc_scale = np.einsum("ij,ijk->ik", w, np.abs(d))
    phi = -(mass[None, :] * inv_r).sum(1)
    return acc, phi, acc_scale, -phi


# split cost None: one batch for the rest of a leaf; 0: two wherever that takes fewer sums;
# most parts: lanes a target at most (None: the group's)
@pytest.mark.parametrize("group, targets, split_cost, most_parts",
                         [(32, 1, None, None), (32, 2, 0, None), (64, 1, None, None), (64, 2, 0, None),
                          (64, 2, None, None), (32, 1, 0, 3), (32, 2, None, 1)])
@pytest.mark.parametrize("ball", [1500, 0])
def test_p2p_sums_exactly_the_lists_pairs_for_every_leaf_size(device, monkeypatch, group, targets, split_cost,
                                                              most_parts, ball):
    monkeypatch.setattr(gpu_fmm, "P2P_GROUP", group)
    monkeypatch.setattr(gpu_fmm, "P2P_TARGETS", targets)
    monkeypatch.setattr(gpu_fmm, "P2P_SPLIT_COST", split_cost)
    monkeypatch.setattr(gpu_fmm, "P2P_MOST_PARTS", most_parts)
    batch = group * targets
    pos, sizes = _clusters(batch, ball, np.random.default_rng(31))
    mass = np.random.default_rng(32).uniform(0.5, 1.5, len(pos)) / len(pos)
    # theta 0 opens every pair of cells: the whole sum is P2P, and the far field adds zeros.
    gpu = make_solver("gpu-fmm", device=device, theta=0.0, order=1, softening=SOFTENING,
                      leaf_capacity=batch + 1)
    acc, phi = gpu.accelerations(pos, mass, potential=True)
    assert gpu.last_stats["m2l_interactions"] == 0
    tree = gpu.last_tree()
    nodes = tree.node_records(gpu.dtype)
    leaf_counts = nodes["count"][nodes["skip"] == np.arange(1, tree.node_count + 1)]
    assert set(sizes) <= set(leaf_counts.tolist())
    # the float32 bodies the device sums over, in float64
    exact_acc, exact_phi, acc_scale, phi_scale = _pair_sums(*(a.astype(np.float32).astype(np.float64)
                                                              for a in (pos, mass)))
    assert np.all(np.abs(acc - exact_acc) <= PAIR_ROUNDING * acc_scale)
    assert np.all(np.abs(phi - exact_phi) <= PAIR_ROUNDING * phi_scale)
    again_acc, again_phi = gpu.accelerations(pos, mass, potential=True)
    assert np.array_equal(acc, again_acc) and np.array_equal(phi, again_phi)
    # without the potential the body itself is not masked: its d = 0 adds exact zeros
    alone = gpu.accelerations(pos, mass)
    assert np.all(np.abs(alone - exact_acc) <= PAIR_ROUNDING * acc_scale)
    assert np.array_equal(alone, gpu.accelerations(pos, mass))


@pytest.mark.parametrize("group, targets, split_cost, most_parts",
                         [(32, 1, None, None), (32, 2, 0, None), (64, 2, None, None), (32, 1, 0, 3)])
@pytest.mark.parametrize("potential", [False, True])
def test_the_vjp_build_sums_exactly_the_lists_pairs_for_every_leaf_size(device, monkeypatch, group, targets,
                                                                       split_cost, most_parts, potential):
    monkeypatch.setattr(gpu_fmm, "P2P_GROUP", group)
    monkeypatch.setattr(gpu_fmm, "P2P_TARGETS", targets)
    monkeypatch.setattr(gpu_fmm, "P2P_SPLIT_COST", split_cost)
    monkeypatch.setattr(gpu_fmm, "P2P_MOST_PARTS", most_parts)
    batch = group * targets
    pos, sizes = _clusters(batch, 1500, np.random.default_rng(33))
    rng = np.random.default_rng(34)
    mass = rng.uniform(0.5, 1.5, len(pos)) / len(pos)
    acc_bar = rng.normal(size=pos.shape)
    pot_bar = rng.normal(size=len(pos)) if potential else None
    # theta 0: every pair is P2P, so the VJP is the direct sum's (the far field adds zeros)
    gpu = make_solver("gpu-fmm", device=device, theta=0.0, order=1, softening=SOFTENING,
                      leaf_capacity=batch + 1)
    values = [None if a is None else a.astype(np.float32).astype(np.float64) for a in (pos, mass, acc_bar, pot_bar)]
    got = force_vjp(gpu, *values)
    tree = gpu.last_tree()
    nodes = tree.node_records(gpu.dtype)
    leaf_counts = nodes["count"][nodes["skip"] == np.arange(1, tree.node_count + 1)]
    assert set(sizes) <= set(leaf_counts.tolist())
    expected = force_vjp(make_solver("cpu-direct", precision="f64", softening=SOFTENING), *values)
    for a, b in zip(got, expected):
        assert relative_error(a, b) < PAIR_ROUNDING
    again = force_vjp(gpu, *values)
    assert all(np.array_equal(a, b) for a, b in zip(got, again))
