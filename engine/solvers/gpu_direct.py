"""``gpu-direct``: direct summation on a GPU compute device (CUDA through CuPy, SYCL through
dpctl), tiled through local memory; kernel in ``orrery/kernels/direct.cl``. O(N^2), exact up to
round-off, float32 or (where the device has it) float64."""

from __future__ import annotations

import numpy as np

from ..compute import DeviceArray, KernelEvent, unavailable_reason
from ..errors import InvalidInputError
from ._gpu import GpuSolver
from ._options import DEVICE, PRECISION, SOFTENING, Option, SolverSpec

TILE_SIZE = Option("tile_size", int, 256,
                   "bodies staged per local-memory tile, also the work-group size",
                   choices=(32, 64, 128, 256, 512, 1024))
TARGETS = Option("targets", int, None,
                 "target bodies each work-item sums for (each local-memory read then feeds that "
                 "many interactions; default: 2 on a GPU, 1 on a CPU device)", choices=(1, 2, 4))


class GpuDirectSolver(GpuSolver):
    name = "gpu-direct"

    def __init__(self, *, precision, softening, device, tile_size, targets):
        super().__init__(precision=precision, softening=softening, device=device,
                         tile_size=tile_size, targets=targets)
        info = self.context.info
        if targets is None:
            targets = 2 if info.kind == "gpu" else 1
            self.params["targets"] = targets
        tile_bytes = tile_size * 4 * self.dtype.itemsize
        if tile_size > info.max_work_group_size or tile_bytes > info.local_memory_bytes:
            raise InvalidInputError(
                f"tile_size {tile_size} does not fit {info.spec}: work-groups up to "
                f"{info.max_work_group_size}, local memory {info.local_memory_bytes} bytes")
        self.tile_size = tile_size
        self.targets = targets
        self.padding = tile_size * targets

    def _kernel(self, potential: bool):
        defines = {"REAL_BITS": self.dtype.itemsize * 8, "TILE": self.tile_size,
                   "TARGETS": self.targets,
                   "WITH_POTENTIAL": potential, "ZERO_SOFTENING": self.softening == 0}
        program = self.context.build(["direct.cl"], defines=defines)
        return program.kernel("direct_accelerations")

    def launch_accelerations(self, body: DeviceArray, out: DeviceArray, count: int, *,
                             potential: bool) -> list[KernelEvent]:
        padded = body.shape[0]
        softening2 = self.dtype.type(self.softening ** 2)
        event = self._kernel(potential).launch(padded // self.targets, self.tile_size, body, out,
                                                np.int32(padded), softening2)
        return [event]


SPEC = SolverSpec(
    name="gpu-direct",
    doc="direct summation on a GPU (CUDA or SYCL): exact up to round-off, O(N^2)",
    options=(PRECISION, SOFTENING, DEVICE, TILE_SIZE, TARGETS),
    factory=GpuDirectSolver,
    unavailable_reason=unavailable_reason,
)
