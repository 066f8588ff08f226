"""Device memory as the compute layer allocates it: live and peak bytes per named array.

Every :meth:`Context.empty` names its array (``"tree.nodes"``, ``"state.velocities"``: the
part before the dot is the array's kind, one of :data:`KINDS`) and the context's
:class:`DeviceMemory` counts its bytes from the allocation until the array is collected. So a
figure of bytes per particle is read from what was allocated, never estimated.

:meth:`DeviceMemory.measure` opens a :class:`MemoryUsage` that counts only the arrays allocated
while it is open (a solver's, a state's), not those other solvers of the process still hold on
the shared context; it keeps counting their release after it closes.
"""

from __future__ import annotations

import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..errors import InvalidInputError

# The kinds of device array, in the order a breakdown lists them: ``bodies`` are the packed
# (x, y, z, mass) rows (positions and masses), ``adjoint`` a gradient's backward pass's
# cotangents, ``temporaries`` what one pass uses and the next may reuse (sort spares, staging,
# partial sums); ``other`` is an array its caller did not name.
KINDS = ("bodies", "velocities", "accelerations", "tree", "lists", "expansions", "adjoint",
         "temporaries", "other")
UNNAMED = "other"


def gib(nbytes: int) -> str:
    """``nbytes`` as a reader compares device memory: GiB, three significant digits."""
    return f"{nbytes / 2**30:.3g} GiB"


def kind_of(name: str) -> str:
    """The kind of array ``name`` (its part before the first dot)."""
    return name.split(".", 1)[0]


@dataclass
class MemoryUsage:
    """Bytes of device arrays counted while this usage was open: ``live`` now, ``peak`` the most
    ever live at once, with ``live_by_name`` and ``peak_by_name`` (what was live, per array name,
    at the peak: it sums to ``peak``)."""

    live: int = 0
    peak: int = 0
    live_by_name: dict[str, int] = field(default_factory=dict)
    peak_by_name: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, nbytes: int) -> None:
        self.live += nbytes
        self.live_by_name[name] = self.live_by_name.get(name, 0) + nbytes
        if self.live > self.peak:
            self.peak = self.live
            self.peak_by_name = dict(self.live_by_name)

    def remove(self, name: str, nbytes: int) -> None:
        self.live -= nbytes
        left = self.live_by_name[name] - nbytes
        if left:
            self.live_by_name[name] = left
        else:
            del self.live_by_name[name]

    def peak_by_kind(self) -> dict[str, int]:
        """``peak_by_name`` summed per kind of array, in the order of :data:`KINDS`."""
        sums: dict[str, int] = {}
        for name, nbytes in self.peak_by_name.items():
            sums[kind_of(name)] = sums.get(kind_of(name), 0) + nbytes
        return {kind: sums[kind] for kind in sorted(sums, key=_kind_rank)}


def _kind_rank(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


class DeviceMemory:
    """A context's accounting of its device arrays: ``total`` since the context opened, and the
    usages :meth:`measure` opens (any thread may allocate: a lock keeps the sums whole)."""

    def __init__(self):
        self.total = MemoryUsage()
        self._open: list[MemoryUsage] = []
        # Re-entrant: a garbage collection that runs while the lock is held (an allocation
        # inside ``track``) may collect an array whose finalizer releases it on this thread.
        self._lock = threading.RLock()

    def check_room(self, name: str, nbytes: int, info) -> None:
        """Refuse (InvalidInputError) an array of ``nbytes`` that would take the arrays counted
        here past the memory of the device ``info`` describes."""
        held = self.total.live
        if held + nbytes > info.global_memory_bytes:
            raise InvalidInputError(
                f"{info.spec} ({info.name}) has {gib(info.global_memory_bytes)} of memory: "
                f"device array {name} needs {gib(nbytes)} more where {gib(held)} is in use")

    def track(self, array, name: str) -> None:
        """Count ``array`` (a :class:`DeviceArray` just allocated) under ``name`` until it is
        collected."""
        if kind_of(name) not in KINDS:
            raise ValueError(f"device array name {name!r} is not of a known kind {KINDS}")
        nbytes = array.nbytes
        with self._lock:
            usages = (self.total, *self._open)
            for usage in usages:
                usage.add(name, nbytes)
        weakref.finalize(array, self._release, usages, name, nbytes)

    def _release(self, usages: tuple[MemoryUsage, ...], name: str, nbytes: int) -> None:
        with self._lock:
            for usage in usages:
                usage.remove(name, nbytes)

    @contextmanager
    def measure(self):
        """A :class:`MemoryUsage` of the arrays allocated inside the block."""
        usage = MemoryUsage()
        with self._lock:
            self._open.append(usage)
        try:
            yield usage
        finally:
            with self._lock:
                self._open.remove(usage)
