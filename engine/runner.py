"""The solver thread: a :class:`Simulation` advanced on its own thread, published as frames.

``SimulationRunner`` is the live :class:`~orrery.engine.frames.FrameSource`. Frames are made at
the rate they are read, not the rate steps are made: ``latest()`` hands over the newest frame
and asks for another, and the solver thread takes one (a snapshot of the positions, see
``Simulation.stage_positions``) only after a step that follows such a request, after a control
was applied, or before it goes idle. A GPU state takes that snapshot in queue order on the
device (a staging copy, then an asynchronous download on the copy engine), so the solver never
waits for it; the frame waits for its host copy only when a reader asks for the host array. A
published frame is never written again, so a reader holding it never sees a later step.

Every control (pause, single step, parameter change, solver switch, reset) is queued and applied
by the solver thread between two steps, never during one; a run of steps checks the controls
after every step, so pause and close act at once. Controls of the same kind queued one after the
other merge (the newest value, or the sum of steps), and the queue is bounded. An exception
raised while stepping is caught, stops the simulation and is kept in ``error`` for the viewer to
show; ``reset`` clears it. A recording that fails (an existing file, an unwritable folder, a full
disk) ends with a message in ``recording_error`` and the simulation goes on.
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

from . import frame_encoding, scenarios
from .errors import InvalidInputError, OrreryError
from .flock import FlockSimulation
from .frames import Frame, FrameStats, PublishedFrames
from .recording import Recorder
from .contracts import SteppedSimulation
from .simulation import Simulation
from .solvers import Solver, make_solver, solver_specs

# Most controls waiting for the solver thread; a caller finding the queue full waits up to
# QUEUE_WAIT seconds for room (same-kind controls merge, so only a flood of mixed ones fills it).
MAX_QUEUED_CONTROLS = 64
QUEUE_WAIT = 5.0
# Fewest seconds between two energy samples: each costs a potential evaluation and a download
# of the state, which at a million particles every 25 steps would cost a tenth of the GPU's rate.
ENERGY_INTERVAL = 0.5


class ControlQueueFullError(OrreryError, RuntimeError):
    """The solver thread has not taken the queued controls within ``QUEUE_WAIT`` seconds."""


@dataclass(frozen=True)
class RunSettings:
    """What the solver thread runs: the scenario and the parameters a user may change live.

    ``solver``/``softening``/``dt`` of None take the scenario's own; ``theta`` reaches solvers
    that have it, and None leaves them their own choice (``auto``: the default accuracy, as in
    ``orrery run``; the trees: their default theta). For a flock scenario ``solver`` names where it runs ("cpu" or a device) and
    ``flock`` changes its rules, live.
    """

    scenario: str | scenarios.SnapshotScenario
    n: int | None = None
    seed: int = 0
    solver: str | None = None
    dt: float | None = None
    softening: float | None = None
    theta: float | None = None
    flock: dict | None = None  # rule changes over a flock scenario's own (FlockParameters fields)


class SimulationRunner(PublishedFrames):
    """Advance a simulation on a background thread and publish its latest frame.

    Parameters
    ----------
    settings : RunSettings
        Scenario and parameters to start with.
    energy_every : int, default 25
        Sample the relative energy error at most every this many steps (each sample costs about
        one force evaluation) ...
    energy_interval : float, default ENERGY_INTERVAL
        ... and at most once in this many seconds.
    paused : bool, default False
        Start paused (the first frame is still published).
    solver_factory : callable, default :func:`make_solver`
        ``factory(name, **options) -> Solver``; tests pass fakes here.
    """

    def __init__(self, settings: RunSettings, *, energy_every: int = 25,
                 energy_interval: float = ENERGY_INTERVAL, paused: bool = False,
                 solver_factory: Callable[..., Solver] = make_solver):
        if energy_every < 1:
            raise InvalidInputError(f"energy_every must be >= 1, got {energy_every}")
        if not energy_interval >= 0:
            raise InvalidInputError(f"energy_interval must be >= 0, got {energy_interval}")
        self._energy_every = int(energy_every)
        self._energy_interval = float(energy_interval)
        self._solver_factory = solver_factory
        super().__init__()
        self._commands: deque[list] = deque()
        self._paused = paused
        self._steps_left = 0
        self._stop = False
        self._wanted = False  # a reader has taken the newest frame and wants the next
        self._published = 0
        self._published_step = -1
        self._error: str | None = None
        self._recording_error: str | None = None
        self._energy_history: list[tuple[float, float]] = []
        self._sim: SteppedSimulation | None = None
        self._recorder: Recorder | None = None
        self._record_every = 1
        self._solver_description = ""
        self._theta: float | None = None  # the opening angle the solver uses, where it has one
        self._settings = settings
        self._build(settings)
        self._thread = threading.Thread(target=self._loop, name="orrery-solver", daemon=True)
        self._thread.start()

    # FrameSource ---------------------------------------------------------------------------

    def _frame_taken(self) -> None:
        self._wanted = True  # the solver thread makes the next frame after its next step

    def _stopping(self) -> bool:
        return self._stop

    def close(self, timeout: float | None = None) -> bool:
        """Stop the solver thread and wait for it (it finishes the step in progress first, not
        the steps queued after it), at most ``timeout`` seconds if given. Returns whether the
        thread has ended."""
        with self._condition:
            self._stop = True
            self._condition.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # Controls (any thread) -----------------------------------------------------------------

    def pause(self) -> None:
        """Stop stepping after the step in progress (also ends a run of ``step(count)``)."""
        self._submit("pause", True)

    def resume(self) -> None:
        self._submit("pause", False)

    def step(self, count: int = 1) -> None:
        """Pause and advance ``count`` steps (added to steps still queued), then stay paused."""
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
        self._submit("update", dict(changes))

    def reset(self) -> None:
        """Restart the current scenario from its initial conditions (clears an error)."""
        self._submit("reset", None)

    def start_recording(self, path, *, every: int = 1, precision: str = "f16") -> None:
        """Record the run from the current step into ``path``, one frame every ``every`` steps,
        positions in ``precision`` ('f16', 'f32' or 'fixed16'). The recording stops by itself when the run
        restarts or changes solver (the file describes one run with one solver). A recording
        that cannot be written stops with a message in ``recording_error``; the run goes on."""
        if int(every) < 1:
            raise InvalidInputError(f"every must be >= 1, got {every}")
        self._submit("record", (str(path), int(every), frame_encoding.named(precision)))

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
    def recording_error(self) -> str | None:
        """Why the last recording stopped early (None if it did not, or none was started)."""
        return self._recording_error

    @property
    def frames_published(self) -> int:
        """Frames published since the runner started (for measuring what publishing costs)."""
        return self._published

    @property
    def settings(self) -> RunSettings:
        return self._settings

    @property
    def solver_name(self) -> str:
        """The solver asked for (``auto`` included): the setting, else the scenario's."""
        return self._settings.solver or self._scenario.solver

    @property
    def flock(self):
        """The flock's rules in use (:class:`~orrery.engine.flock.FlockParameters`), or None
        for a gravity run."""
        return self._sim.rules if self._scenario.model == "flock" else None

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
            last = self._commands[-1] if self._commands else None
            if last is not None and last[0] == kind and kind in _MERGE:
                last[1] = _MERGE[kind](last[1], value)
                self._condition.notify_all()
                return
            deadline = time.monotonic() + QUEUE_WAIT
            while len(self._commands) >= MAX_QUEUED_CONTROLS and not self._stop:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._thread.is_alive():
                    raise ControlQueueFullError(
                        f"{len(self._commands)} controls are waiting for the solver thread "
                        f"(its step may be taking long); {kind!r} was not queued")
                self._condition.wait(remaining)
            self._commands.append([kind, value])
            self._condition.notify_all()

    # Solver thread -------------------------------------------------------------------------

    def _wants_steps(self) -> bool:
        return self._error is None and (not self._paused or self._steps_left > 0)

    def _front_is_stale(self) -> bool:
        return self._published_step != self._sim.steps

    def _loop(self) -> None:
        while True:
            with self._condition:
                while (not self._stop and not self._commands and not self._wants_steps()
                       and not self._front_is_stale()):
                    self._condition.wait()
                if self._stop:
                    break
                commands = list(self._commands)
                self._commands.clear()
                self._condition.notify_all()  # callers waiting for room in the queue
            try:
                self._apply(commands)
                stepped = self._wants_steps()
                if stepped:
                    self._advance()
                if commands or (stepped and self._wanted) or not self._wants_steps():
                    self._publish()
            except Exception:  # noqa: BLE001 - any failure must reach the UI, not kill the app
                self._fail(traceback.format_exc())
        self._finish_recording()

    def _fail(self, message: str) -> None:
        with self._condition:
            self._error = message
            self._paused = True
            self._steps_left = 0
        self._finish_recording()
        try:
            self._publish()
        except Exception:  # noqa: BLE001 - the state cannot even be read; the error is kept
            pass

    def _apply(self, commands) -> None:
        for kind, value in commands:
            if kind == "pause":
                if bool(value) != self._paused:
                    self._rate = _RateMeter()  # a pause must not count as slow steps
                self._paused = bool(value)
                self._steps_left = 0
            elif kind == "step":
                if not self._paused:
                    self._rate = _RateMeter()
                self._paused = True
                self._steps_left += int(value)
            elif kind == "reset":
                self._error = None
                self._build(self._settings)
            elif kind == "update":
                self._change(value)
            elif kind == "record":
                self._finish_recording()
                if value is not None:
                    self._begin_recording(*value)

    def _begin_recording(self, path: str, every: int, encoding: str) -> None:
        self._recording_error = None
        try:
            self._recorder = Recorder.for_simulation(path, self._sim,
                                                     scenario=str(self._settings.scenario),
                                                     source=self._scenario.metadata, dtype=encoding)
            self._record_every = every
            self._recorder.append_simulation(self._sim)
        except Exception as error:  # noqa: BLE001 - a recording must not stop the run
            self._recording_failed(error)

    def _record(self) -> None:
        try:
            self._recorder.append_simulation(self._sim)
        except Exception as error:  # noqa: BLE001 - a full disk must not stop the run
            self._recording_failed(error)

    def _recording_failed(self, error: Exception) -> None:
        recorder, self._recorder = self._recorder, None
        self._recording_error = f"recording stopped: {_describe(error)}"
        if recorder is not None:
            try:
                recorder.close()
            except Exception:  # noqa: BLE001 - the first error is the one to show
                pass

    def _finish_recording(self) -> None:
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return
        try:
            recorder.close()
        except Exception as error:  # noqa: BLE001 - the last frames failed: say so, run on
            self._recording_error = f"recording ended with an error: {_describe(error)}"

    def _change(self, changes: dict) -> None:
        new = replace(self._settings, **changes)
        if new.scenario != self._settings.scenario and "flock" not in changes:
            new = replace(new, flock=None)  # rule changes belong to the flock they were made on
        restart = (new.scenario, new.n, new.seed) != (self._settings.scenario, self._settings.n,
                                                     self._settings.seed)
        if restart or self._error is not None:  # after an error, any change starts afresh
            self._error = None
            self._build(new)
        elif (new.solver, new.softening, new.theta) != (self._settings.solver,
                                                        self._settings.softening,
                                                        self._settings.theta):
            self._rebind(new)
        elif new.flock != self._settings.flock:
            self._finish_recording()  # the file's attributes name one set of rules
            self._sim.rules = self._scenario.flock.with_changes(**(new.flock or {}))
            self._solver_description = self._sim.describe()
        if new.dt is not None:
            self._sim.dt = float(new.dt)
        self._settings = new

    def _build(self, settings: RunSettings) -> None:
        self._finish_recording()  # a recording describes one run with one solver
        scenario = scenarios.load(settings.scenario, n=settings.n, seed=settings.seed)
        sim, description = self._make_simulation(scenario, scenario.particles, settings)
        if scenario.start is not None:  # a keyframe's state carries on from its time and step
            sim.time, sim.steps = scenario.start
        with self._condition:  # re-entrant: the new labels and their first frame appear together
            self._scenario = scenario
            self._label(scenario.particles)
            self._commit(sim, description, settings)
            self._publish()

    def _rebind(self, settings: RunSettings) -> None:
        self._finish_recording()
        old = self._sim
        sim, description = self._make_simulation(self._scenario, old.particles, settings)
        sim.time, sim.steps = old.time, old.steps
        with self._condition:
            self._commit(sim, description, settings)

    def _commit(self, sim: SteppedSimulation, description: str, settings: RunSettings) -> None:
        # Called with the lock held, so a reader never sees a population of one run beside the
        # positions of another.
        self._sim = sim
        self._solver_description = description
        self._theta = sim.theta_in_use()
        self._settings = settings
        self._energy_history = [(sim.time, 0.0)]
        self._energy_step, self._energy_at = sim.steps, time.perf_counter()
        self._rate = _RateMeter()

    def _make_simulation(self, scenario, particles, settings: RunSettings):
        dt = settings.dt if settings.dt is not None else scenario.dt
        if scenario.model == "flock":
            sim = FlockSimulation(particles, scenario.flock.with_changes(**(settings.flock or {})),
                                  dt=dt, device=settings.solver or scenario.solver)
            return sim, sim.describe()
        name = settings.solver or scenario.solver
        solver = self._solver_factory(name, **solver_options(name, scenario, settings))
        sim = Simulation(particles, solver, dt=dt, integrator=scenario.integrator)
        # Described after binding: ``auto`` has chosen by then and says which solver and why.
        return sim, sim.describe()

    def _advance(self) -> None:
        sim = self._sim
        start = time.perf_counter()
        sim.step(1)
        end = time.perf_counter()
        self._rate.tick(end - start)
        if self._paused:
            self._steps_left -= 1
        if self._recorder is not None and sim.steps % self._record_every == 0:
            self._record()
        if (sim.tracks_energy and sim.steps - self._energy_step >= self._energy_every
                and end - self._energy_at >= self._energy_interval):
            error = sim.energy_error()
            self._energy_step, self._energy_at = sim.steps, time.perf_counter()
            with self._condition:
                self._energy_history.append((sim.time, error))

    def _publish(self) -> None:
        sim = self._sim
        try:
            snapshot = sim.stage_positions()
        except Exception:
            if self._error is None:
                raise  # reported by the loop, which then publishes the last frame again
            snapshot = None
        with self._condition:
            history = self._energy_history
            stats = FrameStats(
                n=sim.n, solver=self._solver_description, theta=self._theta,
                steps_per_second=0.0 if self._paused else self._rate.steps_per_second,
                solver_seconds_per_step=self._rate.seconds_per_step,
                energy_error=history[-1][1] if len(history) > 1 else None,
                dt=sim.dt, paused=self._paused, error=self._error,
                recording=(None if self._recorder is None else
                           (str(self._recorder.path), self._recorder.frames_appended)),
                recording_error=self._recording_error,
                recording_stats=None if self._recorder is None else self._recorder.stats())
            last = self._front

            def make(sequence: int) -> Frame:
                if snapshot is not None:
                    return Frame(None, sim.time, sim.steps, sequence, stats, snapshot=snapshot)
                if last is not None:  # after an error that left no readable state
                    return last.relabelled(sequence=sequence, stats=stats)
                return Frame(np.zeros((sim.n, 3), np.float32), sim.time, sim.steps, sequence,
                             stats)
            self._published += 1
            self._published_step = sim.steps
            self._wanted = False
            self._publish_frame(make)  # wakes a render loop waiting for a newer frame


def solver_options(name: str, scenario, settings: RunSettings) -> dict:
    """The options solver ``name`` gets for ``scenario`` under ``settings`` (those it knows)."""
    spec = solver_specs().get(name)
    known = {option.name for option in spec.options} if spec else {"softening"}
    options = dict(scenario.solver_options)
    options["softening"] = (settings.softening if settings.softening is not None
                            else scenario.softening)
    if "theta" in known and settings.theta is not None:
        options["theta"] = settings.theta
    return {key: value for key, value in options.items() if key in known}


# How a queued control merges into the same kind queued just before it.
_MERGE = {
    "pause": lambda old, new: new,
    "step": lambda old, new: old + new,
    "update": lambda old, new: {**old, **new},
    "reset": lambda old, new: None,
}


def _describe(error: Exception) -> str:
    return str(error) if isinstance(error, (OrreryError, OSError)) and str(error) else \
        f"{type(error).__name__}: {error}"


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
