"""``cpu-direct``: native direct summation, SIMD (dispatched at run time) and multithreaded.

Bit-identical for any thread count; ``simd`` pins the instruction set (tests run every level).
"""

from ... import _native
from ..cpu_features import simd_level
from ._base import Solver
from ..options import PRECISION, SIMD, SOFTENING, THREADS, SolverSpec


class CpuDirectSolver(Solver):
    name = "cpu-direct"

    def __init__(self, *, precision, softening, threads, simd):
        # Resolved once here, so ORRERY_SIMD changing later cannot change a running solver.
        self.simd_info = simd_level(simd)
        super().__init__(precision=precision, softening=softening, threads=threads,
                         simd=self.simd_info["level"])
        self.threads = threads or 0
        self.simd = self.simd_info["level"]
        self._kernel = (_native.direct_accelerations_f32 if precision == "f32"
                        else _native.direct_accelerations_f64)

    def _compute(self, pos, mass, potential):
        return self._kernel(pos, mass, self.softening, self.threads, potential, self.simd)

    def _extra_stats(self) -> dict:
        return {"simd": self.simd, "threads": self.threads or _native.hardware_threads()}


SPEC = SolverSpec(
    name="cpu-direct",
    doc="direct summation on the CPU: exact up to round-off, O(N^2)",
    options=(PRECISION, SOFTENING, THREADS, SIMD),
    factory=CpuDirectSolver,
)
