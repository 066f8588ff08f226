"""A satellite's initial position and velocity recovered from where its particles end up and
how they move then, by L-BFGS on whole-run gradients (``engine/gradients.py``): the FMM paper's demonstration of a
differentiable simulation, at a size a test can run.

The system is a Hernquist host (mass 1) and a small Plummer satellite on an orbit through it
(:func:`make_system`; :func:`scenario_system` sizes it as the ``satellite`` scenario preset,
``assets/scenarios/satellite.toml``, and ``orrery fit-satellite`` do). The unknowns are the
satellite's offset, six numbers: the position and velocity its centre starts at (every
satellite particle carries the same offset). The loss is
``0.5 * sum (|x_K - target x_K|^2 + |v_K - target v_K|^2)`` over the satellite's particles after
K steps, and its gradient with respect to the offset is the sum of those particles' gradients at
the start. (Positions alone leave the problem nearly degenerate while the satellite holds
together: its particles then move as one, three numbers for six unknowns.) :func:`record_run`
records a run the fit evaluates, for the viewer to replay.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.optimize import minimize

from .errors import InvalidInputError
from .gradients import Progress, ReversibleRun
from .initial_conditions import ics
from .lattice import Lattice
from .live.simulation import Simulation
from .particles import Particles, check_count
from .recording import Recorder

# The satellite's start (position, then velocity) in the scenario, and the truth the fit's
# example recovers: 1.2 from the host's centre, inside its half-mass radius (2.4), moving at 0.7
# where a circular orbit's speed is 0.5: it swings out to 3.1 and back in about 23 time units.
ORBIT = (1.2, 0.0, 0.1, 0.0, 0.7, 0.05)
POPULATIONS = ("host", "satellite")


@dataclass(frozen=True)
class SatelliteSystem:
    """A host and a satellite whose particles are given about its own centre."""

    host: Particles
    satellite: Particles

    @property
    def satellite_slice(self) -> slice:
        return slice(self.host.n, self.host.n + self.satellite.n)

    def particles(self, offset) -> Particles:
        """Host and satellite, the satellite's centre at ``offset[:3]`` moving at ``offset[3:]``."""
        offset = np.asarray(offset, dtype=np.float64)
        return Particles(np.concatenate([self.host.pos, self.satellite.pos + offset[:3]]),
                         np.concatenate([self.host.vel, self.satellite.vel + offset[3:]]),
                         np.concatenate([self.host.mass, self.satellite.mass]),
                         np.repeat(np.arange(2, dtype=np.uint8), [self.host.n, self.satellite.n]),
                         POPULATIONS)


def make_system(host_n: int = 64, satellite_n: int = 16, *, satellite_mass: float = 0.02,
                satellite_size: float = 0.05, seed: int = 0) -> SatelliteSystem:
    """A Hernquist host (mass 1, scale 1) and a Plummer satellite of ``satellite_mass`` scaled
    to ``satellite_size`` (positions and velocities scaled to stay in equilibrium)."""
    host = ics.hernquist(host_n, seed=seed)
    cluster = ics.plummer(satellite_n, seed=seed + 1)
    # Plummer in Henon units has mass 1 and size ~1: r -> r * size, v -> v * sqrt(M / size).
    speed = np.sqrt(satellite_mass / satellite_size)
    satellite = Particles(cluster.pos * satellite_size, cluster.vel * speed,
                          cluster.mass * satellite_mass)
    return SatelliteSystem(host, satellite)


def scenario_system(n: int, *, satellite_fraction: float = 0.125, satellite_mass: float = 0.05,
                    satellite_size: float = 0.1, seed: int = 0) -> SatelliteSystem:
    """:func:`make_system` with ``n`` particles in all, ``satellite_fraction`` of them (at least
    one, and one fewer than all) in the satellite: the system of the ``satellite`` scenario and
    of ``orrery fit-satellite``."""
    n = check_count(n)
    if n < 2:
        raise InvalidInputError(f"a host and a satellite need at least 2 particles, got {n}")
    if not 0 < satellite_fraction < 1:
        raise InvalidInputError(f"satellite_fraction must be between 0 and 1, got "
                                f"{satellite_fraction!r}")
    satellite_n = min(n - 1, max(1, round(n * satellite_fraction)))
    return make_system(n - satellite_n, satellite_n, satellite_mass=satellite_mass,
                       satellite_size=satellite_size, seed=seed)


