"""The simulation's public names; it is ``engine/live/simulation.py``."""

from .live.simulation import INTEGRATORS, Simulation

__all__ = ["INTEGRATORS", "Simulation"]
