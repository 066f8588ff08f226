"""Arrays of other frameworks on a compute device, in and out without a copy.

In: :func:`locate` says where an object's memory is from the conventions it follows, tried in
this order: ``__sycl_usm_array_interface__`` (dpnp, dpctl; strides and offset in elements),
``__dlpack__`` with ``__dlpack_device__`` (PyTorch, JAX, CuPy, NumPy, ...; CPU memory is host
memory), ``__cuda_array_interface__`` (Numba, older PyTorch; strides in bytes). :func:`wrap`
views such an array as a :class:`DeviceArray` of the context's backend (a CuPy view on CUDA, a
USM memory view on SYCL) carrying the array's element strides, so kernels read it in place.

Out: :func:`export` hands a context's array (or a strided view of it) to the caller in the
backend's framework family: a CuPy array on CUDA (which itself speaks DLPack and the CUDA array
interface, so ``torch.from_dlpack`` takes it), a :class:`UsmArray` on SYCL.

Ordering. CUDA: the context computes on its own non-blocking stream. An imported array is made
safe on that stream (DLPack's ``stream`` argument, through ``cupy.from_dlpack`` called with it
current; CuPy's own arrays by an event on the caller's current stream); an exported one makes
the caller's current stream wait for the context's stream (an event), so neither side ever
waits on the host. SYCL has no such protocol: an imported array's queue is waited for, and an
export waits for the context's queue.

dpctl 0.22 has no DLPack import (``dpctl.tensor`` moved to dpnp), so a oneAPI DLPack array
without the SYCL interface is refused with that reason.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ._types import c_strides

HOST, CUDA, SYCL = "host", "cuda", "sycl"
SUAI = "__sycl_usm_array_interface__"
CAI = "__cuda_array_interface__"
SUPPORTED = (np.dtype(np.float32), np.dtype(np.float64))
# DLPack DLDeviceType codes (dlpack.h): CPU memory is host memory; CUDA pinned host memory and
# managed memory are addressed by CUDA kernels.
DLPACK_DEVICES = {1: HOST, 2: CUDA, 3: CUDA, 13: CUDA, 14: SYCL}
DESCRIBED = {CUDA: "a CUDA device array", SYCL: "a SYCL USM array", HOST: "a host array"}


def locate(obj) -> str:
    """``"host"``, ``"cuda"`` or ``"sycl"``: where ``obj``'s memory is."""
    if isinstance(obj, np.ndarray):
        return HOST
    if getattr(obj, SUAI, None) is not None:
        return SYCL
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        kind = int(obj.__dlpack_device__()[0])
        if kind not in DLPACK_DEVICES:
            raise InvalidInputError(f"arrays on DLPack device type {kind} are not supported: pass "
                                    "CUDA or SYCL device arrays, or host arrays")
        return DLPACK_DEVICES[kind]
    if getattr(obj, CAI, None) is not None:
        return CUDA
    return HOST


def host_array(obj) -> np.ndarray:
    """A host object as a NumPy array without a copy where it can be: through DLPack for an
    object that speaks it (PyTorch CPU tensors, ...), else ``np.asarray``."""
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__"):
        return np.from_dlpack(obj)
    return np.asarray(obj)


def wrap(context, obj, what: str):
    where = locate(obj)
    if where == HOST:
        return None
    if where != context.info.backend:
        raise InvalidInputError(f"{what} are {DESCRIBED[where]} but the solver runs on "
                                f"{context.info.spec}: pass arrays on that device, or host arrays")
    array = _wrap_cuda(context, obj, what) if where == CUDA else _wrap_sycl(context, obj, what)
    if array.dtype not in SUPPORTED:
        raise InvalidInputError(f"{what} must be float32 or float64, got {array.dtype}")
    return array


def export(context, array, shape, strides, offset: int):
    if context.info.backend == CUDA:
        return _export_cuda(context, array, shape, strides, offset)
    context.synchronize()
    return UsmArray(array.memory, shape, array.dtype, strides, offset, context.queue)


# -- CUDA (CuPy) ---------------------------------------------------------------------------------
def _cupy():
    import cupy
    return cupy


