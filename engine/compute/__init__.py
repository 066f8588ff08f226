"""The GPU compute layer: one kernel text (OpenCL C behind the portability header
``kernels/portable.h``; each kernel file sits in a ``kernels/`` folder beside the Python that
launches it), two backends: SYCL devices through dpctl and CUDA devices through CuPy.

Host types, after OpenMM's common platform: :class:`Context` (a device and its in-order queue:
arrays, program builds, synchronisation), :class:`DeviceArray`, :class:`Program`,
:class:`Kernel` (launch with global and local sizes), :class:`KernelEvent` (device-side time)
and :class:`Graph` (a queue's work captured once and queued again whole: CUDA graphs).
Primitives built on them: :class:`DeviceScan` (prefix sums) and the key sort each context
gives through ``Context.key_sort()`` (a portable radix sort; CuPy's sort on CUDA).

Arrays of other frameworks (DLPack, the CUDA and SYCL array interfaces) come in through
:meth:`Context.wrap` and go out through :meth:`Context.export` (``_interchange.py``); every
upload and download is counted in ``Context.transfers``, and every array's bytes, by name, in
``Context.memory`` (``_memory.py``: live and peak, what bytes-per-particle figures are read from).

Example (a device string, kernel files and the package that holds them, a define, a launch of
global/local size)::

    context = open_device("sycl:cpu")                   # or "cuda:0", "sycl:gpu", None
    program = context.build(["softened_pair.cl", "direct.cl"], package="orrery.engine.solvers",
                            defines={"TILE": 256, "TARGETS": 1})
    event = program.kernel("direct_accelerations").launch(n, 256, body, out, np.int32(n), eps2)
    event.seconds()                                     # device time of that launch
"""

from ._cuda_gl import gl_buffer_view, registered_gl_buffers
from ._in_flight import STEPS_IN_FLIGHT, InFlight
from ._memory import KINDS, DeviceMemory, MemoryUsage, gib, kind_of
from ._interchange import UsmArray, host_array
from ._discovery import DeviceListing, list_devices, open_device, unavailable_reason
from ._source import kernel_file
from ._scan import DeviceScan
from ._sort import KeySort
from ._types import (Context, DeviceArray, DeviceInfo, DeviceUnavailableError, Graph,
                     HostSnapshot, InteropUnavailableError, Kernel, KernelBuildError, KernelEvent,
                     Program, Snapshot, ceil_div, launch_size, resident_size, sample_stride)
from .opencl_build_log import opencl_build_log

__all__ = ["Context", "DeviceArray", "DeviceInfo", "DeviceListing", "DeviceMemory", "DeviceScan",
           "InFlight", "KINDS", "MemoryUsage", "gib", "kind_of",
           "STEPS_IN_FLIGHT",
           "DeviceUnavailableError", "Graph", "HostSnapshot", "InteropUnavailableError", "Kernel",
           "KernelBuildError", "KernelEvent", "KeySort", "Program", "Snapshot", "UsmArray",
           "ceil_div", "gl_buffer_view", "host_array", "kernel_file", "launch_size",
           "list_devices", "open_device", "opencl_build_log", "registered_gl_buffers",
           "resident_size", "sample_stride", "unavailable_reason"]
