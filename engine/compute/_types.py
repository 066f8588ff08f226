"""The compute layer's host types, shared by every backend (after OpenMM's common platform):
a device description, device arrays, programs and kernels, launch events, and the errors."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import numpy as np

from ..errors import InvalidInputError, OrreryError
from ._memory import UNNAMED, DeviceMemory

if TYPE_CHECKING:
    from ._sort import KeySort


def ceil_div(value: int, divisor: int) -> int:
    """``value / divisor`` rounded up, for non-negative integers."""
    return -(-value // divisor)


def launch_size(count: int, group: int) -> int:
    """The global size that covers ``count`` items in whole work-groups of ``group`` (at
    least one group, so an empty launch is still a valid one)."""
    return max(1, ceil_div(count, group)) * group


# Work-items per compute unit that keep a device busy: enough resident work to hide latency on
# a GPU (2048 threads per multiprocessor on recent NVIDIA parts); a CPU device runs work-groups
# one after another per core, so fewer suffice there.
RESIDENT_ITEMS_PER_UNIT = {"gpu": 2048, "cpu": 512, "accelerator": 512}


def resident_size(info: "DeviceInfo") -> int:
    """Work-items that fill ``info``'s device: the width of a launch whose items step over work
    of a size the host does not know."""
    return info.compute_units * RESIDENT_ITEMS_PER_UNIT[info.kind]


class DeviceUnavailableError(OrreryError, RuntimeError):
    """A device string names a device (or a backend package) that this machine does not have."""


class KernelBuildError(OrreryError, RuntimeError):
    """A kernel program failed to compile; ``log`` holds the compiler's own build log."""

    def __init__(self, message: str, log: str):
        super().__init__(f"{message}\n--- build log ---\n{log.strip()}")
        self.log = log


@dataclass(frozen=True)
class DeviceInfo:
    """What a kernel author needs to know about a device.

    ``subgroup_size`` is the lane count kernels are compiled for (``SUBGROUP_SIZE``; the warp on
    CUDA); ``subgroup_sizes`` all the device supports. Memory sizes are bytes.
    """

    backend: str           # "sycl" or "cuda"
    spec: str              # the canonical device string, e.g. "sycl:0", "cuda:0"
    name: str
    kind: str              # "gpu", "cpu" or "accelerator"
    compute_units: int
    subgroup_size: int
    subgroup_sizes: tuple[int, ...]
    max_work_group_size: int
    local_memory_bytes: int
    global_memory_bytes: int
    fp64: bool
    driver: str

    def describe(self) -> str:
        sizes = "/".join(str(s) for s in self.subgroup_sizes)
        return (f"{self.spec}: {self.name} ({self.kind}, {self.compute_units} compute units, "
                f"sub-group {self.subgroup_size} of {sizes}, work-group <= {self.max_work_group_size}, "
                f"local memory {self.local_memory_bytes // 1024} KiB, "
                f"global memory {self.global_memory_bytes / 2**30:.1f} GiB, "
                f"fp64 {'yes' if self.fp64 else 'no'}, driver {self.driver})")


@dataclass
class Transfers:
    """Bytes a context moved between host and device through :class:`DeviceArray` uploads and
    downloads (tests use it to show that a path moves no particle arrays)."""

    uploaded: int = 0
    downloaded: int = 0


