"""The solver thread's public names; the runner is ``engine/live/runner.py``."""

from .live.runner import RunSettings, SimulationRunner, solver_options

__all__ = ["RunSettings", "SimulationRunner", "solver_options"]