def _wrap_cuda(context, obj, what: str):
    from ._cuda import CudaArray

    cupy, ordinal = _cupy(), context.device.id
    if hasattr(obj, "__dlpack_device__") and not isinstance(obj, cupy.ndarray):
        found = int(obj.__dlpack_device__()[1])
        if found != ordinal:
            raise InvalidInputError(f"{what} are on cuda:{found} but the solver runs on "
                                    f"{context.info.spec}")
    with context.device:
        if isinstance(obj, cupy.ndarray):
            view = obj
            _order_after(context.stream, cupy.cuda.get_current_stream())
        else:
            try:
                with context.stream:  # the producer orders its work before this (current) stream
                    view = _import_cuda(cupy, obj)
            except (TypeError, ValueError, RuntimeError, BufferError) as error:
                raise InvalidInputError(f"{what} could not be read as a CUDA array "
                                        f"({error})") from None
    if view.device.id != ordinal:
        raise InvalidInputError(f"{what} are on cuda:{view.device.id} but the solver runs on "
                                f"{context.info.spec}")
    itemsize = view.dtype.itemsize
    if any(stride % itemsize for stride in view.strides):
        raise InvalidInputError(f"{what}: strides {view.strides} are not whole elements")
    return CudaArray(context, view.shape, view.dtype, memory=view,
                     strides=tuple(stride // itemsize for stride in view.strides))


def _import_cuda(cupy, obj):
    """A CuPy view of ``obj``: through DLPack where it speaks it, else (or where DLPack refuses,
    as CuPy does for read-only exports) through the CUDA array interface."""
    if hasattr(obj, "__dlpack__"):
        try:
            return cupy.from_dlpack(obj)
        except BufferError:
            if getattr(obj, CAI, None) is None:
                raise
    return cupy.asarray(obj)


def _order_after(later, earlier) -> None:
    """Work queued on stream ``later`` from now on waits for what ``earlier`` holds now."""
    if later.ptr == earlier.ptr:
        return
    done = _cupy().cuda.Event(block=False, disable_timing=True)
    done.record(earlier)
    later.wait_event(done)


def _export_cuda(context, array, shape, strides, offset: int):
    cupy, itemsize = _cupy(), array.dtype.itemsize
    with context.device:
        view = cupy.ndarray(tuple(shape), array.dtype, memptr=array.memory.data + offset * itemsize,
                            strides=tuple(stride * itemsize for stride in strides))
        _order_after(cupy.cuda.get_current_stream(), context.stream)
    return view


# -- SYCL (dpctl) --------------------------------------------------------------------------------
class _Interface:
    """A bare holder of a SYCL array interface (dpctl.memory.as_usm_memory reads one)."""

    def __init__(self, interface: dict):
        self.__sycl_usm_array_interface__ = interface


def _wrap_sycl(context, obj, what: str):
    from ._sycl import SyclArray, _dpctl

    dpctl = _dpctl()
    interface = getattr(obj, SUAI, None)
    if interface is None:
        raise InvalidInputError(f"{what} are a oneAPI DLPack array: dpctl 0.22 imports no DLPack; "
                                f"pass an array with {SUAI} (a dpnp array, say)")
    try:
        pointer = int(interface["data"][0])
        shape = tuple(int(extent) for extent in interface["shape"])
        dtype = np.dtype(interface["typestr"])
        strides = interface.get("strides")
        offset = int(interface.get("offset") or 0)
        syclobj = interface["syclobj"]
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise InvalidInputError(f"{what}: malformed {SUAI} ({error!r})") from None
    if strides is None:
        strides = c_strides(shape)
    strides = tuple(int(stride) for stride in strides)
    if len(strides) != len(shape):
        raise InvalidInputError(f"{what}: {SUAI} has {len(strides)} strides for shape {shape}")
    if 0 in shape:  # nothing to read; the caller refuses the empty shape with its own words
        return SyclArray(context, shape, dtype, strides=strides)
    lowest = sum(min(0, stride * (extent - 1)) for stride, extent in zip(strides, shape))
    highest = sum(max(0, stride * (extent - 1)) for stride, extent in zip(strides, shape))
    span = _Interface({"data": (pointer + (offset + lowest) * dtype.itemsize, True),
                       "shape": ((highest - lowest + 1) * dtype.itemsize,), "strides": None,
                       "typestr": "|u1", "version": 1, "syclobj": syclobj})
    try:
        memory = dpctl.memory.as_usm_memory(span)
    except Exception as error:  # dpctl raises several types for memory it cannot place
        raise InvalidInputError(f"{what} are not USM memory of a SYCL device ({error})") from None
    if memory.sycl_device != context.device:
        raise InvalidInputError(f"{what} are on SYCL device {memory.sycl_device.name!r} but the "
                                f"solver runs on {context.info.spec} ({context.info.name})")
    if memory.sycl_context != context.queue.sycl_context:
        raise InvalidInputError(f"{what} belong to another SYCL context than the solver's "
                                f"({context.info.spec}): allocate them with the device's default "
                                "context")
    if isinstance(syclobj, dpctl.SyclQueue) and syclobj != context.queue:
        syclobj.wait()  # the producer's queue is not ordered with the solver's
    return SyclArray(context, shape, dtype, memory=memory, strides=strides, start=-lowest)


class UsmArray:
    """A device array handed out on SYCL devices: USM memory with a shape, dtype and element
    strides, read by any consumer of ``__sycl_usm_array_interface__`` (``dpnp.asarray(x)``,
    ``dpctl.memory.as_usm_memory(x)``) without a copy; ``copy_to_host()`` for a NumPy copy."""

    def __init__(self, memory, shape, dtype, strides, offset: int, queue):
        self._memory = memory
        self.shape = tuple(int(extent) for extent in shape)
        self.dtype = np.dtype(dtype)
        self.strides = tuple(int(stride) for stride in strides)  # elements
        self._offset = int(offset)
        self._queue = queue

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def __sycl_usm_array_interface__(self) -> dict:
        pointer = self._memory.__sycl_usm_array_interface__["data"][0]
        return {"data": (pointer, False), "shape": self.shape, "strides": self.strides,
                "offset": self._offset, "typestr": self.dtype.str, "version": 1,
                "syclobj": self._queue}

    def copy_to_host(self) -> np.ndarray:
        """A C-contiguous NumPy copy (one transfer of the underlying allocation)."""
        raw = np.empty(self._memory.nbytes, np.uint8)
        self._queue.wait()
        self._memory.copy_to_host(raw)
        whole = raw[:raw.size - raw.size % self.dtype.itemsize].view(self.dtype)
        itemsize = self.dtype.itemsize
        view = np.lib.stride_tricks.as_strided(
            whole[self._offset:], self.shape, tuple(stride * itemsize for stride in self.strides))
        return np.ascontiguousarray(view)
