"""Scenarios: initial conditions plus the run settings that suit them (time step, softening,
solver). The plain generators of :mod:`orrery.engine.ics` are scenarios with default settings;
presets with their own settings live as TOML files in ``assets/scenarios/``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources

from . import ics
from .errors import InvalidInputError
from .particles import Particles
from .solvers._options import SOFTENING, Option

# The time step of a run that names none (a scenario without [run] dt, ``orrery run --ic``).
DT = Option("dt", float, 1e-3, "time step (N-body units)", minimum=0.0, exclusive_minimum=True)


@dataclass
class Scenario:
    name: str
    description: str
    particles: Particles
    dt: float = DT.default
    softening: float = SOFTENING.default
    solver: str = "auto"
    solver_options: dict = field(default_factory=dict)


def _preset_files() -> dict[str, object]:
    folder = resources.files("orrery") / "assets" / "scenarios"
    if not folder.is_dir():
        return {}
    return {entry.name[:-5]: entry for entry in folder.iterdir() if entry.name.endswith(".toml")}


def names() -> list[str]:
    """Every scenario name: the presets, then the plain generators."""
    return sorted(_preset_files()) + sorted(ics.GENERATORS)


def load(name: str, *, n: int | None = None, seed: int = 0) -> Scenario:
    """Build a scenario by name; ``n`` overrides the preset's particle count."""
    presets = _preset_files()
    if name in presets:
        return _load_preset(name, tomllib.loads(presets[name].read_text()), n=n, seed=seed)
    if name in ics.GENERATORS:
        count = 4096 if n is None else n
        return Scenario(name, f"{name} ({count} particles)", ics.make(name, count, seed=seed))
    raise InvalidInputError(f"unknown scenario {name!r}; choose one of {names()}")


def _load_preset(name: str, preset: dict, *, n: int | None, seed: int) -> Scenario:
    # A preset names a generator (a function in orrery.engine) and its arguments, and the run
    # settings. Keeping generators in code and numbers in TOML lets users copy and edit a preset.
    from importlib import import_module

    module_name, _, function_name = preset["generator"].rpartition(".")
    generator = getattr(import_module(f"orrery.engine.{module_name}"), function_name)
    arguments = dict(preset.get("parameters", {}))
    if n is not None:
        arguments["n"] = n
    run = preset.get("run", {})
    # Initial conditions built for a softening (galaxies in equilibrium) state it once, as a
    # generator parameter; the run uses the same.
    if "softening" in arguments and "softening" in run:
        raise InvalidInputError(f"scenario {name!r} states softening twice ([parameters] and "
                                f"[run]); keep the one in [parameters]")
    softening = arguments.get("softening", run.get("softening", SOFTENING.default))
    return Scenario(
        name=name,
        description=preset.get("description", name),
        particles=generator(seed=seed, **arguments),
        dt=DT.coerce(run.get("dt", DT.default)),
        softening=SOFTENING.coerce(softening),
        solver=run.get("solver", "auto"),
        solver_options=dict(run.get("solver_options", {})),
    )
