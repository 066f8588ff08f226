"""Exclusive prefix sums of ``uint32`` counts on a compute device (``scan.cl``): a primitive of
the compute layer, the building block of the radix sort and of the parallel tree build."""

from __future__ import annotations

import numpy as np

from ._types import Context, DeviceArray, KernelEvent, ceil_div

# Work-group size of every launch (a power of two) and the consecutive entries each work-item
# owns: a work-group scans tiles of SCAN_GROUP * SCAN_ITEM entries.
SCAN_GROUP = 256
SCAN_ITEM = 4


class DeviceScan:
    """``scan(values, count, out)``: ``out[i] = sum(values[:i])`` for ``i <= count`` (``out`` has
    at least ``count + 1`` entries; ``out`` may be ``values``)."""

    def __init__(self, context: Context):
        self.context = context
        program = context.build(["scan.cl"], package=__package__, defines={"SCAN_GROUP": SCAN_GROUP,
                                                      "SCAN_ITEM": SCAN_ITEM})
        self._tile_totals = program.kernel("scan_tile_totals")
        self._totals = program.kernel("scan_totals")
        self._apply = program.kernel("scan_apply")
        self._scratch: DeviceArray | None = None

    def scan(self, values: DeviceArray, count: int, out: DeviceArray) -> list[KernelEvent]:
        tiles = max(1, ceil_div(count, SCAN_GROUP * SCAN_ITEM))
        if self._scratch is None or self._scratch.size < tiles + 1:
            self._scratch = self.context.empty(tiles + 1, np.uint32, "temporaries.scan")
        totals = self._scratch
        width = tiles * SCAN_GROUP
        return [
            self._tile_totals.launch(width, SCAN_GROUP, values, np.int32(count), totals),
            self._totals.launch(SCAN_GROUP, SCAN_GROUP, totals, np.int32(tiles)),
            self._apply.launch(width, SCAN_GROUP, values, np.int32(count), totals, np.int32(tiles),
                               out),
        ]
