"""Scenarios: initial conditions plus the run settings that suit them (time step, softening,
solver). The plain generators of :mod:`orrery.engine.ics` are scenarios with default settings;
presets with their own settings live as TOML files in ``assets/scenarios/``. A preset with
``model = "flock"`` is a flock: its ``[flock]`` table holds the rules
(:class:`~orrery.engine.flock.FlockParameters`) and its generator receives them as ``rules``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources

from . import ics
from .errors import InvalidInputError
from .flock import FlockParameters
from .particles import Particles


@dataclass
class Scenario:
    name: str
    description: str
    particles: Particles
    dt: float = 1e-3
    softening: float = 0.01
    solver: str = "auto"
    solver_options: dict = field(default_factory=dict)
    model: str = "gravity"  # or "flock"
    flock: FlockParameters | None = None  # the rules, for a flock


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
    model = preset.get("model", "gravity")
    if model not in ("gravity", "flock"):
        raise InvalidInputError(f"preset {name!r}: model must be 'gravity' or 'flock', got {model!r}")
    rules = FlockParameters.from_mapping(preset.get("flock", {})) if model == "flock" else None
    if rules is not None:
        arguments["rules"] = rules
    run = preset.get("run", {})
    return Scenario(
        name=name,
        description=preset.get("description", name),
        particles=generator(seed=seed, **arguments),
        dt=float(run.get("dt", 1e-3)),
        softening=float(run.get("softening", 0.01)),
        solver=run.get("solver", "auto"),
        solver_options=dict(run.get("solver_options", {})),
        model=model,
        flock=rules,
    )
