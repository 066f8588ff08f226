"""Sorting Morton keys on a compute device: ``(keys, order)`` pairs by key, ties by order value.

A primitive of the compute layer: ``Context.key_sort()`` gives the backend's sorter. The
portable one here is an LSD radix sort (``radix_sort.cl``: 8-bit digits, 8 passes over 64-bit
keys, a prefix sum per pass from :class:`DeviceScan`), written for the CPU OpenCL device CI runs
on; CUDA contexts use CuPy's stable device sort instead (``_cuda.CudaKeySort``). Both start
from ``order = 0..n-1`` and keep equal keys in that order, as cpu-tree does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ._scan import DeviceScan
from ._types import Context, DeviceArray, KernelEvent, ceil_div

RADIX_BITS = 8
KEY_BITS = 64
# Blocks (work-items) a radix pass is cut into: enough for every core of a CPU device, few
# enough that the digit-count scan (256 entries per block) stays small.
RADIX_BLOCKS = 256
RADIX_GROUP = 16


class KeySort(ABC):
    """``sort(keys, order, spare_keys, spare_order, count)`` sorts the first ``count`` pairs of
    ``keys`` and ``order``, using the spare arrays (same sizes) as scratch, and returns the
    launches' events and the (keys, order) arrays that hold the result."""

    def __init__(self, context: Context):
        self.context = context
        self._orders: tuple[DeviceArray, DeviceArray] | None = None

    @abstractmethod
    def sort(self, keys: DeviceArray, order: DeviceArray, spare_keys: DeviceArray,
             spare_order: DeviceArray, count: int, *, bits: int = KEY_BITS
             ) -> tuple[list[KernelEvent], tuple[DeviceArray, DeviceArray]]:
        """Sort, on the context's queue; every key is below ``2**bits`` (a sorter may use it to
        skip digits that are zero everywhere)."""

    def sort_keys(self, keys: DeviceArray, spare_keys: DeviceArray, count: int, *, bits: int = KEY_BITS
                  ) -> tuple[list[KernelEvent], DeviceArray]:
        """Sort the first ``count`` keys alone (no order values to carry), all of them below
        ``2**bits``; returns the events and the array that holds them sorted. This default
        carries scratch order values."""
        if self._orders is None or self._orders[0].size < count:
            self._orders = (self.context.empty(max(1, count), np.uint32),
                            self.context.empty(max(1, count), np.uint32))
        events, (result, _) = self.sort(keys, self._orders[0], spare_keys, self._orders[1], count, bits=bits)
        return events, result


class RadixKeySort(KeySort):
    """The portable sort: radix passes of ``radix_sort.cl``."""

    def __init__(self, context: Context):
        super().__init__(context)
        program = context.build(["radix_sort.cl"], defines={"RADIX_BITS": RADIX_BITS,
                                                            "RADIX_BLOCKS": RADIX_BLOCKS})
        self._histogram = program.kernel("radix_histogram")
        self._scatter = program.kernel("radix_scatter")
        self._scan = DeviceScan(context)
        self._counts = context.empty((1 << RADIX_BITS) * RADIX_BLOCKS + 1, np.uint32)

    def sort(self, keys, order, spare_keys, spare_order, count, *, bits: int = KEY_BITS):
        chunk = np.int32(ceil_div(count, RADIX_BLOCKS))
        cells = (1 << RADIX_BITS) * RADIX_BLOCKS
        source, target = (keys, order), (spare_keys, spare_order)
        events: list[KernelEvent] = []
        # Digits above ``bits`` are zero in every key: their passes would move nothing.
        for pass_index in range(ceil_div(min(bits, KEY_BITS), RADIX_BITS)):
            shift = np.int32(pass_index * RADIX_BITS)
            events.append(self._histogram.launch(RADIX_BLOCKS, RADIX_GROUP, source[0],
                                                 np.int32(count), chunk, shift, self._counts))
            events += self._scan.scan(self._counts, cells, self._counts)
            events.append(self._scatter.launch(RADIX_BLOCKS, RADIX_GROUP, source[0], source[1],
                                               np.int32(count), chunk, shift, self._counts,
                                               target[0], target[1]))
            source, target = target, source
        return events, source

