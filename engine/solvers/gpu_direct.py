"""``gpu-direct``: direct summation on a GPU compute device (CUDA through CuPy, SYCL through
dpctl), tiled through local memory; kernel in ``kernels/direct.cl``. O(N^2), exact up to
round-off, float32 or (where the device has it) float64."""

from __future__ import annotations

import math

import numpy as np

from ..compute import DeviceArray, KernelEvent, ceil_div, unavailable_reason
from ..errors import InvalidInputError
from ._gpu import GpuSolver
from ..options import DEVICE, PRECISION, SOFTENING, Option, SolverSpec

TILE_SIZE = Option("tile_size", int, None,
                   "bodies staged per local-memory tile, also the work-group size "
                   "(default: chosen per device and N)", choices=(32, 64, 128, 256, 512, 1024))
TARGETS = Option("targets", int, None,
                 "target bodies each work-item sums for: each local-memory read then feeds that "
                 "many interactions (default: chosen per device and N)", choices=(1, 2, 4))

# Fastest (tile, targets) of the H200 sweep (docs/performance.md), which on the H200 still wins
# when its 128 groups leave 4 of 132 units idle; the CPU device gains nothing from several
# targets per work-item.
PREFERRED = {"gpu": (1024, 2), "cpu": (256, 1), "accelerator": (256, 1)}
# Smaller groups (fewer targets first, then smaller tiles) while a launch would keep fewer
# than this fraction of the compute units busy.
MIN_BUSY_FRACTION = 0.9
SMALLEST_AUTOMATIC_TILE = 64
# Local memory a CUDA kernel may declare statically (the VJP's tiles are declared so).
STATIC_LOCAL_BYTES = 48 * 1024


class GpuDirectSolver(GpuSolver):
    name = "gpu-direct"
    step_graphs = True  # one kernel launch: nothing comes back to the host
    vjp_in_place = False  # each target's row gathers every body's cotangent

    def __init__(self, *, precision, softening, device, tile_size, targets):
        super().__init__(precision=precision, softening=softening, device=device,
                         tile_size=tile_size, targets=targets)
        info = self.context.info
        if tile_size is not None:
            tile_bytes = tile_size * 4 * self.dtype.itemsize
            if tile_size > info.max_work_group_size or tile_bytes > info.local_memory_bytes:
                raise InvalidInputError(
                    f"tile_size {tile_size} does not fit {info.spec}: work-groups up to "
                    f"{info.max_work_group_size}, local memory {info.local_memory_bytes} bytes")
        self.tile_size = tile_size
        self.targets = targets

    def launch_config(self, n: int) -> tuple[int, int]:
        """(tile size, targets per work-item) for ``n`` bodies: the options where given, else
        the device's preferred pair, made smaller while the launch would keep fewer than
        MIN_BUSY_FRACTION of the compute units busy."""
        info = self.context.info
        preferred_tile, preferred_targets = PREFERRED[info.kind]
        tile = self.tile_size or min(preferred_tile, info.max_work_group_size)
        targets = self.targets or preferred_targets
        wanted_groups = math.ceil(MIN_BUSY_FRACTION * info.compute_units)
        while ceil_div(n, tile * targets) < wanted_groups:
            if self.targets is None and targets > 1:
                targets //= 2
            elif self.tile_size is None and tile > SMALLEST_AUTOMATIC_TILE:
                tile //= 2
            else:
                break
        return tile, targets

    def padding_for(self, n: int) -> int:
        tile, targets = self.launch_config(n)
        return tile * targets

    def _kernel(self, tile: int, targets: int, potential: bool):
        defines = {"REAL_BITS": self.dtype.itemsize * 8, "TILE": tile, "TARGETS": targets,
                   "WITH_POTENTIAL": potential, "ZERO_SOFTENING": self.softening == 0}
        program = self.context.build(["softened_pair.cl", "direct.cl"], package=__package__, defines=defines)
        return program.kernel("direct_accelerations")

    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        tile, targets = self.launch_config(count)
        padded = body.shape[0]
        if padded % (tile * targets):
            raise InvalidInputError(f"{padded} rows are not padded for tile {tile} x {targets}")
        softening2 = self.dtype.type(self.softening ** 2)
        event = self._kernel(tile, targets, potential).launch(
            padded // targets, tile, body, out, np.int32(padded), softening2)
        self.last_launch = {"tile_size": tile, "targets": targets}
        return [event]

    def vjp_tile(self, count: int) -> int:
        """Work-group size of the VJP kernel for ``count`` bodies: the evaluation's tile (so the
        padding fits it), halved while its two staged tiles (bodies and cotangents) pass the
        device's local memory or CUDA's static 48 KiB."""
        tile, _ = self.launch_config(count)
        local_bytes = min(self.context.info.local_memory_bytes, STATIC_LOCAL_BYTES)
        while tile > 1 and 2 * tile * 4 * self.dtype.itemsize > local_bytes:
            tile //= 2
        return tile

    def launch_vjp(self, body: DeviceArray, cotangent: DeviceArray, out: DeviceArray,
                   count: int, *, potential: bool) -> list[KernelEvent]:
        """Queue the VJP of ``launch_accelerations``' evaluation (``kernels/direct_vjp.cl``):
        for the first ``count`` rows of ``body`` and the cotangents ``cotangent`` (padded
        ``real4`` rows (abar_x, abar_y, abar_z, pbar), zero past ``count``; pbar read only
        with ``potential``), write (pos_bar, mass_bar) rows into ``out``."""
        tile = self.vjp_tile(count)
        padded = body.shape[0]
        if padded % tile:
            raise InvalidInputError(f"{padded} rows are not padded for tile {tile}")
        defines = {"REAL_BITS": self.dtype.itemsize * 8, "TILE": tile,
                   "WITH_POTENTIAL": potential, "ZERO_SOFTENING": self.softening == 0}
        program = self.context.build(["softened_pair.cl", "direct_vjp.cl"], package=__package__, defines=defines)
        return [program.kernel("direct_vjp").launch(padded, tile, body, cotangent, out,
                                                    np.int32(padded),
                                                    self.dtype.type(self.softening ** 2))]


SPEC = SolverSpec(
    name="gpu-direct",
    doc="direct summation on a GPU (CUDA or SYCL): exact up to round-off, O(N^2)",
    options=(PRECISION, SOFTENING, DEVICE, TILE_SIZE, TARGETS),
    factory=GpuDirectSolver,
    unavailable_reason=unavailable_reason,
    kind="gpu",
)
