"""gpu-fmm's per-target lists (fmm_lists.cl through DeviceLists) on every backend: the arrays of a
(target, source) sort, whatever order the pairs come in and the atomics serve them, including
segments longer than the kernel's local tile."""

import numpy as np
import pytest

from orrery.engine import compute, ics, make_solver
from orrery.engine.compute import DeviceScan
from orrery.engine.solvers._device_fmm_walk import LIST_RANKS, LIST_SLOTS, LIST_TILE, DeviceLists


def _reference(pairs: np.ndarray, node_count: int) -> tuple[np.ndarray, np.ndarray]:
    a, b = (pairs >> np.uint64(32)).astype(np.uint32), (pairs & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    target, source = np.concatenate([a, b]), np.concatenate([b, a])
    order = np.lexsort((source, target))
    start = np.concatenate([[0], np.cumsum(np.bincount(target, minlength=node_count))]).astype(np.uint32)
    return start, source[order]


def _synthetic_pairs(node_count: int, hub_sources: int, random_pairs: int, seed: int) -> np.ndarray:
    """Distinct unordered pairs, no node with itself: node 0 with nodes 1..hub_sources (a segment
    longer than the local tile) and random pairs among the others."""
    rng = np.random.default_rng(seed)
    hub = [(0, s) for s in range(1, hub_sources + 1)]
    a = rng.integers(1, node_count, size=3 * random_pairs)
    b = rng.integers(1, node_count, size=3 * random_pairs)
    low, high = np.minimum(a, b), np.maximum(a, b)
    keys = np.unique(low[low != high].astype(np.uint64) << np.uint64(32) | high[low != high].astype(np.uint64))
    others = rng.permutation(keys)[:random_pairs]
    pairs = np.concatenate([np.array([(x << 32) | y for x, y in hub], np.uint64), others])
    # Either direction may come first in a pair, as the walk emits them.
    flip = rng.random(pairs.size) < 0.5
    pairs[flip] = (pairs[flip] << np.uint64(32)) | (pairs[flip] >> np.uint64(32))
    return rng.permutation(pairs)


def _built(context, lists, pairs: np.ndarray, node_count: int, *, spare: int = 0):
    """The lists of ``pairs`` from an array with ``spare`` slots past them, as the walk's."""
    stored = np.concatenate([pairs, np.full(spare, ~np.uint64(0))]) if spare else pairs
    totals = context.upload(np.array([7, pairs.size], np.uint32))  # the count at index 1
    stored = context.upload(stored if stored.size else np.zeros(1, np.uint64))
    unsorted = context.empty(stored.size, np.uint64)
    start, source = lists.build("m2l", stored, totals, 1, node_count, unsorted, [])
    assert source is stored  # the lists take the pairs' memory
    return start.download()[:node_count + 1], source.download().view(np.uint32)[:2 * pairs.size]


def test_device_lists_equal_a_lexsort_with_segments_past_the_local_tile(device):
    context = compute.open_device(device)
    lists = DeviceLists(context, DeviceScan(context))
    node_count, hub = 3000, 2 * LIST_TILE + 300
    assert hub > lists.group * LIST_RANKS  # the hub's entries take several ranking passes too
    pairs = _synthetic_pairs(node_count, hub, random_pairs=20000, seed=41)
    expected_start, expected_source = _reference(pairs, node_count)
    start, source = _built(context, lists, pairs, node_count)
    assert np.diff(expected_start).max() == hub
    assert np.array_equal(start, expected_start)
    assert np.array_equal(source, expected_source)
    # The arrays depend only on the set of pairs: again, and with the pairs in another order,
    # in an array with room to spare past them (the count on the device decides).
    again_start, again_source = _built(context, lists, np.random.default_rng(42).permutation(pairs), node_count,
                                       spare=1000)
    assert np.array_equal(again_start, start) and np.array_equal(again_source, source)


def test_device_lists_sort_every_network_size_and_the_ranked_lengths_past_it(device):
    """Segments of every length around the network's sizes (powers of two from the sub-group's
    to LIST_SLOTS per work-item) and just past its largest, where ranking takes over."""
    context = compute.open_device(device)
    lists = DeviceLists(context, DeviceScan(context))
    largest = lists.group * LIST_SLOTS
    lengths = sorted({max(1, w + d) for w in (1, 2, lists.group // 2) + tuple(
        lists.group << s for s in range(LIST_SLOTS.bit_length())) for d in (-1, 0, 1)} | {largest + 1})
    assert lengths[-1] > largest and largest in lengths
    rng = np.random.default_rng(7)
    hubs, node_count = len(lengths), 4 * largest
    # hub h with `lengths[h]` distinct sources among the nodes past the hubs: no pair twice
    pairs = np.concatenate([np.uint64(h) << np.uint64(32) | rng.choice(np.arange(hubs, node_count), n, replace=False)
                            .astype(np.uint64) for h, n in enumerate(lengths)])
    pairs = rng.permutation(pairs)
    expected_start, expected_source = _reference(pairs, node_count)
    start, source = _built(context, lists, pairs, node_count)
    assert np.array_equal(np.diff(start)[:hubs], lengths)
    assert np.array_equal(start, expected_start) and np.array_equal(source, expected_source)


def test_device_lists_of_no_pairs_are_empty(device):
    context = compute.open_device(device)
    lists = DeviceLists(context, DeviceScan(context))
    _built(context, lists, _synthetic_pairs(50, 10, 100, seed=43), 50)  # arrays with stale contents
    start, source = _built(context, lists, np.zeros(0, np.uint64), 50)
    assert np.array_equal(start, np.zeros(51, np.uint32)) and source.size == 0


def test_gpu_fmm_lists_with_a_segment_past_the_local_tile_equal_cpu_fmms(device):
    # theta 0: every leaf pairs with every other, so each P2P list holds all the other leaves.
    particles = ics.plummer(3000, seed=31)
    options = {"precision": "f32", "softening": 0.01, "order": 2, "theta": 0.0, "leaf_capacity": 4}
    cpu, gpu = make_solver("cpu-fmm", **options), make_solver("gpu-fmm", device=device, **options)
    cpu.accelerations(particles.pos, particles.mass)
    gpu.accelerations(particles.pos, particles.mass)
    host, lists = cpu.last_lists(), gpu.last_lists()
    assert np.diff(lists["p2p_start"]).max() > LIST_TILE
    for name in ("m2l_start", "m2l_source", "p2p_start", "p2p_source"):
        assert np.array_equal(lists[name], host[name]), name
