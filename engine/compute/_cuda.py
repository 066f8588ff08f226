"""CUDA backend through CuPy: the same kernel text compiled by NVRTC (``RawModule``), CuPy
device arrays, and one non-blocking stream per device so every operation is ordered."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

import numpy as np

from .._optional import MissingPackageError, require
from ..errors import InvalidInputError
from ._cuda_pinned import PinnedStaging
from ._sort import KeySort, key_bits_of
from ._types import (Context, DeviceArray, DeviceInfo, Graph, Kernel, KernelBuildError,
                     KernelEvent, Program, check_scalar)

WARP = 32
COMPILE_OPTIONS = ("-std=c++17",)
# CUDA clamps a stream priority to the device's range (lower is higher; 0 to -5 on the H200),
# and CuPy does not expose the range: asking for far more than any device has gives its highest.
HIGHEST_PRIORITY = -(1 << 16)
# Transfers of at least this many bytes go through the context's pinned staging buffers
# (_cuda_pinned.py); smaller ones are not worth the pipeline.
PINNED_THRESHOLD = 1 << 20
_ALREADY_CURRENT = nullcontext()


def _cupy():
    return require("cupy")


def usable_devices() -> tuple[list[int], str | None]:
    """CUDA device ordinals, and why the list is empty (if so)."""
    try:
        cupy = _cupy()
    except MissingPackageError as error:
        return [], str(error)
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # no driver, no device: say so instead of failing discovery
        return [], f"CuPy found no CUDA device ({error})"
    if count == 0:
        return [], "CuPy found no CUDA device"
    return list(range(count)), None


def describe(ordinal: int) -> DeviceInfo:
    cupy = _cupy()
    props = cupy.cuda.runtime.getDeviceProperties(ordinal)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    version = cupy.cuda.runtime.driverGetVersion()
    return DeviceInfo(backend="cuda", spec=f"cuda:{ordinal}", name=name, kind="gpu",
                      compute_units=int(props["multiProcessorCount"]),
                      subgroup_size=int(props["warpSize"]), subgroup_sizes=(int(props["warpSize"]),),
                      max_work_group_size=int(props["maxThreadsPerBlock"]),
                      local_memory_bytes=int(props["sharedMemPerBlock"]),
                      global_memory_bytes=int(props["totalGlobalMem"]), fp64=True,
                      driver=f"CUDA {version // 1000}.{version % 1000 // 10}, "
                             f"sm_{props['major']}{props['minor']}")


class CudaArray(DeviceArray):
    """``memory`` is the CuPy array; given, it is a view of another framework's array."""

    def __init__(self, context: "CudaContext", shape, dtype, memory=None, strides=None):
        super().__init__(shape, dtype, strides)
        self._context = context
        if memory is None:
            with context.device, context.stream:
                memory = _cupy().empty(self.shape, self.dtype)
        self.memory = memory

    def upload(self, host: np.ndarray) -> None:
        host = self._check_host(host)
        self._context.transfers.uploaded += host.nbytes
        with self._context.device:
            if host.nbytes >= PINNED_THRESHOLD and self.memory.flags.c_contiguous:
                self._context.pinned.upload(host, self.memory.data.ptr)
            else:
                self.memory.set(host, stream=self._context.stream)
                self._context.stream.synchronize()

    def download(self) -> np.ndarray:
        self._context.transfers.downloaded += self.nbytes
        with self._context.device:
            if self.nbytes >= PINNED_THRESHOLD and self.memory.flags.c_contiguous:
                host = np.empty(self.shape, self.dtype)
                self._context.pinned.download(self.memory.data.ptr, host)
                return host
            # Wait for the queue first: a copy into pageable memory that waits on the device
            # holds the driver, and every other thread's CUDA call (the viewer's GL interop)
            # waited with it, up to 70 ms a frame at 10M particles; the wait does not.
            self._context.stream.synchronize()
            host = self.memory.get(stream=self._context.stream)
        return host


class CudaEvent(KernelEvent):
    def __init__(self, start, end):
        self._start, self._end = start, end

    def seconds(self) -> float:
        self._end.synchronize()
        return _cupy().cuda.get_elapsed_time(self._start, self._end) * 1e-3

    def finished(self) -> bool:
        return self._end.done

    def wait(self) -> None:
        self._end.synchronize()  # CuPy drops the GIL for cudaEventSynchronize


