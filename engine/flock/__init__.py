"""Flocking (Reynolds boids): the second model behind the viewer, recorder and benchmarks.

:class:`FlockParameters` holds the rules as plain data, :func:`initial_flock` makes seeded
starts, :class:`FlockSimulation` steps them on the CPU (native, threads and SIMD) or on a compute
device (``flock.cl``), and :mod:`.reference` is the NumPy yardstick. docs/flocking.md tells the
whole story.
"""

from ._initial import initial_flock
from ._parameters import (CELL_WIDTHS, OPTIONS, RULE_OPTIONS, SEARCH_OPTIONS, SEARCHES,
                          FlockParameters)
from ._simulation import FlockSimulation

__all__ = ["CELL_WIDTHS", "OPTIONS", "RULE_OPTIONS", "SEARCHES", "SEARCH_OPTIONS",
           "FlockParameters", "FlockSimulation", "initial_flock"]
