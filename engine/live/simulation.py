"""Simulation: a particle state advanced by a solver with a fixed-step leapfrog.

Kick-drift-kick (default) keeps the accelerations of the last drift, so each step costs one
force evaluation; drift-kick-drift evaluates forces at the half step; ``reversible`` is
drift-kick-drift with positions and velocities on an integer lattice (``engine/lattice.py``), so
``step_back`` undoes steps bit for bit, and it keeps its state on the host whatever the solver
(a GPU solver's forces come through its host interface). The state lives wherever the
solver keeps it (host arrays for CPU solvers, device memory for GPU solvers); positions come back
to the host only when asked for.
"""

from __future__ import annotations

import math
import numbers
from typing import Mapping, NamedTuple

import numpy as np

from ..compute import Snapshot
from ..contracts import SimulationState
from ..diagnostics import Diagnostics
from ..errors import InvalidInputError
from ..initial_conditions import on_device
from ..lattice import Lattice, LatticeState
from ..particles import Particles
from ..solvers import Solver
from ..solvers._gpu import GpuSolver
from ..solvers.auto import AutoSolver

INTEGRATORS = ("kdk", "dkd", "reversible")


def checked_dt(dt) -> float:
    """``dt`` as a float, if it is a positive finite number; else :class:`InvalidInputError`."""
    if isinstance(dt, bool) or not (isinstance(dt, numbers.Real) and math.isfinite(dt)
                                    and dt > 0):
        raise InvalidInputError(f"time step dt must be a positive finite number, got {dt!r}")
    return float(dt)


def checked_step_count(count) -> int:
    """``count`` steps as an int, if it is a whole number of at least 0 (2.0 is 2, not 2.5 or
    NaN); else :class:`InvalidInputError`."""
    if isinstance(count, numbers.Integral) and not isinstance(count, bool):
        value = int(count)
    elif isinstance(count, numbers.Real) and math.isfinite(count) and float(count).is_integer():
        value = int(count)
    else:
        raise InvalidInputError(f"a step count must be a whole number, got {count!r}")
    if value < 0:
        raise InvalidInputError(f"a step count must be 0 or more, got {value}")
    return value


def solver_attributes(requested: Solver, n: int) -> dict:
    """What a recording stores about the solver of a gravity run of ``n`` particles: for
    ``auto``, the solver it chose (and why)."""
    solver = requested.select(n) if isinstance(requested, AutoSolver) else requested
    choice = {} if solver is requested else {"solver_requested": requested.name,
                                             "solver_choice": str(requested.reason)}
    return {"solver": solver.name, "solver_params": dict(solver.params), **choice,
            "softening": float(solver.softening), "G": 1.0,
            "units": "N-body units (G = 1; length, mass and time dimensionless)"}


class DeviceView(NamedTuple):
    """The live state of a device-resident simulation as device arrays (views, no copies)."""

    pos: object
    vel: object
    mass: object


def _check_device_resident(solver: Solver, integrator: str, otherwise: str) -> None:
    """A simulation that starts on the device needs a GPU solver and an integrator whose state
    lives there; ``otherwise`` says what to do instead where the solver's state is on the host."""
    if integrator == "reversible":
        raise InvalidInputError("the reversible integrator keeps its lattice on the host: "
                                "build the Simulation from Particles")
    if not isinstance(solver, GpuSolver):
        raise InvalidInputError(f"solver {solver.name!r} keeps its state in host memory: {otherwise}")