class DeviceArray(ABC):
    """A 1-D or 2-D array in device memory with a fixed shape and dtype.

    Arrays a context allocates are C-contiguous; one wrapping another framework's array
    (:meth:`Context.wrap`) has that array's ``strides`` (in elements, as kernels index) and
    ``start``, the element of index (0, ...) counted from the pointer kernels receive.
    """

    def __init__(self, shape: int | tuple[int, ...], dtype, strides: tuple[int, ...] | None = None,
                 start: int = 0):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else shape
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.strides = tuple(strides) if strides is not None else c_strides(self.shape)
        self.start = int(start)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @abstractmethod
    def upload(self, host: np.ndarray) -> None:
        """Copy a host array of the same shape and dtype into this array (synchronous)."""

    @abstractmethod
    def download(self) -> np.ndarray:
        """A new host array with this array's contents (waits for queued work first)."""

    def _check_plain(self) -> None:
        """Refuse host transfers of a strided view (they copy whole, contiguous arrays)."""
        if self.strides != c_strides(self.shape) or self.start:
            raise InvalidInputError(f"a strided view {self.dtype}{self.shape} of another "
                                    "framework's array has no host transfers")

    def _check_host(self, host: np.ndarray) -> np.ndarray:
        self._check_plain()
        host = np.ascontiguousarray(host)
        if host.shape != self.shape or host.dtype != self.dtype:
            raise InvalidInputError(f"cannot upload {host.dtype}{host.shape} into a device array "
                                    f"of {self.dtype}{self.shape}")
        return host


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The element strides of a C-contiguous array of ``shape``."""
    return tuple(int(np.prod(shape[axis + 1:], dtype=np.int64)) for axis in range(len(shape)))

class InteropUnavailableError(DeviceUnavailableError):
    """This device cannot write into a GL buffer directly (a SYCL device, no ``cuda.bindings``,
    or the GL driver refused the registration): frames go through the host instead."""


# Rows a snapshot's sample holds at most: enough for a median over the whole array (the
# viewer's speed colours), a few kilobytes where the whole array is many megabytes.
SAMPLE_ROWS = 4096


def sample_stride(rows: int) -> int:
    """The step between the rows of a sample of an array of ``rows`` rows."""
    return max(1, rows // SAMPLE_ROWS)


class Snapshot(ABC):
    """A copy of a device array taken at one point of the device's queue, while the queue goes
    on. ``host()`` gives it as a read-only host array (waiting for the copy where it is still in
    flight); ``sample()`` every ``sample_stride``-th row of it; ``device`` is the device copy
    where the backend keeps one (CUDA: a staging buffer held until this snapshot is dropped),
    else None. Nothing ever writes into a snapshot after it is taken, so any thread may read it
    for as long as it holds it.

    ``locality_order``: where the solver has one, a device snapshot (``Context.device_snapshot``)
    taken in queue order with this one of the bodies in an order that keeps neighbours in space
    together (uint32 (n,), a permutation: entry k is the caller's index of the k-th body; the
    tree solvers' Morton order), which the compute splat draws in; else None.

    ``kernel_events``: where kernels wrote the copy (a frame narrowed on the device), their
    events, whose device seconds a reader may add up once the copy has arrived; else None."""

    device: "DeviceArray | None" = None
    context: "Context | None" = None  # the context ``device`` belongs to
    locality_order: "Snapshot | None" = None
    kernel_events: "list | None" = None

    @abstractmethod
    def ready(self) -> bool:
        """Whether ``host()`` would return without waiting."""

    @abstractmethod
    def host(self) -> np.ndarray:
        """The copy as a read-only host array."""

    def sample(self) -> np.ndarray | None:
        """Every ``sample_stride(rows)``-th row as a read-only host array, or None while it is
        still on its way."""
        if not self.ready():
            return None
        array = self.host()
        return array[::sample_stride(array.shape[0])]


class HostSnapshot(Snapshot):
    """A snapshot already on the host (CPU solvers, and backends that copy synchronously)."""

    def __init__(self, array: np.ndarray):
        array.flags.writeable = False
        self._array = array

    def ready(self) -> bool:
        return True

    def host(self) -> np.ndarray:
        return self._array


class DeviceSnapshot(Snapshot):
    """A snapshot in a device array of its own on an in-order queue (nothing queued later
    writes it), moved to the host only when ``host()`` asks (waiting for the queue)."""

    def __init__(self, context: "Context", array: "DeviceArray"):
        self.context = context
        self.device = array
        self._host: np.ndarray | None = None

    def ready(self) -> bool:
        return self._host is not None

    def host(self) -> np.ndarray:
        if self._host is None:
            host = self.device.download()
            host.flags.writeable = False
            self._host = host
        return self._host

    def sample(self) -> np.ndarray | None:
        return None  # read on the device only


class KernelEvent(ABC):
    """One launched kernel: ``seconds()`` waits for it and returns its device-side run time;
    ``name`` is the kernel's (work queued another way, a library sort or a graph, names itself)."""

    name = "queued work"

    def named(self, name: str) -> "KernelEvent":
        """This event, named (the backends name each launch after its kernel)."""
        self.name = name
        return self

    @abstractmethod
    def seconds(self) -> float:
        """Device time from the kernel's start to its end, in seconds."""

    @abstractmethod
    def finished(self) -> bool:
        """Whether the kernel has finished (a query: it does not wait)."""

    @abstractmethod
    def wait(self) -> None:
        """Wait until the kernel has finished (on CUDA without holding the GIL)."""


class Graph(ABC):
    """Work captured from a queue (:meth:`Context.capture`) that is queued again as a whole."""

    @abstractmethod
    def launch(self) -> KernelEvent:
        """Queue the captured work once more, in order after what is queued; returns without
        waiting, with an event spanning all of it."""


class Kernel(ABC):
    """A kernel entry point of a built :class:`Program`."""

    def __init__(self, name: str):
        self.name = name

    @abstractmethod
    def launch(self, global_size: int, local_size: int, *args) -> KernelEvent:
        """Queue the kernel on ``global_size`` work-items in groups of ``local_size`` (1-D).

        ``args`` are :class:`DeviceArray` or NumPy scalars whose dtype is the kernel parameter's
        type (``np.int32``, ``np.uint32``, ``np.float32``, ``np.float64``); plain Python numbers
        are refused because their C type would be a guess. Returns without waiting.
        """

    def resources(self) -> dict[str, int]:
        """What the compiled kernel takes per work-item, where the backend tells (CUDA:
        ``registers``, ``local_bytes`` (spills and private arrays), ``shared_bytes``); else {}."""
        return {}

    def _check_sizes(self, global_size: int, local_size: int, max_local: int) -> None:
        if local_size < 1 or local_size > max_local:
            raise InvalidInputError(f"{self.name}: local size {local_size} outside 1..{max_local}")
        if global_size < local_size or global_size % local_size:
            raise InvalidInputError(f"{self.name}: global size {global_size} is not a positive "
                                    f"multiple of the local size {local_size}")


def check_scalar(kernel: str, index: int, value) -> np.generic:
    # The type test first, a set lookup that every launch's scalars pass, before the slower
    # dtype comparisons; a scalar of an equal dtype under another type still passes.
    if type(value) in _SCALAR_TYPES:
        return value
    if not isinstance(value, np.generic) or value.dtype not in _SCALAR_DTYPES:
        raise InvalidInputError(
            f"{kernel}: argument {index} must be a DeviceArray or a NumPy scalar of "
            f"{[str(d) for d in _SCALAR_DTYPES]}, got {type(value).__name__}")
    return value


_SCALAR_DTYPES = tuple(np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64,
                                             np.float32, np.float64))
