"""The simulation engine: particles, initial conditions, solvers, integrators, diagnostics.

Importable without any GUI package.
"""

from .diagnostics import Diagnostics
from .errors import (InvalidInputError, OrreryError, SolverUnavailableError,
                     UnknownSolverError)
from .initial_conditions import ics, scenarios
from .particles import Particles
from .live.simulation import Simulation
from .solvers import make_solver, solver_specs

__all__ = [
    "Diagnostics", "InvalidInputError", "OrreryError", "Particles", "Simulation",
    "SolverUnavailableError", "UnknownSolverError", "ics", "make_solver", "scenarios", "solver_specs",
]
