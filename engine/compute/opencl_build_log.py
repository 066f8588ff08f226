"""The real compiler log of an OpenCL program that failed to build.

dpctl raises ``SyclProgramCompilationError`` with an empty message when an OpenCL C program does
not compile. This helper compiles the same text again through the OpenCL C API (ctypes on the
libOpenCL the process already loaded, so it sees the same platforms) for the device with the
same name, and returns ``clGetProgramBuildInfo(CL_PROGRAM_BUILD_LOG)``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

from .. import portable

_CL_SUCCESS = 0
_CL_DEVICE_TYPE_ALL = 0xFFFFFFFF
_CL_DEVICE_NAME = 0x102B
_CL_PROGRAM_BUILD_LOG = 0x1183

_cl_handle = ctypes.c_void_p


def _loaded_opencl_path() -> str | None:
    """The libOpenCL already mapped into this process (the one the SYCL runtime uses)."""
    return next((path for path in portable.loaded_libraries()
                 if os.path.basename(path).startswith("libOpenCL.so")), None)


def _load_opencl() -> ctypes.CDLL:
    candidates = [_loaded_opencl_path(), os.path.join(sys.prefix, "lib", "libOpenCL.so.1"),
                  ctypes.util.find_library("OpenCL")]
    for path in candidates:
        if path and (os.path.exists(path) or not os.path.isabs(path)):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    raise OSError("no libOpenCL could be loaded")


def _info_string(getter, *handles_and_param) -> str:
    size = ctypes.c_size_t()
    if getter(*handles_and_param, ctypes.c_size_t(0), None, ctypes.byref(size)) != _CL_SUCCESS:
        return ""
    buffer = ctypes.create_string_buffer(size.value)
    getter(*handles_and_param, size, buffer, None)
    return buffer.value.decode(errors="replace")


def _devices(cl) -> list:
    count = ctypes.c_uint()
    cl.clGetPlatformIDs(0, None, ctypes.byref(count))
    platforms = (_cl_handle * count.value)()
    cl.clGetPlatformIDs(count, platforms, None)
    found = []
    for platform in platforms:
        n = ctypes.c_uint()
        if cl.clGetDeviceIDs(_cl_handle(platform), ctypes.c_uint64(_CL_DEVICE_TYPE_ALL), 0, None,
                             ctypes.byref(n)) != _CL_SUCCESS or n.value == 0:
            continue
        devices = (_cl_handle * n.value)()
        cl.clGetDeviceIDs(_cl_handle(platform), ctypes.c_uint64(_CL_DEVICE_TYPE_ALL), n, devices, None)
        found += [_cl_handle(device) for device in devices]
    return found


def opencl_build_log(source: str, options: str = "", device_name: str | None = None) -> str:
    """Compile ``source`` with ``options`` for the first OpenCL device called ``device_name``
    (any device when None) and return the build log ("" when it compiled without messages).

    Raises OSError when no OpenCL library or matching device is found.
    """
    cl = _load_opencl()
    cl.clCreateContext.restype = _cl_handle
    cl.clCreateProgramWithSource.restype = _cl_handle
    device = next((d for d in _devices(cl)
                   if device_name is None
                   or _info_string(cl.clGetDeviceInfo, d, ctypes.c_uint(_CL_DEVICE_NAME)) == device_name),
                  None)
    if device is None:
        raise OSError(f"no OpenCL device named {device_name!r}")
    error = ctypes.c_int()
    devices = (_cl_handle * 1)(device)
    context = cl.clCreateContext(None, 1, devices, None, None, ctypes.byref(error))
    if error.value != _CL_SUCCESS:
        raise OSError(f"clCreateContext failed ({error.value})")
    try:
        text = ctypes.c_char_p(source.encode())
        program = cl.clCreateProgramWithSource(_cl_handle(context), 1, ctypes.byref(text), None,
                                               ctypes.byref(error))
        if error.value != _CL_SUCCESS:
            raise OSError(f"clCreateProgramWithSource failed ({error.value})")
        try:
            cl.clBuildProgram(_cl_handle(program), 1, devices, options.encode(), None, None)
            return _info_string(cl.clGetProgramBuildInfo, _cl_handle(program), device,
                                ctypes.c_uint(_CL_PROGRAM_BUILD_LOG))
        finally:
            cl.clReleaseProgram(_cl_handle(program))
    finally:
        cl.clReleaseContext(_cl_handle(context))
