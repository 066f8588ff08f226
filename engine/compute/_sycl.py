"""SYCL backend through dpctl: OpenCL C programs, USM device memory, one in-order profiling
queue per device.

The ``intel-opencl-rt`` wheel ships the Intel OpenCL CPU runtime but its .icd file names a path
that does not exist; when the user has configured no OpenCL loader, ``configure_loader`` points
the ICD loader at the wheel's library before dpctl first starts the SYCL runtime.
"""

from __future__ import annotations

import ctypes
import os
import site
import subprocess
import sys
import sysconfig

import numpy as np

from .._optional import MissingPackageError, require
from ..errors import InvalidInputError
from ._types import (Context, DeviceArray, DeviceInfo, Kernel, KernelBuildError, KernelEvent,
                     Program, check_scalar)

# OpenCL C 3.0 exposes the sub-group functions (cl_khr_subgroups is not listed on the CPU device).
COMPILE_OPTIONS = "-cl-std=CL3.0"

_CTYPES = {np.dtype(np.int32): ctypes.c_int32, np.dtype(np.uint32): ctypes.c_uint32,
           np.dtype(np.int64): ctypes.c_int64, np.dtype(np.uint64): ctypes.c_uint64,
           np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}


def configure_loader() -> str | None:
    """Point OCL_ICD_FILENAMES at the wheel's ``libintelocl.so`` unless the user configured an
    OpenCL loader. Must run before dpctl is imported; returns the library chosen, if any."""
    if os.environ.get("OCL_ICD_FILENAMES") or os.environ.get("OCL_ICD_VENDORS"):
        return None
    # Where pip put the wheel's lib/: the environment, the scheme's data path (/usr/local on
    # Debian's system Python), or the user base.
    prefixes = [sys.prefix, sysconfig.get_path("data"), getattr(site, "USER_BASE", None) or ""]
    for prefix in prefixes:
        library = os.path.join(prefix, "lib", "libintelocl.so")
        if prefix and os.path.exists(library):
            os.environ["OCL_ICD_FILENAMES"] = library
            return library
    return None


def _dpctl():
    """Import dpctl (configuring the loader first); MissingPackageError when it is not installed.

    dpctl's import turns subprocess's vfork off (so that a debugger can follow native children),
    after which every subprocess of the process (ctypes' ldconfig lookups, pyglet's, a movie's
    encoder) is a fork() of the whole process, made beside running solver threads and device
    queues; the setting it found is put back (issue 42).
    """
    if "dpctl" not in sys.modules:
        configure_loader()
        vfork = subprocess._USE_VFORK
        try:
            require("dpctl")
        finally:
            subprocess._USE_VFORK = vfork
    dpctl = require("dpctl")
    require("dpctl.memory")
    require("dpctl.program")
    return dpctl


def usable_devices() -> tuple[list, str | None]:
    """SYCL devices dpctl can allocate USM on, GPUs first, and why the list is empty (if so)."""
    try:
        dpctl = _dpctl()
    except MissingPackageError as error:
        return [], str(error)
    try:
        devices = dpctl.get_devices()
    except Exception as error:  # a broken runtime must not stop discovery of other backends
        return [], f"dpctl could not list devices: {error}"
    usable = [d for d in devices if d.has_aspect_usm_device_allocations]
    usable.sort(key=lambda d: (not d.is_gpu, not d.is_cpu))
    if not usable:
        return [], ("dpctl found no SYCL device with USM memory (for the Intel OpenCL CPU device: "
                    "pip install intel-opencl-rt)")
    return usable, None


def _subgroup_size(sizes: tuple[int, ...]) -> int:
    """32 (a warp, so kernels see the same lane count on every backend) when the device offers
    it, else the largest size below 32."""
    fitting = [s for s in sizes if s <= 32]
    return 32 if 32 in fitting else max(fitting, default=1)


def describe(device, index: int) -> DeviceInfo:
    sizes = tuple(int(s) for s in device.sub_group_sizes)
    kind = "gpu" if device.is_gpu else "cpu" if device.is_cpu else "accelerator"
    return DeviceInfo(backend="sycl", spec=f"sycl:{index}", name=device.name, kind=kind,
                      compute_units=int(device.max_compute_units),
                      subgroup_size=_subgroup_size(sizes), subgroup_sizes=sizes,
                      max_work_group_size=int(device.max_work_group_size),
                      local_memory_bytes=int(device.local_mem_size),
                      global_memory_bytes=int(device.global_mem_size),
                      fp64=bool(device.has_aspect_fp64), driver=str(device.driver_version))


