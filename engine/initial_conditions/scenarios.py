"""Scenarios: initial conditions plus the run settings that suit them (time step, softening,
solver). The plain generators of :mod:`.ics` are scenarios with default settings;
presets with their own settings live as TOML files in ``assets/scenarios/``. A preset with
``model = "flock"`` is a flock: its ``[flock]`` table holds the rules
(:class:`~orrery.engine.flock.FlockParameters`) and its generator receives them as ``rules``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable

import numpy as np

from ..errors import InvalidInputError
from ..flock import FlockParameters
from ..options import SOFTENING, Option
from ..particles import Particles
from . import ics

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
    model: str = "gravity"  # or "flock"
    flock: FlockParameters | None = None  # the rules, for a flock
    # Where the particles came from, for recordings (a snapshot's file and unit conversion).
    metadata: dict = field(default_factory=dict)
    # (time, step) the run starts at: a keyframe's, for a run branched off a recording.
    start: tuple[float, int] | None = None
    integrator: str = "kdk"


def _preset_files() -> dict[str, object]:
    folder = resources.files("orrery") / "assets" / "scenarios"
    if not folder.is_dir():
        return {}
    return {entry.name[:-5]: entry for entry in folder.iterdir() if entry.name.endswith(".toml")}


def names() -> list[str]:
    """Every scenario name: the presets, then the plain generators."""
    return sorted(_preset_files()) + sorted(ics.GENERATORS)


@dataclass(frozen=True)
class SnapshotScenario:
    """A scenario read from another code's snapshot file (``--load FILE``), usable wherever a
    scenario name is: ``load(SnapshotScenario(path))``."""

    path: str
    family: str | None = None

    def __str__(self) -> str:
        return self.path if self.family is None else f"{self.path} ({self.family})"


@dataclass(frozen=True)
class KeyframeScenario:
    """A run continued from a recording's keyframe: the last one at or before frame ``frame``
    (None: the last keyframe), with the recorded solver, options, dt and integrator; usable
    wherever a scenario name is (the viewer branches a live run off a replay with it)."""

    path: str
    frame: int | None = None

    def __str__(self) -> str:
        return f"{self.path} (keyframe at or before frame {self.frame})"


def model(name: str) -> str:
    """Which model scenario ``name`` runs, "gravity" or "flock", without building it."""
    presets = _preset_files()
    if name in presets:
        return tomllib.loads(presets[name].read_text()).get("model", "gravity")
    return "gravity"


def load(name: str | SnapshotScenario, *, n: int | None = None, seed: int = 0) -> Scenario:
    """Build a scenario by name (or from a snapshot); ``n`` overrides the preset's particle
    count (for a snapshot: a random subset of ``n`` particles, scaled to the total mass)."""
    if isinstance(name, SnapshotScenario):
        return from_snapshot(name, n=n, seed=seed)
    if isinstance(name, KeyframeScenario):
        return from_keyframe(name)
    return recipe(name, n=n).build(seed)


@dataclass(frozen=True)
class Recipe:
    """A named scenario before its particles are drawn: the generator, its arguments and the
    run settings (a preset's, or the defaults for a plain generator)."""

    name: str
    description: str
    generator: Callable[..., Particles]
    parameters: dict
    dt: float = DT.default
    softening: float = SOFTENING.default
    solver: str = "auto"
    solver_options: dict = field(default_factory=dict)
    model: str = "gravity"
    flock: FlockParameters | None = None

    def build(self, seed: int) -> Scenario:
        return Scenario(name=self.name, description=self.description,
                        particles=self.generator(seed=seed, **self.parameters), dt=self.dt,
                        softening=self.softening, solver=self.solver,
                        solver_options=dict(self.solver_options), model=self.model,
                        flock=self.flock)


# Particles of a plain generator's scenario (``--ic plummer``) when no count is given.
DEFAULT_COUNT = 4096


def recipe(name: str, *, n: int | None = None) -> Recipe:
    """The recipe of the preset or plain generator ``name``; ``n`` overrides its particle count."""
    presets = _preset_files()
    if name in presets:
        return _preset_recipe(name, tomllib.loads(presets[name].read_text()), n=n)
    if name in ics.GENERATORS:
        count = DEFAULT_COUNT if n is None else n
        return Recipe(name, f"{name} ({count} particles)", ics.GENERATORS[name], {"n": count})
    raise InvalidInputError(f"unknown scenario {name!r}; choose one of {names()}")


def _preset_recipe(name: str, preset: dict, *, n: int | None) -> Recipe:
    # A preset names a generator (a function in a module of orrery.engine, such as
    # initial_conditions.ics.plummer) and its arguments, and the run settings. Keeping
    # generators in code and numbers in TOML lets users copy and edit a preset.
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
    # Initial conditions built for a softening (galaxies in equilibrium) state it once, as a
    # generator parameter; the run uses the same.
    if "softening" in arguments and "softening" in run:
        raise InvalidInputError(f"scenario {name!r} states softening twice ([parameters] and "
                                f"[run]); keep the one in [parameters]")
    softening = arguments.get("softening", run.get("softening", SOFTENING.default))
    return Recipe(
        name=name,
        description=preset.get("description", name),
        generator=generator,
        parameters=arguments,
        dt=DT.coerce(run.get("dt", DT.default)),
        softening=SOFTENING.coerce(softening),
        solver=run.get("solver", "auto"),
        solver_options=dict(run.get("solver_options", {})),
        model=model,
        flock=rules,
    )


def from_snapshot(source: SnapshotScenario, *, n: int | None = None, seed: int = 0) -> Scenario:
    """A scenario from a snapshot file, with run settings estimated from the data.

    Other codes' files carry no Orrery settings, so they are estimated: the softening is a
    twentieth of the mean particle spacing inside the half-mass radius r_h (``0.05 r_h
    (N / 10^4)^(-1/3)``), the time step 1/200 of the dynamical time ``sqrt(r_h^3 / (G M))``.
    Gas particles are evolved as collisionless (no hydrodynamics).
    """
    from ..snapshots import load_snapshot

    snapshot = load_snapshot(source.path, family=source.family)
    particles = snapshot.particles
    if n is not None and n < particles.n:
        if n < 1:
            raise InvalidInputError(f"n must be at least 1, got {n}")
        keep = np.sort(np.random.default_rng(seed).choice(particles.n, size=n, replace=False))
        scale = particles.mass.sum(dtype=np.float64) / particles.mass[keep].sum(dtype=np.float64)
        particles = Particles(particles.pos[keep], particles.vel[keep],
                              particles.mass[keep] * scale, particles.population[keep],
                              particles.population_names)
    radius, total = half_mass_radius(particles), float(particles.mass.sum(dtype=np.float64))
    softening = 0.05 * radius * (particles.n / 1e4) ** (-1.0 / 3.0)
    dt = np.sqrt(radius**3 / total) / 200.0
    return Scenario(name=str(source), description=f"snapshot {source} ({snapshot.format}, "
                    f"{particles.n} particles, units {snapshot.units.length} / "
                    f"{snapshot.units.mass})", particles=particles, dt=float(dt),
                    softening=float(softening), metadata=snapshot.attributes())


def half_mass_radius(particles: Particles, *, sample: int = 200_000) -> float:
    """Radius about the centre of mass holding half the mass (from a sample of large sets)."""
    stride = max(1, particles.n // sample)
    pos = particles.pos[::stride].astype(np.float64)
    mass = particles.mass[::stride].astype(np.float64)
    centre = (pos * mass[:, None]).sum(axis=0) / mass.sum()
    radii = np.linalg.norm(pos - centre, axis=1)
    order = np.argsort(radii)
    cumulative = np.cumsum(mass[order])
    radius = float(radii[order][np.searchsorted(cumulative, 0.5 * cumulative[-1])])
    return radius if radius > 0 else 1.0


def from_keyframe(source: KeyframeScenario) -> Scenario:
    """The state and settings of a recording's keyframe (``resume.keyframe_start``) as a
    scenario: its particles, dt, softening, solver and options, starting at its time and step."""
    from ..live.resume import keyframe_start

    start = keyframe_start(source.path, from_frame=source.frame)
    options = dict(start.solver_options)
    softening = options.pop("softening", SOFTENING.default)
    return Scenario(name=str(source), description=f"branched off {source.path} at step "
                    f"{start.step} (keyframe {start.keyframe})", particles=start.particles,
                    dt=start.dt, softening=float(softening), solver=start.solver,
                    solver_options=options, start=(start.time, start.step),
                    integrator=start.integrator,
                    metadata={"branched_from": str(source.path), "branched_from_step": start.step})
