"""The solver thread: a :class:`Simulation` advanced on its own thread, published as frames.

``SimulationRunner`` is the live :class:`~orrery.engine.frames.FrameSource`. The solver thread
steps the simulation; after each step it copies the positions into a fresh float32 array (the
back buffer, filled outside any lock) and swaps it in as the front frame under a lock. A published
frame is never written again, so a reader holding it never sees a later step.

Every control (pause, single step, parameter change, solver switch, reset) is queued and applied
by the solver thread between two steps, never during one. An exception raised while stepping is
caught, stops the simulation and is kept in ``error`` for the viewer to show; ``reset`` clears it.
No GUI package is imported here.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from . import scenarios
from .errors import InvalidInputError
from .frames import Frame, FrameSource
from .recording import Recorder
from .simulation import Simulation
from .solvers import Solver, make_solver, solver_specs


@dataclass(frozen=True)
class RunSettings:
    """What the solver thread runs: the scenario and the parameters a user may change live.

    ``solver``/``softening``/``dt`` of None take the scenario's own; ``theta`` reaches solvers
    that have it.
    """

    scenario: str | scenarios.SnapshotScenario
    n: int | None = None
    seed: int = 0
    solver: str | None = None
    dt: float | None = None
    softening: float | None = None
    theta: float = 0.5


class SimulationRunner(FrameSource):
    """Advance a simulation on a background thread and publish its latest frame.

    Parameters
    ----------
    settings : RunSettings
        Scenario and parameters to start with.
    energy_every : int, default 25
        Sample the relative energy error every this many steps (each sample costs about one
        force evaluation).
    paused : bool, default False
        Start paused (the first frame is still published).
    solver_factory : callable, default :func:`make_solver`
        ``factory(name, **options) -> Solver``; tests pass fakes here.
    """

    def __init__(self, settings: RunSettings, *, energy_every: int = 25, paused: bool = False,
                 solver_factory: Callable[..., Solver] = make_solver):
        if energy_every < 1:
            raise InvalidInputError(f"energy_every must be >= 1, got {energy_every}")
        self._energy_every = int(energy_every)
        self._solver_factory = solver_factory
        self._condition = threading.Condition()
        self._commands: deque[tuple[str, object]] = deque()
        self._paused = paused
        self._stop = False
        self._front: Frame | None = None
        self._sequence = 0
        self._error: str | None = None
        self._energy_history: list[tuple[float, float]] = []
        self._sim: Simulation | None = None
        self._recorder: Recorder | None = None
        self._record_every = 1
        self._solver_description = ""
        self._settings = settings
        self._build(settings)
        self._thread = threading.Thread(target=self._loop, name="orrery-solver", daemon=True)
        self._thread.start()

    # FrameSource ---------------------------------------------------------------------------

    @property
    def population(self) -> np.ndarray:
        return self._population

    @property
    def population_names(self) -> tuple[str, ...]:
        return self._population_names

    @property
    def masses(self) -> np.ndarray:
        """The run's particle masses (for density images); they change only with the scenario."""
        return self._scenario.particles.mass

    def latest(self) -> Frame | None:
        with self._condition:
            return self._front

    def close(self, timeout: float | None = None) -> bool:
        """Stop the solver thread and wait for it (it finishes the step in progress first), at
        most ``timeout`` seconds if given. Returns whether the thread has ended."""
        with self._condition:
            self._stop = True
            self._condition.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # Controls (any thread) -----------------------------------------------------------------

    def pause(self) -> None:
        self._submit("pause", True)

    def resume(self) -> None:
        self._submit("pause", False)

    def step(self, count: int = 1) -> None:
        """Advance ``count`` steps, then stay paused."""
        self._submit("pause", True)
        self._submit("step", int(count))

    def update(self, **changes) -> None:
        """Change run settings between steps: any :class:`RunSettings` field. A new scenario,
        ``n`` or ``seed`` restarts from new initial conditions; a new solver, softening or theta
        continues from the current state with a new solver."""
        unknown = set(changes) - set(RunSettings.__dataclass_fields__)
        if unknown:
            raise InvalidInputError(f"unknown run settings {sorted(unknown)}")
        if changes.get("dt") is not None and not changes["dt"] > 0:
            raise InvalidInputError(f"time step dt must be positive, got {changes['dt']}")
        self._submit("update", changes)

    def reset(self) -> None:
        """Restart the current scenario from its initial conditions (clears an error)."""
        self._submit("reset", None)

    def start_recording(self, path, *, every: int = 1, precision: str = "f16") -> None:
        """Record the run from the current step into ``path``, one frame every ``every`` steps,
        positions in ``precision`` ('f16' or 'f32'). The recording stops by itself when the run
        restarts or changes solver (the file describes one run with one solver)."""
        if int(every) < 1:
            raise InvalidInputError(f"every must be >= 1, got {every}")
        if precision not in ("f16", "f32"):
            raise InvalidInputError(f"precision must be 'f16' or 'f32', got {precision!r}")
        self._submit("record", (str(path), int(every), precision))

    def stop_recording(self) -> None:
        """Finish the recording (every frame queued so far is written)."""
        self._submit("record", None)

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def error(self) -> str | None:
        """The last exception raised on the solver thread (with traceback), or None."""
        return self._error

    @property
    def settings(self) -> RunSettings:
        return self._settings

    @property
    def solver_name(self) -> str:
        """The solver asked for (``auto`` included): the setting, else the scenario's."""
        return self._settings.solver or self._scenario.solver

    @property
    def softening(self) -> float:
        """The softening in use: the setting, else the scenario's."""
        chosen = self._settings.softening
        return chosen if chosen is not None else self._scenario.softening

    @property
    def solver_description(self) -> str:
        return self._solver_description

    @property
    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def energy_history(self) -> tuple[np.ndarray, np.ndarray]:
        """Sampled (time, relative energy error) since the last restart or solver change."""
        with self._condition:
            samples = list(self._energy_history)
        if not samples:
            return np.zeros(0), np.zeros(0)
        times, errors = zip(*samples)
        return np.asarray(times), np.asarray(errors)

    def _submit(self, kind: str, value) -> None:
        with self._condition:
            self._commands.append((kind, value))
            self._condition.notify_all()

    # Solver thread -------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._condition:
                while not self._stop and not self._commands and (self._paused or self._error):
                    self._condition.wait()
                if self._stop:
                    break
                commands = list(self._commands)
                self._commands.clear()
            try:
                steps_requested = self._apply(commands)
                if commands:
                    self._publish()
                if self._error is None:
                    for _ in range(steps_requested if self._paused else 1):
                        self._advance()
            except Exception:  # noqa: BLE001 - any failure must reach the UI, not kill the app
                with self._condition:
                    self._error = traceback.format_exc()
                    self._paused = True
                self._finish_recording(after_error=True)
                self._publish()
        self._finish_recording()

    def _apply(self, commands) -> int:
        steps = 0
        for kind, value in commands:
            if kind == "pause":
                if bool(value) != self._paused:
                    self._rate = _RateMeter()  # a pause must not count as slow steps
                self._paused = bool(value)
            elif kind == "step":
                steps += int(value)
            elif kind == "reset":
                self._error = None
                self._build(self._settings)
            elif kind == "update":
                self._change(value)
            elif kind == "record":
                self._finish_recording()
                if value is not None:
                    self._begin_recording(*value)
        return steps

    def _begin_recording(self, path: str, every: int, precision: str) -> None:
        dtype = "float16" if precision == "f16" else "float32"
        self._recorder = Recorder.for_simulation(path, self._sim,
                                                 scenario=str(self._settings.scenario),
                                                 source=self._scenario.metadata, dtype=dtype)
        self._record_every = every
        self._recorder.append_simulation(self._sim)

    def _finish_recording(self, *, after_error: bool = False) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        try:
            recorder.close()
        except Exception:  # noqa: BLE001 - the first error is already shown; keep that one
            if not after_error:
                raise

    def _change(self, changes: dict) -> None:
        new = replace(self._settings, **changes)
        restart = (new.scenario, new.n, new.seed) != (self._settings.scenario, self._settings.n,
                                                     self._settings.seed)
        if restart or self._error is not None:  # after an error, any change starts afresh
            self._error = None
            self._build(new)
        elif (new.solver, new.softening, new.theta) != (self._settings.solver,
                                                        self._settings.softening,
                                                        self._settings.theta):
            self._rebind(new)
        if new.dt is not None:
            self._sim.dt = float(new.dt)
        self._settings = new

    def _build(self, settings: RunSettings) -> None:
        self._finish_recording()  # a recording describes one run with one solver
        scenario = scenarios.load(settings.scenario, n=settings.n, seed=settings.seed)
        sim, description = self._make_simulation(scenario, scenario.particles, settings)
        with self._condition:  # re-entrant: the new labels and their first frame appear together
            self._scenario = scenario
            self._population = scenario.particles.population
            self._population_names = scenario.particles.population_names
            self._commit(sim, description, settings)
            self._publish()

    def _rebind(self, settings: RunSettings) -> None:
        self._finish_recording()
        old = self._sim
        sim, description = self._make_simulation(self._scenario, old.particles, settings)
        sim.time, sim.steps = old.time, old.steps
        with self._condition:
            self._commit(sim, description, settings)

    def _commit(self, sim: Simulation, description: str, settings: RunSettings) -> None:
        # Called with the lock held, so a reader never sees a population of one run beside the
        # positions of another.
        self._sim = sim
        self._solver_description = description
        self._settings = settings
        self._energy_history = [(sim.time, 0.0)]
        self._rate = _RateMeter()

    def _make_simulation(self, scenario, particles, settings: RunSettings):
        name = settings.solver or scenario.solver
        solver = self._solver_factory(name, **self._solver_options(name, scenario, settings))
        dt = settings.dt if settings.dt is not None else scenario.dt
        sim = Simulation(particles, solver, dt=dt)
        # Described after binding: ``auto`` has chosen by then and says which solver and why.
        return sim, solver.describe()

    @staticmethod
    def _solver_options(name: str, scenario, settings: RunSettings) -> dict:
        spec = solver_specs().get(name)
        known = {option.name for option in spec.options} if spec else {"softening"}
        options = dict(scenario.solver_options)
        options["softening"] = (settings.softening if settings.softening is not None
                                else scenario.softening)
        if "theta" in known:
            options["theta"] = settings.theta
        return {key: value for key, value in options.items() if key in known}

    def _advance(self) -> None:
        start = time.perf_counter()
        self._sim.step(1)
        self._rate.tick(time.perf_counter() - start)
        if self._recorder is not None and self._sim.steps % self._record_every == 0:
            self._recorder.append_simulation(self._sim)
        if self._sim.steps % self._energy_every == 0:
            error = self._sim.energy_error()
            with self._condition:
                self._energy_history.append((self._sim.time, error))
        self._publish()

    def _publish(self) -> None:
        sim = self._sim
        back = np.array(sim.positions(), dtype=np.float32, copy=True)
        back.flags.writeable = False
        with self._condition:
            history = self._energy_history
            stats = {
                "n": sim.n,
                "solver": self._solver_description,
                "steps_per_second": 0.0 if self._paused else self._rate.steps_per_second,
                "solver_seconds_per_step": self._rate.seconds_per_step,
                # None until the first sample after a (re)start
                "energy_error": history[-1][1] if len(history) > 1 else None,
                "dt": sim.dt,
                "paused": self._paused,
                "error": self._error,
                "recording": (None if self._recorder is None else
                              (str(self._recorder.path), self._recorder.frames_appended)),
            }
            self._sequence += 1
            self._front = Frame(back, sim.time, sim.steps, self._sequence, stats)


class _RateMeter:
    """Steps per second and solver seconds per step over the last ``window`` steps."""

    def __init__(self, window: int = 32):
        self._ends: deque[float] = deque(maxlen=window)
        self._durations: deque[float] = deque(maxlen=window)

    def tick(self, seconds: float) -> None:
        self._ends.append(time.perf_counter())
        self._durations.append(seconds)

    @property
    def steps_per_second(self) -> float:
        if len(self._ends) < 2:
            return 1.0 / self._durations[-1] if self._durations and self._durations[-1] > 0 else 0.0
        span = self._ends[-1] - self._ends[0]
        return (len(self._ends) - 1) / span if span > 0 else 0.0

    @property
    def seconds_per_step(self) -> float:
        return float(np.median(self._durations)) if self._durations else 0.0