class Simulation:
    model = "gravity"
    tracks_energy = True  # the runner samples the energy error (engine/flock has no energy)

    def __init__(self, particles: Particles, solver: Solver, *, dt: float, integrator: str = "kdk",
                 lattice: Lattice | None = None):
        """``lattice``: the reversible integrator's (default: ``Lattice.for_state``)."""
        bind = ((lambda: LatticeState(solver, particles, lattice)) if integrator == "reversible"
                else (lambda: solver.bind(particles)))
        self._start(solver, dt, integrator, bind,
                    particles.population.copy(), particles.population_names)

    @classmethod
    def from_device(cls, pos, vel, mass, solver: Solver, *, dt: float,
                    integrator: str = "kdk") -> Simulation:
        """A simulation starting from device arrays on a GPU solver's device (CuPy, PyTorch,
        dpnp, ...: DLPack or the CUDA/SYCL array interfaces), copied into the solver's state on
        the device."""
        _check_device_resident(solver, integrator, "build the Simulation from Particles")
        simulation = cls.__new__(cls)
        simulation._start(solver, dt, integrator, lambda: solver.bind_device(pos, vel, mass),
                          None, ("all",))
        return simulation

    @classmethod
    def drawn_on_device(cls, name: str, count: int, solver: Solver, *, seed: int = 0, dt: float,
                        integrator: str = "kdk",
                        parameters: Mapping[str, object] | None = None) -> Simulation:
        """A simulation of ``count`` bodies whose initial conditions ``name`` (``plummer``,
        ``galaxy_collision``) are drawn on a GPU solver's device (``GpuSolver.bind_drawn``): a
        billion bodies start without being built on the host. The distribution and populations
        of the host generator (``ics.plummer``, ``galaxy.galaxy_collision``) for ``count`` and
        ``parameters`` (its other keyword arguments but the seed and precision), not its bodies
        for the same seed."""
        _check_device_resident(solver, integrator, "initial conditions are drawn on a GPU solver's device")
        population, population_names = on_device.populations(name, count, parameters)
        simulation = cls.__new__(cls)
        simulation._start(solver, dt, integrator,
                          lambda: solver.bind_drawn(name, count, seed=seed, parameters=parameters),
                          population, population_names)
        return simulation

    def _start(self, solver, dt, integrator, bind, population, population_names) -> None:
        """Check the options, then ``bind()`` the state (population None: one, unlabelled)."""
        dt = checked_dt(dt)
        if integrator not in INTEGRATORS:
            raise InvalidInputError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
        self.solver = solver
        self.dt = float(dt)
        self.integrator = integrator
        self.time = 0.0
        self.steps = 0
        self._state: SimulationState = bind()
        self._population = (population if population is not None
                            else np.zeros(self._state.n, np.uint8))
        self._population_names = population_names
        self._accelerations_current = False
        self.initial = self.diagnostics()

    @property
    def dt(self) -> float:
        """The time step; set it to change the step of the steps to come (checked as the
        constructor checks it: a positive finite number)."""
        return self._dt

    @dt.setter
    def dt(self, value) -> None:
        self._dt = checked_dt(value)

    @property
    def n(self) -> int:
        return self._state.n

    def step(self, count: int = 1) -> None:
        """Advance ``count`` steps of size ``dt``."""
        state, dt = self._state, self.dt
        kdk = self.integrator == "kdk"

        def step():
            if kdk:
                state.kick(0.5 * dt)
                state.drift(dt)
                state.compute_accelerations()
                state.kick(0.5 * dt)
            else:
                state.drift(0.5 * dt)
                state.compute_accelerations()
                state.kick(dt)
                state.drift(0.5 * dt)

        count = checked_step_count(count)
        for _ in range(count):
            if kdk and not self._accelerations_current:
                state.compute_accelerations()
                self._accelerations_current = True
            # A device state may replay the step from a graph (DeviceState.advance).
            state.advance((self.integrator, dt), step)
            self.steps += 1
            self.time += dt

    def step_back(self, count: int = 1) -> None:
        """Undo ``count`` steps of the reversible integrator: the same steps with ``-dt``, which
        return the lattice state to where it was ``count`` steps ago bit for bit (and go on
        backward in time past the start)."""
        if self.integrator != "reversible":
            raise InvalidInputError(f"step_back needs integrator='reversible', this run's is "
                                    f"{self.integrator!r}")
        state, dt = self._state, self.dt

        def step():
            state.drift(-0.5 * dt)
            state.compute_accelerations()
            state.kick(-dt)
            state.drift(-0.5 * dt)

        for _ in range(checked_step_count(count)):
            state.advance(("reversible", -dt), step)
            self.steps -= 1
            self.time -= dt

    def positions(self):
        """Current positions as a host array (the only transfer a frame needs)."""
        return self._state.positions()

    def device_view(self) -> DeviceView:
        """The live state as device arrays of the solver's device (CuPy arrays on CUDA,
        ``__sycl_usm_array_interface__`` arrays on SYCL): views of the state, no transfer; they
        follow later steps, and writing to them changes the state. For analysis on the GPU
        between steps; ``particles`` stays the host copy."""
        arrays = self._state.device_arrays()
        if arrays is None:
            raise InvalidInputError(f"solver {self.solver.name!r} keeps its state in host memory: "
                                    "use particles or positions()")
        return DeviceView(*arrays)

    def stage_positions(self) -> Snapshot:
        """Current positions as a float32 (n, 3) :class:`~orrery.engine.compute.Snapshot` taken
        without waiting for the device (what a frame is made of)."""
        return self._state.stage_positions()

    def stage_frame(self, encoding: str) -> Snapshot:
        """Current positions as a recorded frame in ``encoding`` (``frame_encoding``: float32,
        float16 or fixed16), a :class:`~orrery.engine.compute.Snapshot`: a device state
        narrows them there and downloads only the stored bytes, without waiting; a host state
        encodes them here, the same bits."""
        return self._state.stage_frame(encoding)

    def prepare_frames(self) -> None:
        """Get ``stage_frame`` ready (a device state compiles its frame kernels), so that a
        recording's first frame costs what every other does."""
        self._state.prepare_frames()

    def stage_state(self) -> tuple[Snapshot, Snapshot]:
        """(positions, velocities) in the run's precision as two snapshots (a keyframe), taken
        on a device state without waiting."""
        return self._state.stage_state()

    def describe(self) -> str:
        return self.solver.describe()

    def theta_in_use(self) -> float | None:
        return self.solver.theta_in_use(self.n)

    def run_attributes(self) -> dict:
        """What a recording of this run stores about it (besides the scenario). For ``auto``,
        the solver it chose for this run (and why), so that a resumed run is this run whatever
        auto would choose on the machine resuming it."""
        return {"dt": self.dt, "integrator": self.integrator, "n": self.n,
                **solver_attributes(self.solver, self.n)}

    @property
    def particles(self) -> Particles:
        """The current state as host :class:`Particles` (synchronised copy)."""
        pos, vel, mass = self._state.snapshot()
        return Particles(pos, vel, mass, self._population.copy(), self._population_names)

    def diagnostics(self) -> Diagnostics:
        """Energies and momenta now, summed where the state lives (costs one potential
        evaluation; a device state downloads only partial sums)."""
        return self._state.diagnostics()

    def energy(self) -> float:
        """Total energy now, summed where the state lives (one potential evaluation; a device
        state downloads only partial sums)."""
        kinetic, potential = self._state.energies()
        return kinetic + potential

    def energy_error(self, diagnostics: Diagnostics | None = None) -> float:
        """Relative energy error since the start, (E - E0) / |E0|; where E0 = 0 (one particle
        at rest, say) there is no relative error and this is the absolute one, E - E0."""
        now = diagnostics.total if diagnostics is not None else self.energy()
        change = now - self.initial.total
        return change / abs(self.initial.total) if self.initial.total != 0 else change
