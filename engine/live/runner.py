"""The solver thread: a :class:`Simulation` advanced on its own thread, published as frames.

``SimulationRunner`` is the live :class:`~orrery.engine.frames.FrameSource`. Frames are made at
the rate they are read, not the rate steps are made: ``latest()`` hands over the newest frame
and asks for another, and the solver thread takes one (a snapshot of the positions, see
``Simulation.stage_positions``) only after a step that follows such a request, after a control
was applied, or before it goes idle. A GPU state takes that snapshot in queue order on the
device (a staging copy, then an asynchronous download on the copy engine), so the solver never
waits for it; the frame waits for its host copy only when a reader asks for the host array. A
published frame is never written again, so a reader holding it never sees a later step.

Every control (pause, single step, parameter change, solver switch, reset) is queued
(``_runner_commands``) and applied by the solver thread between two steps, never during one; a
run of steps checks the controls after every step, so pause and close act at once. An exception
raised while stepping is caught, stops the simulation and is kept in ``error`` for the viewer to
show; ``reset`` clears it. A recording that fails ends with a message in ``recording_error`` and
the simulation goes on (``_runner_recording``). What a change of settings rebuilds, and how,
is ``_runner_build``; what is measured of the run for its frames, ``_runner_meters``.
No GUI package is imported here.
"""

from __future__ import annotations

import atexit
import threading
import time
import traceback
import weakref
from typing import Callable

import numpy as np

from .. import frame_encoding
from ..contracts import SteppedSimulation
from ..errors import InvalidInputError
from ..frames import Frame, FrameStats, PublishedFrames
from ..solvers import Solver, make_solver
from ._runner_build import (NEW_RULES, NEW_SOLVER, RESTART, RunSettings, load_run,
                            make_simulation, settings_change, solver_options)
from ._runner_commands import MAX_QUEUED_CONTROLS, ControlQueue, ControlQueueFullError
from ._runner_meters import ENERGY_INTERVAL, RunMeters
from ._runner_recording import LiveRecording

__all__ = ["ENERGY_INTERVAL", "MAX_QUEUED_CONTROLS", "ControlQueueFullError", "RunSettings",
           "SimulationRunner", "solver_options"]


# How long the interpreter's exit waits for a runner left running to finish its step in progress.
EXIT_STEP_TIMEOUT = 60.0
# Runners whose solver thread may be stepping. They are stopped when the interpreter exits: a
# daemon thread still inside the native core while its static objects (the thread pool) are
# destroyed ended the process with std::terminate ("terminate called without an active
# exception", SIGABRT) whenever a script ended without closing its runner.
_RUNNING: weakref.WeakSet[SimulationRunner] = weakref.WeakSet()