class SyclArray(DeviceArray):
    """``memory`` is the USM allocation; given, it is a view of another framework's array
    (``strides``, ``start`` as :class:`DeviceArray` says)."""

    def __init__(self, context: "SyclContext", shape, dtype, memory=None, strides=None,
                 start: int = 0):
        super().__init__(shape, dtype, strides, start)
        self._context = context
        if memory is None:
            memory = _dpctl().memory.MemoryUSMDevice(max(self.nbytes, 1), queue=context.queue)
        self.memory = memory

    def upload(self, host: np.ndarray) -> None:
        host = self._check_host(host)
        self._context.transfers.uploaded += host.nbytes
        self._context.queue.wait()
        self.memory.copy_from_host(host.reshape(-1).view(np.uint8))

    def download(self) -> np.ndarray:
        self._check_plain()
        self._context.transfers.downloaded += self.nbytes
        self._context.queue.wait()
        host = np.empty(self.shape, self.dtype)
        self.memory.copy_to_host(host.reshape(-1).view(np.uint8))
        return host


class SyclEvent(KernelEvent):
    def __init__(self, event):
        self._event = event

    def seconds(self) -> float:
        self._event.wait()
        return (self._event.profiling_info_end - self._event.profiling_info_start) * 1e-9

    def finished(self) -> bool:
        import dpctl

        return self._event.execution_status == dpctl.event_status_type.complete

    def wait(self) -> None:
        self._event.wait()


class SyclKernel(Kernel):
    def __init__(self, context: "SyclContext", name: str, kernel):
        super().__init__(name)
        self._context = context
        self._kernel = kernel

    def launch(self, global_size: int, local_size: int, *args) -> KernelEvent:
        self._check_sizes(global_size, local_size, self._context.info.max_work_group_size)
        converted = []
        for index, arg in enumerate(args):
            if isinstance(arg, SyclArray):
                converted.append(arg.memory)
            else:
                scalar = check_scalar(self.name, index, arg)
                converted.append(_CTYPES[scalar.dtype](scalar.item()))
        event = self._context.queue.submit_async(self._kernel, converted, [int(global_size)],
                                                 [int(local_size)])
        return SyclEvent(event).named(self.name)


class SyclProgram(Program):
    def __init__(self, context: "SyclContext", program):
        super().__init__()
        self._context = context
        self._program = program

    def _make_kernel(self, name: str) -> Kernel:
        if not self._program.has_sycl_kernel(name):
            raise InvalidInputError(f"the program has no kernel {name!r}")
        return SyclKernel(self._context, name, self._program.get_sycl_kernel(name))


class SyclContext(Context):
    def __init__(self, device, index: int):
        super().__init__(describe(device, index))
        dpctl = _dpctl()
        self.device = device
        self.queue = dpctl.SyclQueue(device, property=["in_order", "enable_profiling"])

    def _allocate(self, shape, dtype) -> DeviceArray:
        return SyclArray(self, shape, dtype)

    def _backend_defines(self) -> dict[str, object]:
        defines: dict[str, object] = {"SUBGROUP_SIZE": self.info.subgroup_size}
        if self.info.subgroup_size in self.info.subgroup_sizes:
            defines["REQD_SUBGROUP"] = None
        return defines

    def _compile_options(self) -> str:
        return COMPILE_OPTIONS

    def _compile(self, source: str) -> Program:
        dpctl = _dpctl()
        try:
            program = dpctl.program.create_program_from_source(self.queue, source, COMPILE_OPTIONS)
        except dpctl.program.SyclProgramCompilationError:
            from .opencl_build_log import opencl_build_log
            try:
                log = opencl_build_log(source, COMPILE_OPTIONS, self.info.name)
            except OSError as error:
                log = f"(the OpenCL build log could not be read: {error})"
            raise KernelBuildError(f"OpenCL program failed to build for {self.info.spec}",
                                   log) from None
        return SyclProgram(self, program)

    def synchronize(self) -> None:
        self.queue.wait()
