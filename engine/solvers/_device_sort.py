"""Sorting Morton keys on the device: ``(keys, order)`` pairs by key, ties by order value.

CUDA devices use CuPy's own sort (``cupy.argsort``, a stable device sort); SYCL devices use the
portable LSD radix sort in ``radix_sort.cl`` (8-bit digits, 8 passes over 64-bit keys, a
prefix sum per pass from :mod:`._device_scan`), written for the CPU OpenCL device CI runs on.
Both start from ``order = 0..n-1`` and keep equal keys in that order, as cpu-tree does.
"""

from __future__ import annotations

import numpy as np

from ..compute import Context, DeviceArray, KernelEvent
from ._device_scan import DeviceScan

RADIX_BITS = 8
KEY_BITS = 64
# Blocks (work-items) a radix pass is cut into: enough for every core of a CPU device, few
# enough that the digit-count scan (256 entries per block) stays small.
RADIX_BLOCKS = 256
RADIX_GROUP = 16


class DeviceKeySort:
    """``sort(keys, order, spare_keys, spare_order, count)`` sorts the first ``count`` pairs of
    ``keys`` and ``order``, using the spare arrays (same sizes) as scratch, and returns the
    launches' events and the (keys, order) arrays that hold the result."""

    def __init__(self, context: Context):
        self.context = context
        self._cuda = context.info.backend == "cuda"
        if not self._cuda:
            program = context.build(["radix_sort.cl"], defines={"RADIX_BITS": RADIX_BITS,
                                                                "RADIX_BLOCKS": RADIX_BLOCKS})
            self._histogram = program.kernel("radix_histogram")
            self._scatter = program.kernel("radix_scatter")
            self._scan = DeviceScan(context)
            self._counts = context.empty((1 << RADIX_BITS) * RADIX_BLOCKS + 1, np.uint32)

    def sort(self, keys: DeviceArray, order: DeviceArray, spare_keys: DeviceArray,
             spare_order: DeviceArray, count: int
             ) -> tuple[list[KernelEvent], tuple[DeviceArray, DeviceArray]]:
        if self._cuda:
            return self._sort_cupy(keys, spare_keys, spare_order, count)
        return self._sort_radix(keys, order, spare_keys, spare_order, count)

    def _sort_cupy(self, keys, keys_out, order_out, count):
        import cupy

        from ..compute._cuda import CudaEvent
        context = self.context
        with context.device, context.stream:
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(context.stream)
            permutation = cupy.argsort(keys.memory[:count])
            cupy.take(keys.memory[:count], permutation, out=keys_out.memory[:count])
            order_out.memory[:count] = permutation.astype(cupy.uint32)
            end.record(context.stream)
        return [CudaEvent(start, end)], (keys_out, order_out)

    def _sort_radix(self, keys, order, spare_keys, spare_order, count):
        chunk = np.int32(-(-count // RADIX_BLOCKS))
        cells = (1 << RADIX_BITS) * RADIX_BLOCKS
        source, target = (keys, order), (spare_keys, spare_order)
        events: list[KernelEvent] = []
        for pass_index in range(KEY_BITS // RADIX_BITS):
            shift = np.int32(pass_index * RADIX_BITS)
            events.append(self._histogram.launch(RADIX_BLOCKS, RADIX_GROUP, source[0],
                                                 np.int32(count), chunk, shift, self._counts))
            events += self._scan.scan(self._counts, cells, self._counts)
            events.append(self._scatter.launch(RADIX_BLOCKS, RADIX_GROUP, source[0], source[1],
                                               np.int32(count), chunk, shift, self._counts,
                                               target[0], target[1]))
            source, target = target, source
        return events, source