@atexit.register
def _close_running() -> None:
    for runner in list(_RUNNING):
        runner.close(timeout=EXIT_STEP_TIMEOUT)


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
        self._meters = RunMeters(energy_every, energy_interval)
        self._solver_factory = solver_factory
        super().__init__()
        self._commands = ControlQueue(self._condition, taking=lambda: self._thread.is_alive(),
                                      stopped=lambda: self._stop)
        self._paused = paused
        self._steps_left = 0
        self._stop = False
        self._wanted = False  # a reader has taken the newest frame and wants the next
        self._published = 0
        self._published_step = -1
        self._error: str | None = None
        self._recording = LiveRecording()
        self._sim: SteppedSimulation | None = None
        self._solver_description = ""
        self._theta: float | None = None  # the opening angle the solver uses, where it has one
        self._settings = settings
        self._build(settings)
        self._thread = threading.Thread(target=self._loop, name="orrery-solver", daemon=True)
        self._thread.start()
        _RUNNING.add(self)

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
        self._commands.submit("pause", True)

    def resume(self) -> None:
        self._commands.submit("pause", False)

    def step(self, count: int = 1) -> None:
        """Pause and advance ``count`` steps (added to steps still queued), then stay paused."""
        self._commands.submit("step", int(count))

    def update(self, **changes) -> None:
        """Change run settings between steps: any :class:`RunSettings` field. A new scenario,
        ``n`` or ``seed`` restarts from new initial conditions; a new solver, softening or theta
        continues from the current state with a new solver."""
        unknown = set(changes) - set(RunSettings.__dataclass_fields__)
        if unknown:
            raise InvalidInputError(f"unknown run settings {sorted(unknown)}")
        if changes.get("dt") is not None and not changes["dt"] > 0:
            raise InvalidInputError(f"time step dt must be positive, got {changes['dt']}")
        self._commands.submit("update", dict(changes))

    def reset(self) -> None:
        """Restart the current scenario from its initial conditions (clears an error)."""
        self._commands.submit("reset", None)

    def start_recording(self, path, *, every: int = 1, precision: str = "f16") -> None:
        """Record the run from the current step into ``path``, one frame every ``every`` steps,
        positions in ``precision`` ('f16', 'f32' or 'fixed16'). The recording stops by itself when the run
        restarts or changes solver (the file describes one run with one solver). A recording
        that cannot be written stops with a message in ``recording_error``; the run goes on."""
        if int(every) < 1:
            raise InvalidInputError(f"every must be >= 1, got {every}")
        self._commands.submit("record", (str(path), int(every), frame_encoding.named(precision)))

    def stop_recording(self) -> None:
        """Finish the recording (every frame queued so far is written)."""
        self._commands.submit("record", None)

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
        return self._recording.error

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
        return self._meters.energy_history()

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
                commands = self._commands.take()
            try:
                self._apply(commands)
                stepped = self._wants_steps()
                if stepped:
                    self._advance()
                if commands or (stepped and self._wanted) or not self._wants_steps():
                    self._publish()
            except Exception:  # noqa: BLE001 - any failure must reach the UI, not kill the app
                self._fail(traceback.format_exc())
        self._recording.finish()

    def _fail(self, message: str) -> None:
        with self._condition:
            self._error = message
            self._paused = True
            self._steps_left = 0
        self._recording.finish()
        try:
            self._publish()
        except Exception:  # noqa: BLE001 - the state cannot even be read; the error is kept
            pass

    def _apply(self, commands) -> None:
        for kind, value in commands:
            if kind == "pause":
                if bool(value) != self._paused:
                    self._meters.restart_rate()  # a pause must not count as slow steps
                self._paused = bool(value)
                self._steps_left = 0
            elif kind == "step":
                if not self._paused:
                    self._meters.restart_rate()
                self._paused = True
                self._steps_left += int(value)
            elif kind == "reset":
                self._error = None
                self._build(self._settings)
            elif kind == "update":
                self._change(value)
            elif kind == "record":
                if value is None:
                    self._recording.finish()
                else:
                    path, every, encoding = value
                    self._recording.begin(path, every, encoding, self._sim,
                                          scenario=str(self._settings.scenario),
                                          source=self._scenario.metadata)

    def _change(self, changes: dict) -> None:
        new, change = settings_change(self._settings, changes)
        if change == RESTART or self._error is not None:  # after an error, any change
            self._error = None                             # starts afresh
            self._build(new)
        elif change == NEW_SOLVER:
            self._rebind(new)
        elif change == NEW_RULES:
            self._recording.finish()  # the file's attributes name one set of rules
            self._sim.rules = self._scenario.flock.with_changes(**(new.flock or {}))
            self._solver_description = self._sim.describe()
        if new.dt is not None:
            if float(new.dt) != self._sim.dt:
                self._recording.finish()  # the file's dt attribute names one step
            self._sim.dt = float(new.dt)
        self._settings = new

    def _build(self, settings: RunSettings) -> None:
        self._recording.finish()  # a recording describes one run with one solver
        scenario, sim, description = load_run(settings, self._solver_factory)
        with self._condition:  # re-entrant: the new labels and their first frame appear together
            self._scenario = scenario
            self._label(scenario.particles)
            self._commit(sim, description, settings)
            self._publish()

    def _rebind(self, settings: RunSettings) -> None:
        self._recording.finish()
        old = self._sim
        sim, description = make_simulation(self._scenario, old.particles, settings,
                                           self._solver_factory)
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
        self._meters.start(sim)

    def _advance(self) -> None:
        sim = self._sim
        start = time.perf_counter()
        sim.step(1)
        end = time.perf_counter()
        self._meters.rate.tick(end - start)
        if self._paused:
            self._steps_left -= 1
        self._recording.stepped(sim)
        self._meters.sample_energy(sim, end)

    def _publish(self) -> None:
        sim = self._sim
        try:
            snapshot = sim.stage_positions()
        except Exception:
            if self._error is None:
                raise  # reported by the loop, which then publishes the last frame again
            snapshot = None
        with self._condition:
            # An accuracy check may have measured, or retuned the setting, since the last frame.
            self._solver_description, self._theta = sim.describe(), sim.theta_in_use()
            rate = self._meters.rate
            stats = FrameStats(
                n=sim.n, solver=self._solver_description, theta=self._theta,
                steps_per_second=0.0 if self._paused else rate.steps_per_second,
                solver_seconds_per_step=rate.seconds_per_step,
                energy_error=self._meters.energy_error(),
                dt=sim.dt, paused=self._paused, error=self._error,
                recording=self._recording.progress, recording_error=self._recording.error,
                recording_stats=self._recording.stats())
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