_SCALAR_TYPES = frozenset(dtype.type for dtype in _SCALAR_DTYPES)


class Program(ABC):
    """Compiled kernels for one device; ``kernel(name)`` looks one up (and keeps it)."""

    def __init__(self):
        self._kernels: dict[str, Kernel] = {}

    def kernel(self, name: str) -> Kernel:
        if name not in self._kernels:
            self._kernels[name] = self._make_kernel(name)
        return self._kernels[name]

    @abstractmethod
    def _make_kernel(self, name: str) -> Kernel:
        """Look up an entry point; a name the program lacks raises InvalidInputError."""


class Context(ABC):
    """One device and the queue/stream every operation on it goes through (in order)."""

    def __init__(self, info: DeviceInfo):
        self.info = info
        self._programs: dict[str, Program] = {}
        self.transfers = Transfers()
        self.memory = DeviceMemory()

    # -- memory -------------------------------------------------------------------------------
    def empty(self, shape, dtype, name: str = UNNAMED) -> DeviceArray:
        """An uninitialised device array, counted in ``memory`` under ``name`` (``kind.what``,
        the kind one of ``_memory.KINDS``) while it lives. An array that would take the arrays
        this context holds past the device's memory is refused before it is allocated
        (InvalidInputError, with the sizes), not left to the driver's out-of-memory error."""
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        self.memory.check_room(name, nbytes, self.info)
        array = self._allocate(shape, dtype)
        self.memory.track(array, name)
        return array

    @abstractmethod
    def _allocate(self, shape, dtype) -> DeviceArray:
        """An uninitialised device array of this backend."""

    def zeros(self, shape, dtype, name: str = UNNAMED) -> DeviceArray:
        """A device array of zeros."""
        array = self.empty(shape, dtype, name)
        array.upload(np.zeros(array.shape, array.dtype))
        return array

    def upload(self, host: np.ndarray, name: str = UNNAMED) -> DeviceArray:
        """A new device array holding a copy of ``host``."""
        host = np.ascontiguousarray(host)
        array = self.empty(host.shape, host.dtype, name)
        array.upload(host)
        return array

    # -- arrays of other frameworks (DLPack, CUDA and SYCL array interfaces) ------------------
    def wrap(self, obj, what: str) -> DeviceArray | None:
        """A view of ``obj``, a device array of another framework (CuPy, PyTorch, dpnp, ...) on
        this device, without a copy; None when ``obj`` lives in host memory. A device array on
        another device, or of another element type than float32/float64, raises
        InvalidInputError naming ``what``."""
        from ._interchange import wrap
        return wrap(self, obj, what)

    def export(self, array: DeviceArray, shape: tuple[int, ...] | None = None,
               strides: tuple[int, ...] | None = None, offset: int = 0):
        """``array`` (or the view of it with ``shape``, element ``strides`` and element
        ``offset``) as an array of this backend's framework family, sharing its memory: a CuPy
        array on CUDA, an object with ``__sycl_usm_array_interface__`` on SYCL."""
        from ._interchange import export
        return export(self, array, shape or array.shape, strides or array.strides, offset)

    def snapshot(self, shape, dtype, write: Callable[[DeviceArray], object], *,
                 download: bool = True) -> Snapshot:
        """A :class:`Snapshot` of what ``write(array)`` queues into a device array of ``shape``
        and ``dtype`` (a kernel launch, say). Here the copy is made at once, waiting for the
        queue; a backend with copy engines overrides this so the queue never waits, and with
        ``download=False`` moves the whole array to the host only when ``host()`` asks (its
        sample comes at once)."""
        array = self.empty(shape, dtype)
        write(array)
        return HostSnapshot(array.download())

    def device_snapshot(self, shape, dtype, write: Callable[[DeviceArray], object]) -> Snapshot:
        """A :class:`Snapshot` of what ``write(array)`` queues, kept on the device for kernels
        to read (``device`` is set; no sample, no host copy unless ``host()`` asks). Here the
        array itself, the queue being in order; a backend with copy engines overrides this."""
        array = self.empty(shape, dtype)
        write(array)
        return DeviceSnapshot(self, array)

    def capture(self, body: Callable[[], object]) -> Graph | None:
        """What ``body()`` queues on this context as a :class:`Graph`, or None where the
        backend has no graphs (SYCL here). Under capture the work is recorded, not done, so
        ``body`` must not wait for the device or read anything back; it raises if it does."""
        return None

    def another_queue(self) -> "Context":
        """A context on the same device whose queue runs beside this one's (a renderer's work
        then does not wait behind queued simulation steps); arrays of either may be used on
        both. Backends without concurrent queues return this context itself."""
        return self

    @contextmanager
    def reading(self, snapshots: Sequence["Snapshot"]):
        """Order the work queued inside the block after the copies ``snapshots`` hold and keep
        their device copies from being reused until that work is done. An in-order queue that
        took the snapshots needs nothing; a backend with several queues overrides this."""
        yield

    # -- programs -----------------------------------------------------------------------------
    def build(self, sources: Sequence[str] = (), *, package: str | None = None, text: str = "",
              defines: Mapping[str, object] | None = None) -> Program:
        """Compile kernel files (``sources``, e.g. ``["direct.cl"]``) from the ``kernels/``
        folder of ``package`` (the caller's ``__package__``: kernels sit beside the Python that
        launches them) and/or kernel ``text`` with ``defines`` (name -> value, or None for a
        bare define).

        The portability header and the backend's own defines (``REAL_BITS`` defaults to 32,
        ``SUBGROUP_SIZE``) come first. Programs are cached for the process by a hash of the
        final text and options; a compile error raises :class:`KernelBuildError` with the log.
        """
        from ._source import assemble

        final, digest = assemble(package, sources, text, {**self._backend_defines(), **(defines or {})},
                                 self._compile_options())
        if digest not in self._programs:
            self._programs[digest] = self._compile(final)
        return self._programs[digest]

    @abstractmethod
    def _backend_defines(self) -> dict[str, object]:
        """Defines this backend adds ahead of the caller's (SUBGROUP_SIZE, ...)."""

    @abstractmethod
    def _compile_options(self) -> str:
        """Compiler options (part of the cache key)."""

    @abstractmethod
    def _compile(self, source: str) -> Program:
        """Compile the assembled source."""

    # -- primitives ---------------------------------------------------------------------------
    def key_sort(self) -> KeySort:
        """A sorter of (32- or 64-bit key, 32-bit order) pairs on this device (see ``_sort``)."""
        from ._sort import RadixKeySort

        return RadixKeySort(self)

    # -- ordering -----------------------------------------------------------------------------
    @abstractmethod
    def synchronize(self) -> None:
        """Wait until everything queued on this context has finished."""