def host_and_satellite(n: int, *, orbit=ORBIT, seed: int = 0, **system) -> Particles:
    """The ``satellite`` scenario's generator: :func:`scenario_system` (``system``: its
    keywords) with the satellite's centre at ``orbit`` (position and velocity, six numbers);
    populations "host" and "satellite"."""
    orbit = np.asarray(orbit, dtype=np.float64)
    if orbit.shape != (6,) or not np.isfinite(orbit).all():
        raise InvalidInputError(f"orbit must be six finite numbers (position, velocity), got "
                                f"{orbit.tolist()}")
    return scenario_system(n, seed=seed, **system).particles(orbit)


@dataclass(frozen=True)
class FitResult:
    offset: np.ndarray
    loss: float
    iterations: int
    evaluations: int
    converged: bool
    message: str
    lattice: Lattice  # every run of the fit's took its steps on this lattice


def fit(system: SatelliteSystem, solver, *, dt: float, steps: int, target_positions,
        target_velocities, start, max_iterations: int = 200,
        on_iteration: Callable[[int, np.ndarray, float], None] | None = None,
        on_step: Callable[[int, str, int, int], None] | None = None) -> FitResult:
    """The offset whose run ends with the satellite's particles nearest ``target_positions``
    and ``target_velocities`` (the satellite's, (satellite n, 3) each), by L-BFGS from
    ``start``. Every run uses the lattice of the starting guess, so the loss is one function of
    the offset. ``on_iteration(iteration, offset, loss)`` is called after each iteration,
    ``on_step(run, direction, done, total)`` after each step of a run (``direction``
    "forward") and of its backward pass ("backward"), runs counted from 1: an iteration takes
    one run or a few, and a run of many particles and steps takes minutes."""
    target = (np.asarray(target_positions, dtype=np.float64),
              np.asarray(target_velocities, dtype=np.float64))
    lattice = Lattice.for_state(*_state(system.particles(start)), solver.softening)
    satellite = system.satellite_slice
    evaluations = iterations = 0

    def steps_of(direction: str) -> Progress | None:
        """``on_step`` for one pass of the run being evaluated."""
        if on_step is None:
            return None
        run = evaluations
        return lambda done, total: on_step(run, direction, done, total)

    def loss_and_gradient(offset):
        nonlocal evaluations
        evaluations += 1
        run = ReversibleRun(system.particles(offset), solver, dt=dt, steps=steps, lattice=lattice,
                            progress=steps_of("forward"))
        miss_x, miss_v = np.zeros_like(run.positions), np.zeros_like(run.velocities)
        miss_x[satellite] = run.positions[satellite] - target[0]
        miss_v[satellite] = run.velocities[satellite] - target[1]
        gradient = run.backward(miss_x, miss_v, progress=steps_of("backward"))
        loss = 0.5 * float(np.sum(miss_x * miss_x) + np.sum(miss_v * miss_v))
        return loss, np.concatenate(
            [gradient.pos[satellite].sum(axis=0), gradient.vel[satellite].sum(axis=0)])

    def iterated(intermediate_result):
        nonlocal iterations
        iterations += 1
        if on_iteration is not None:
            on_iteration(iterations, intermediate_result.x.copy(),
                         float(intermediate_result.fun))

    result = minimize(loss_and_gradient, np.asarray(start, dtype=np.float64), jac=True,
                      method="L-BFGS-B", callback=iterated,
                      options={"maxiter": max_iterations, "ftol": 0.0, "gtol": 1e-12})
    return FitResult(result.x, float(result.fun), int(result.nit), evaluations,
                     bool(result.success), str(result.message), lattice)


def record_run(path, system: SatelliteSystem, solver, offset, *, dt: float, steps: int,
               every: int = 1, lattice: Lattice | None = None, label: str,
               progress: Progress | None = None) -> None:
    """Record to ``path`` the run :func:`fit` evaluates at ``offset`` (the same reversible
    steps on ``lattice``; None: the run's own, as a target's :class:`ReversibleRun` takes): a
    frame with velocities every ``every`` steps and at the last, keyframes at the recorder's
    cadence and at the end. ``label`` names the run in the file's ``satellite_fit``
    attribute; ``progress(done, total)`` is called after each frame's steps."""
    if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
        raise InvalidInputError(f"every must be a whole number of at least 1, got {every!r}")
    simulation = Simulation(system.particles(offset), solver, dt=dt, integrator="reversible",
                            lattice=lattice)
    source = {"satellite_fit": {"run": label, "offset": [float(x) for x in offset]}}
    with Recorder.for_simulation(path, simulation, scenario="satellite", source=source,
                                 velocities=True) as recorder:
        recorder.append_simulation(simulation)
        while simulation.steps < steps:
            simulation.step(min(every, steps - simulation.steps))
            recorder.append_simulation(simulation)
            if progress is not None:
                progress(simulation.steps, steps)
        recorder.append_last_keyframe(simulation)


def _state(particles: Particles):
    return particles.pos, particles.vel, particles.mass