class CudaGraph(Graph):
    """A CUDA graph instantiated from a capture of the context's stream. ``pool`` is the
    memory pool the capture allocated its temporaries from: the graph replays into those
    addresses, so the pool serves nothing else and lives as long as the graph."""

    def __init__(self, context: "CudaContext", graph, pool):
        self._context, self._graph, self._pool = context, graph, pool

    def launch(self) -> KernelEvent:
        return self._context.timed(self._graph.launch, self._context.stream).named("graph")


class CudaKernel(Kernel):
    def __init__(self, context: "CudaContext", name: str, function):
        super().__init__(name)
        self._context = context
        self._function = function

    def resources(self) -> dict[str, int]:
        names = {"registers": "num_regs", "local_bytes": "local_size_bytes", "shared_bytes": "shared_size_bytes"}
        with self._context.device:
            return {key: int(getattr(self._function, attribute)) for key, attribute in names.items()
                    if hasattr(self._function, attribute)}

    def launch(self, global_size: int, local_size: int, *args) -> KernelEvent:
        self._check_sizes(global_size, local_size, self._context.info.max_work_group_size)
        if local_size % WARP:
            raise InvalidInputError(f"{self.name}: CUDA work-groups must be whole warps, "
                                    f"got {local_size}")
        converted = tuple([arg.memory if isinstance(arg, CudaArray) else check_scalar(self.name, index, arg)
                           for index, arg in enumerate(args)])
        context = self._context
        return context.timed(self._function, (global_size // local_size,), (local_size,), converted,
                             stream=context.stream).named(self.name)


class CudaProgram(Program):
    def __init__(self, context: "CudaContext", module):
        super().__init__()
        self._context = context
        self._module = module

    def _make_kernel(self, name: str) -> Kernel:
        cupy = _cupy()
        try:
            with self._context.device:
                function = self._module.get_function(name)
        except cupy.cuda.driver.CUDADriverError as error:
            raise InvalidInputError(f"the program has no kernel {name!r} ({error})") from None
        return CudaKernel(self._context, name, function)


class CudaContext(Context):
    def __init__(self, ordinal: int, *, priority: int | None = None):
        super().__init__(describe(ordinal))
        cupy = _cupy()
        self.device = cupy.cuda.Device(ordinal)
        # Looked up once: every launch makes two events and asks for the current device.
        self._event, self._current_device = cupy.cuda.Event, cupy.cuda.runtime.getDevice
        self.max_threads_per_unit = int(
            cupy.cuda.runtime.getDeviceProperties(ordinal)["maxThreadsPerMultiProcessor"])
        with self.device:
            self.stream = cupy.cuda.Stream(non_blocking=True, priority=priority)
        self.pinned = PinnedStaging(self.device, self.stream)

        self._staging = None

    def snapshot(self, shape, dtype, write, *, download=True):
        # Staged and downloaded on the copy engine: the compute stream never waits for a frame.
        return self._staging_pool().snapshot(shape, dtype, write, download=download)

    def device_snapshot(self, shape, dtype, write):
        # A staging copy like a frame's, without its sample: read on the device only.
        return self._staging_pool().snapshot(shape, dtype, write, download=False, sample=False)

    def timed(self, work, *args, **kwargs) -> CudaEvent:
        """Queue ``work(*args, **kwargs)`` (a kernel, a graph, a sort) on this device between two
        timing events: the event each launch returns. The device is made current only where
        another is (on the H200, entering CuPy's Device added 0.8 us to a 7.9 us launch)."""
        with _ALREADY_CURRENT if self._current_device() == self.device.id else self.device:
            start, end = self._event(), self._event()
            start.record(self.stream)
            work(*args, **kwargs)
            end.record(self.stream)
        return CudaEvent(start, end)

    def _staging_pool(self):
        if self._staging is None:
            from ._cuda_staging import StagingPool
            self._staging = StagingPool(self)
        return self._staging

    def _allocate(self, shape, dtype) -> DeviceArray:
        return CudaArray(self, shape, dtype)

    def capture(self, body):
        # Relaxed mode: other threads (a viewer's GL interop, a recorder's downloads) go on
        # with their own CUDA calls while this thread captures.
        cupy = _cupy()
        pool = cupy.cuda.MemoryPool()
        with self.device, self.stream, cupy.cuda.using_allocator(pool.malloc):
            self.stream.begin_capture(mode=cupy.cuda.runtime.streamCaptureModeRelaxed)
            try:
                body()
            except BaseException:
                try:
                    self.stream.end_capture()
                except cupy.cuda.runtime.CUDARuntimeError:
                    pass  # the capture was invalidated by what failed: that error is the one
                raise
            graph = self.stream.end_capture()
            graph.upload(self.stream)
        return CudaGraph(self, graph, pool)

    def another_queue(self) -> "CudaContext":
        # The highest stream priority: the block scheduler starts its kernels' blocks before
        # more blocks of the simulation's long kernels, so a frame does not wait a step for SMs.
        return CudaContext(self.device.id, priority=HIGHEST_PRIORITY)

    @contextmanager
    def reading(self, snapshots):
        cupy = _cupy()
        with self.device:
            for snapshot in snapshots:
                written = getattr(snapshot, "written", None)
                if written is not None:  # a staging copy on another stream: the device waits
                    self.stream.wait_event(written)
        yield
        with self.device:
            done = cupy.cuda.Event(disable_timing=True)
            done.record(self.stream)
        for snapshot in snapshots:
            if hasattr(snapshot, "add_reader"):
                snapshot.add_reader(done)

    def _backend_defines(self) -> dict[str, object]:
        return {"SUBGROUP_SIZE": self.info.subgroup_size,
                "MAX_THREADS_PER_UNIT": self.max_threads_per_unit}

    def _compile_options(self) -> str:
        return " ".join(COMPILE_OPTIONS)

    def _compile(self, source: str) -> Program:
        cupy = _cupy()
        with self.device:
            module = cupy.RawModule(code=source, options=COMPILE_OPTIONS)
            try:
                module.compile()
            except cupy.cuda.compiler.CompileException as error:
                raise KernelBuildError(f"NVRTC failed to build the program for {self.info.spec}",
                                       error.get_message() if hasattr(error, "get_message")
                                       else str(error)) from None
        return CudaProgram(self, module)

    def synchronize(self) -> None:
        self.stream.synchronize()

    def key_sort(self) -> KeySort:
        return CudaKeySort(self)


class CudaKeySort(KeySort):
    """CuPy's stable device sort (``cupy.argsort``, a radix sort over all bits of the key type:
    4 passes for uint32 keys, 8 for uint64; ``key_bits`` is checked, not used) on the context's
    stream, then one elementwise pass that writes the sorted keys and the 32-bit order from
    the permutation (rather than a take, a cast and a copy: three passes)."""

    def __init__(self, context: Context):
        super().__init__(context)
        self._finish = _cupy().ElementwiseKernel(
            "raw K keys, int64 permutation", "K sorted_keys, uint32 order",
            "sorted_keys = keys[permutation]; order = (unsigned int)permutation;",
            "orrery_sorted_pairs")

    def traffic(self, count, key_type, key_bits=None):
        # argsort: a copy of the keys, the index fill, one histogram read of the keys, then one
        # pass per byte of the key type reading and writing (key, 8-byte index); the finish
        # reads the index and a key and writes a key and a 4-byte order.
        key = np.dtype(key_type).itemsize
        return count * (2 * key + 8 + key + key * 2 * (key + 8) + (8 + 2 * key + 4))

    def sort(self, keys, order, spare_keys, spare_order, count, key_bits=None):
        key_bits_of(keys, key_bits)
        cupy = _cupy()

        def work():
            with self.context.stream:
                permutation = cupy.argsort(keys.memory[:count])
                self._finish(keys.memory, permutation, spare_keys.memory[:count],
                             spare_order.memory[:count])
        return [self.context.timed(work).named("cupy_sort")], (spare_keys, spare_order)

    def sort_keys(self, keys, spare_keys, count, key_bits=None):
        # Keys alone: CuPy's sort of unsigned integers is a radix sort that moves only the keys,
        # half the bytes of a sort that carries an order (and no gather after it); keys below
        # 2**32 sort as uint32, half the passes of half the bytes.
        bits = key_bits_of(keys, key_bits)
        cupy = _cupy()

        def work():
            with self.context.stream:
                view = keys.memory[:count]
                spare_keys.memory[:count] = cupy.sort(view.astype(cupy.uint32) if bits <= 32 else view)
        return [self.context.timed(work).named("cupy_sort")], spare_keys
