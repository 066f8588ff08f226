"""Exclusive prefix sums of ``uint32`` counts on a compute device (``scan.cl``): a primitive of
the compute layer, the building block of the radix sort and of the parallel tree build."""

from __future__ import annotations

import numpy as np

from ._types import Context, DeviceArray, KernelEvent, ceil_div, launch_size

# Entries each work-item sums serially, and the one work-group that scans the chunk totals.
SCAN_CHUNK = 32
SCAN_GROUP = 256
# Work-group size of the per-chunk kernels.
CHUNK_GROUP = 64


class DeviceScan:
    """``scan(values, count, out)``: ``out[i] = sum(values[:i])`` for ``i <= count`` (``out`` has
    at least ``count + 1`` entries; ``out`` may be ``values``)."""

    def __init__(self, context: Context):
        self.context = context
        program = context.build(["scan.cl"], defines={"SCAN_CHUNK": SCAN_CHUNK,
                                                      "SCAN_GROUP": SCAN_GROUP})
        self._chunk_totals = program.kernel("scan_chunk_totals")
        self._totals = program.kernel("scan_totals")
        self._apply = program.kernel("scan_apply")
        self._scratch: DeviceArray | None = None

    def scan(self, values: DeviceArray, count: int, out: DeviceArray) -> list[KernelEvent]:
        chunks = max(1, ceil_div(count, SCAN_CHUNK))
        if self._scratch is None or self._scratch.size < chunks + 1:
            self._scratch = self.context.empty(chunks + 1, np.uint32)
        totals = self._scratch
        width = launch_size(chunks, CHUNK_GROUP)
        return [
            self._chunk_totals.launch(width, CHUNK_GROUP, values, np.int32(count), totals,
                                      np.int32(chunks)),
            self._totals.launch(SCAN_GROUP, SCAN_GROUP, totals, np.int32(chunks)),
            self._apply.launch(width, CHUNK_GROUP, values, np.int32(count), totals, np.int32(chunks),
                               out),
        ]
