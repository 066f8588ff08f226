"""Solver registry: ``make_solver(name, **options)`` and the list of what exists.

Each solver module defines one ``SPEC`` (a :class:`SolverSpec`); adding a solver means adding a
module and naming it in ``_SOLVER_MODULES``.
"""

from __future__ import annotations

import importlib

from ..errors import SolverUnavailableError, UnknownSolverError
from ._base import HostState, Solver
from ..options import Option, SolverSpec

_SOLVER_MODULES = ("reference", "cpu_direct", "cpu_tree", "cpu_fmm", "gpu_direct", "gpu_tree", "gpu_fmm",
                  "auto")


def solver_specs() -> dict[str, SolverSpec]:
    """Every solver Orrery knows, by name (available here or not)."""
    specs = {}
    for module in _SOLVER_MODULES:
        spec = importlib.import_module(f"{__name__}.{module}").SPEC
        specs[spec.name] = spec
    return specs


def split_available(names) -> tuple[list[str], dict[str, str]]:
    """``names`` split into the solvers that can run here (in order) and, for the others, the
    reason each cannot."""
    specs = solver_specs()
    available, unavailable = [], {}
    for name in names:
        reason = specs[name].unavailable_reason()
        if reason is None:
            available.append(name)
        else:
            unavailable[name] = reason
    return available, unavailable


def make_solver(name: str, **options) -> Solver:
    """Create a solver by name; unknown names or options raise :class:`UnknownSolverError`,
    a solver that cannot run here raises :class:`SolverUnavailableError`."""
    specs = solver_specs()
    if name not in specs:
        raise UnknownSolverError(f"unknown solver {name!r}; choose one of {sorted(specs)}")
    spec = specs[name]
    resolved = spec.resolve(options)
    reason = spec.unavailable_reason()
    if reason:
        raise SolverUnavailableError(f"solver {name!r} cannot run here: {reason}")
    return spec.factory(**resolved)


__all__ = ["HostState", "Option", "Solver", "SolverSpec", "make_solver", "solver_specs",
           "split_available"]
