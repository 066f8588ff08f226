"""``cpu-direct``: native direct summation, SIMD (dispatched at run time) and multithreaded."""

from ... import _native
from ._base import Solver
from ._options import PRECISION, SOFTENING, THREADS, SolverSpec


class CpuDirectSolver(Solver):
    name = "cpu-direct"

    def __init__(self, *, precision, softening, threads):
        super().__init__(precision=precision, softening=softening, threads=threads)
        self.threads = threads or 0
        self._kernel = (_native.direct_accelerations_f32 if precision == "f32"
                        else _native.direct_accelerations_f64)

    def _compute(self, pos, mass, potential):
        return self._kernel(pos, mass, self.softening, self.threads, potential)


SPEC = SolverSpec(
    name="cpu-direct",
    doc="direct summation on the CPU: exact up to round-off, O(N^2)",
    options=(PRECISION, SOFTENING, THREADS),
    factory=CpuDirectSolver,
)
