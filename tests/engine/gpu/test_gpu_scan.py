"""The compute layer's prefix sum (DeviceScan, scan.cl) against NumPy on every backend: tile
edges, a partial last tile, more tiles than the totals' work-group has work-items, in place."""

import numpy as np
import pytest

from orrery.engine.compute import DeviceScan
from orrery.engine.compute._scan import SCAN_GROUP, SCAN_ITEM

TILE = SCAN_GROUP * SCAN_ITEM


@pytest.mark.parametrize("count", [0, 1, TILE - 1, TILE, TILE + 1, 300 * TILE + 17])
def test_scan_gives_the_exclusive_prefix_sum_and_the_total(context, count):
    rng = np.random.default_rng(count)
    values = rng.integers(0, 1000, count + 1).astype(np.uint32)
    expected = np.concatenate([[0], np.cumsum(values[:count], dtype=np.uint64)]).astype(np.uint32)
    scan = DeviceScan(context)
    source = context.upload(values)
    out = context.upload(np.full(count + 1, 7, np.uint32))
    scan.scan(source, count, out)
    np.testing.assert_array_equal(out.download(), expected)
    np.testing.assert_array_equal(source.download(), values)  # not written
    scan.scan(source, count, source)  # in place
    np.testing.assert_array_equal(source.download(), expected)
