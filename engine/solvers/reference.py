"""``reference``: float64 direct summation with compensated (Neumaier) sums: the truth every
other solver is measured against. O(N^2) and deliberately unoptimised beyond threading."""

from ... import _native
from ._base import Solver
from ..options import SOFTENING, THREADS, Option, SolverSpec


class ReferenceSolver(Solver):
    name = "reference"

    def __init__(self, *, softening, threads, precision="f64"):
        super().__init__(precision="f64", softening=softening, threads=threads)
        self.threads = threads or 0

    def _compute(self, pos, mass, potential):
        return _native.reference_accelerations(pos, mass, self.softening, self.threads, potential)


SPEC = SolverSpec(
    name="reference",
    doc="double precision, compensated summation, O(N^2): the accuracy yardstick",
    options=(Option("precision", str, "f64", "always f64", choices=("f64",)), SOFTENING, THREADS),
    factory=ReferenceSolver,
)
