"""Building the runner's runs: the settings a user may change live, what a change of them takes
(new initial conditions, a new solver on the current state, new flock rules), and the
simulation a scenario and its settings make."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import scenarios
from ..contracts import SteppedSimulation
from ..flock import FlockSimulation
from ..particles import Particles
from ..solvers import Solver, solver_specs
from .simulation import Simulation

# What a change of settings takes (settings_change).
RESTART = "restart"  # new initial conditions: another scenario, count or seed
NEW_SOLVER = "new solver"  # the current state carries on with another solver
NEW_RULES = "new rules"  # a flock's rules change from the next step
NOTHING_REBUILT = "nothing rebuilt"  # at most dt changes


@dataclass(frozen=True)
class RunSettings:
    """What the solver thread runs: the scenario and the parameters a user may change live.

    ``solver``/``softening``/``dt`` of None take the scenario's own; ``theta`` reaches solvers
    that have it, and None leaves them their own choice (``auto``: the default accuracy, as in
    ``orrery run``; the trees: their default theta). For a flock scenario ``solver`` names where
    it runs ("cpu" or a device) and ``flock`` changes its rules, live. ``check_accuracy``
    reaches ``auto`` (which passes it on to an approximate solver) and a solver the scenario
    gives an ``accuracy``, while no ``theta`` is set: other solvers, a theta set live and a flock
    run unchecked, where ``orrery run`` refuses the combination.
    """

    scenario: str | scenarios.SnapshotScenario
    n: int | None = None
    seed: int = 0
    solver: str | None = None
    dt: float | None = None
    softening: float | None = None
    theta: float | None = None
    check_accuracy: int | None = None
    flock: dict | None = None  # rule changes over a flock scenario's own (FlockParameters fields)


def settings_change(settings: RunSettings, changes: dict) -> tuple[RunSettings, str]:
    """``settings`` with ``changes``, and what the change takes (``RESTART``, ``NEW_SOLVER``,
    ``NEW_RULES`` or ``NOTHING_REBUILT``). Rule changes belong to the flock they were made on:
    another scenario drops them unless the change brings its own."""
    new = replace(settings, **changes)
    if new.scenario != settings.scenario and "flock" not in changes:
        new = replace(new, flock=None)
    if (new.scenario, new.n, new.seed) != (settings.scenario, settings.n, settings.seed):
        return new, RESTART
    if (new.solver, new.softening, new.theta, new.check_accuracy) != (
            settings.solver, settings.softening, settings.theta, settings.check_accuracy):
        return new, NEW_SOLVER
    if new.flock != settings.flock:
        return new, NEW_RULES
    return new, NOTHING_REBUILT


def load_run(settings: RunSettings, solver_factory: Callable[..., Solver]):
    """(scenario, simulation, its description) of ``settings``, from the scenario's initial
    conditions (a keyframe's state carries on from its time and step)."""
    scenario = scenarios.load(settings.scenario, n=settings.n, seed=settings.seed)
    sim, description = make_simulation(scenario, scenario.particles, settings, solver_factory)
    if scenario.start is not None:
        sim.time, sim.steps = scenario.start
    return scenario, sim, description


def make_simulation(scenario, particles: Particles, settings: RunSettings,
                    solver_factory: Callable[..., Solver]) -> tuple[SteppedSimulation, str]:
    """The simulation of ``scenario`` from ``particles`` under ``settings``, and its
    description (a solver's after binding: ``auto`` has chosen by then and says which and
    why)."""
    dt = settings.dt if settings.dt is not None else scenario.dt
    if scenario.model == "flock":
        sim = FlockSimulation(particles, scenario.flock.with_changes(**(settings.flock or {})),
                              dt=dt, device=settings.solver or scenario.solver)
        return sim, sim.describe()
    name = settings.solver or scenario.solver
    solver = solver_factory(name, **solver_options(name, scenario, settings))
    sim = Simulation(particles, solver, dt=dt, integrator=scenario.integrator)
    return sim, sim.describe()


def solver_options(name: str, scenario, settings: RunSettings) -> dict:
    """The options solver ``name`` gets for ``scenario`` under ``settings`` (those it knows)."""
    spec = solver_specs().get(name)
    known = {option.name for option in spec.options} if spec else {"softening"}
    options = dict(scenario.solver_options)
    options["softening"] = (settings.softening if settings.softening is not None
                            else scenario.softening)
    if "theta" in known and settings.theta is not None:
        options["theta"] = settings.theta
    # A check verifies an accuracy: auto's (its default unless a theta is set) or the preset's.
    if settings.check_accuracy is not None and "theta" not in options and (
            name == "auto" or "accuracy" in options):
        options["check_accuracy"] = settings.check_accuracy
    return {key: value for key, value in options.items() if key in known}
