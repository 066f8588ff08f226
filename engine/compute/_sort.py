"""Sorting keys on a compute device: ``(keys, order)`` pairs by key, ties by order value.

A primitive of the compute layer: ``Context.key_sort()`` gives the backend's sorter. Keys are
32- or 64-bit unsigned (the arrays' dtype: 64-bit Morton keys for the trees, 32-bit cell keys
for the flock), and ``key_bits`` says how many low bits are significant (the rest are zero).
The portable sort here is an LSD radix sort (``radix_sort.cl``: 8-bit digits, one pass per
digit of ``key_bits``, a prefix sum per pass from :class:`DeviceScan`), written for the CPU
OpenCL device CI runs on; CUDA contexts use CuPy's stable device sort instead
(``_cuda.CudaKeySort``, over all bits of the key type). Both start from ``order = 0..n-1`` and
keep equal keys in that order, as cpu-tree does.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..errors import InvalidInputError
from ._scan import DeviceScan
from ._types import Context, DeviceArray, KernelEvent, ceil_div

RADIX_BITS = 8
# The key types a sort takes, as the kernel text names them.
KEY_TYPES = {np.dtype(np.uint32): "uint", np.dtype(np.uint64): "ulong"}
# Blocks (work-items) a radix pass is cut into: enough for every core of a CPU device, few
# enough that the digit-count scan (256 entries per block) stays small.
RADIX_BLOCKS = 256
RADIX_GROUP = 16


def key_bits_of(keys: DeviceArray, key_bits: int | None) -> int:
    """The significant bits of a sort: ``key_bits``, or all of the key type's; checked."""
    if keys.dtype not in KEY_TYPES:
        raise InvalidInputError(f"sort keys must be uint32 or uint64, got {keys.dtype}")
    width = keys.dtype.itemsize * 8
    bits = width if key_bits is None else int(key_bits)
    if not 1 <= bits <= width:
        raise InvalidInputError(f"key_bits must be 1 .. {width} for {keys.dtype} keys, "
                                f"got {key_bits}")
    return bits


class KeySort(ABC):
    """``sort(keys, order, spare_keys, spare_order, count, key_bits=None)`` sorts the first
    ``count`` pairs of ``keys`` and ``order``, using the spare arrays (same sizes) as scratch,
    and returns the launches' events and the (keys, order) arrays that hold the result.
    ``key_bits``: the keys' significant low bits (None: all of them)."""

    def __init__(self, context: Context):
        self.context = context
        self._orders: tuple[DeviceArray, DeviceArray] | None = None

    @abstractmethod
    def sort(self, keys: DeviceArray, order: DeviceArray, spare_keys: DeviceArray,
             spare_order: DeviceArray, count: int, key_bits: int | None = None
             ) -> tuple[list[KernelEvent], tuple[DeviceArray, DeviceArray]]:
        """Sort, on the context's queue."""

    def sort_keys(self, keys: DeviceArray, spare_keys: DeviceArray, count: int,
                  key_bits: int | None = None) -> tuple[list[KernelEvent], DeviceArray]:
        """Sort the first ``count`` keys alone (no order values to carry); returns the events
        and the array that holds them sorted. This default carries scratch order values."""
        if self._orders is None or self._orders[0].size < count:
            self._orders = (self.context.empty(max(1, count), np.uint32, "temporaries.sort_order"),
                            self.context.empty(max(1, count), np.uint32, "temporaries.sort_order"))
        events, (result, _) = self.sort(keys, self._orders[0], spare_keys, self._orders[1],
                                        count, key_bits)
        return events, result

    @abstractmethod
    def traffic(self, count: int, key_type, key_bits: int | None = None) -> int:
        """Bytes a sort of ``count`` pairs reads and writes in device memory, by the model of
        its passes (what a benchmark divides by the sort's time to get its bandwidth)."""


class RadixKeySort(KeySort):
    """The portable sort: radix passes of ``radix_sort.cl``."""

    def __init__(self, context: Context):
        super().__init__(context)
        self._kernels: dict = {}
        self._scan = DeviceScan(context)
        self._counts = context.empty((1 << RADIX_BITS) * RADIX_BLOCKS + 1, np.uint32, "temporaries.radix_counts")

    def _kernels_for(self, dtype: np.dtype):
        if dtype not in self._kernels:
            program = self.context.build(["radix_sort.cl"], package=__package__, defines={
                "RADIX_BITS": RADIX_BITS, "RADIX_BLOCKS": RADIX_BLOCKS,
                "SORT_KEY": KEY_TYPES[dtype]})
            self._kernels[dtype] = (program.kernel("radix_histogram"),
                                    program.kernel("radix_scatter"))
        return self._kernels[dtype]

    def traffic(self, count, key_type, key_bits=None):
        # Per pass: the histogram reads the keys, the scan reads and writes the digit counts,
        # the scatter reads and writes every (key, order) pair.
        key = np.dtype(key_type).itemsize
        passes = ceil_div(key_bits or 8 * key, RADIX_BITS)
        return passes * (count * (key + 2 * (key + 4)) + 2 * 4 * (1 << RADIX_BITS) * RADIX_BLOCKS)

    def sort(self, keys, order, spare_keys, spare_order, count, key_bits=None):
        passes = ceil_div(key_bits_of(keys, key_bits), RADIX_BITS)
        histogram, scatter = self._kernels_for(keys.dtype)
        chunk = np.int32(ceil_div(count, RADIX_BLOCKS))
        cells = (1 << RADIX_BITS) * RADIX_BLOCKS
        source, target = (keys, order), (spare_keys, spare_order)
        events: list[KernelEvent] = []
        for pass_index in range(passes):
            shift = np.int32(pass_index * RADIX_BITS)
            events.append(histogram.launch(RADIX_BLOCKS, RADIX_GROUP, source[0],
                                           np.int32(count), chunk, shift, self._counts))
            events += self._scan.scan(self._counts, cells, self._counts)
            events.append(scatter.launch(RADIX_BLOCKS, RADIX_GROUP, source[0], source[1],
                                         np.int32(count), chunk, shift, self._counts,
                                         target[0], target[1]))
            source, target = target, source
        return events, source

