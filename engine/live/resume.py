"""Continuing a recorded run from one of its keyframes: a run built from a recording, beside the
runner that builds live runs (the recording package stores and reads runs, and builds none).

A keyframe holds the whole state in the run's precision, and the file's attributes hold the
solver, its options, the integrator and dt, so the continued run is the original one: the
kick-drift-kick leapfrog keeps the accelerations of its last drift, and the first step of the
continued run recomputes them from the stored positions, which for a deterministic solver
(cpu-direct, cpu-tree, reference) gives the same bits. GPU solvers that sum in a run-dependent
order agree to their rounding instead (``docs/recording-format.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, RecordingError
from ..input_files import reading
from ..options import SOFTENING
from ..particles import Particles
from ..recording import RecordingFile
from ..solvers import make_solver, solver_specs
from .simulation import INTEGRATORS, Simulation, checked_dt


@dataclass(frozen=True)
class Resumed:
    """A simulation set to a recording's keyframe, and what it came from."""

    simulation: Simulation
    attributes: dict  # the original recording's, for the continued recording to carry on
    keyframe: int
    path: str
    keyframe_step: int = 0  # the step of the keyframe the run started from
    replayed: int = 0  # steps run from the keyframe to reach the frame asked for


def resume(path, *, from_frame: int | None = None, solver_options: dict | None = None) -> Resumed:
    """The run recorded in ``path``, continued from frame ``from_frame`` (default: the file's
    last keyframe): from the last keyframe at or before it, replayed from there to the frame's
    step (the recorded run's own steps: for a deterministic solver the frame's state exactly).
    ``solver_options`` override the recorded ones (another device, say; changing the physics
    loses the exact continuation)."""
    start = keyframe_start(path, from_frame=from_frame)
    options = {**start.solver_options, **(solver_options or {})}
    simulation = Simulation(start.particles, make_solver(start.solver, **options), dt=start.dt,
                            integrator=start.integrator)
    simulation.time, simulation.steps = start.time, start.step
    replayed = start.frame_step - start.step
    simulation.step(replayed)
    return Resumed(simulation, start.attributes, start.keyframe, str(path), start.step, replayed)


@dataclass(frozen=True)
class KeyframeStart:
    """What a run continued from a keyframe starts with: the state and the recorded settings."""

    particles: Particles
    time: float
    step: int
    solver: str
    solver_options: dict
    dt: float
    integrator: str
    attributes: dict
    keyframe: int
    frame_step: int  # the step of the frame asked for (the keyframe's own when none was)


def keyframe_start(path, *, from_frame: int | None = None) -> KeyframeStart:
    """The state of the last keyframe at or before frame ``from_frame`` of ``path`` (default:
    the last keyframe) and the settings it was run with (:func:`resume` builds on it, and so
    does a live run branched off a recording in the viewer)."""
    with reading(path, "recording"), RecordingFile(path) as recording:
        index = recording.keyframe_before(from_frame)
        positions, velocities = recording.read_keyframe(index)
        attributes = dict(recording.attributes)
        time, step = float(recording.keyframe_times[index]), int(recording.keyframe_steps[index])
        frame_step = step if from_frame is None else int(recording.steps[from_frame])
        try:
            particles = Particles(positions, velocities,
                                  recording.in_run_order(recording.masses)
                                  .astype(positions.dtype),
                                  recording.in_run_order(recording.population),
                                  recording.population_names)
        except InvalidInputError as error:
            raise RecordingError(f"{path}: keyframe {index}: {error}: damaged") from None
        solver, options, dt, integrator = _run_settings(path, attributes)
        _check_clock(path, dt, index, recording)
    if integrator not in INTEGRATORS:
        raise RecordingError(f"{path}: integrator {integrator!r} is not one of {INTEGRATORS}")
    return KeyframeStart(particles, time, step, solver, options, dt, integrator, attributes,
                         index, frame_step)


# How far a keyframe's time may stray from what its step and dt say (relative): a float64 sum
# of dt, step after step, strays far less.
_CLOCK_TOLERANCE = 1e-6


def _check_clock(path, dt: float, index: int, recording: RecordingFile) -> None:
    """Keyframe ``index`` agrees with the run's dt (from the keyframe before it) and with the
    frame recorded at its step: a dt, time or step edited after the fact would otherwise
    continue some other run."""
    times, steps = recording.keyframe_times, recording.keyframe_steps
    time, step = float(times[index]), int(steps[index])
    if index > 0 and step > steps[index - 1]:
        per_step = (time - float(times[index - 1])) / (step - int(steps[index - 1]))
        if not math.isclose(per_step, dt, rel_tol=_CLOCK_TOLERANCE):
            raise RecordingError(
                f"{path}: its keyframes advance {per_step:g} a step from step "
                f"{int(steps[index - 1])} to {step}, but its dt attribute is {dt:g}: damaged, "
                "or dt changed while it was recorded")
    same_step = np.flatnonzero(recording.steps == step)
    if same_step.size:
        frame_time = float(recording.times[same_step[0]])
        if not math.isclose(frame_time, time, rel_tol=_CLOCK_TOLERANCE,
                            abs_tol=_CLOCK_TOLERANCE * dt):
            raise RecordingError(f"{path}: keyframe {index} at step {step} has time {time:g}, "
                                 f"but its frame at that step has {frame_time:g}: damaged")


def _run_settings(path, attributes: dict) -> tuple[str, dict, float, str]:
    """The solver name and options, dt and integrator a recording was made with."""
    model = attributes.get("model", "gravity")
    if not isinstance(model, str):  # an array here compares element-wise: say it is damaged
        raise RecordingError(f"{path}: its model attribute {model!r:.80} is not a name: damaged")
    if model != "gravity":
        raise RecordingError(f"{path} records a {model!r:.80} run: --resume continues gravity "
                             "runs")
    missing = [name for name in ("solver", "solver_params", "dt", "integrator")
               if name not in attributes]
    if missing:
        raise RecordingError(f"{path} lacks the run setting(s) {missing} a restart needs")
    name, params = attributes["solver"], attributes["solver_params"]
    if not isinstance(params, dict):
        raise RecordingError(f"{path}: solver_params is not a table of options: damaged")
    spec = solver_specs().get(name) if isinstance(name, str) else None
    if spec is None:
        raise RecordingError(f"{path} was recorded with solver {name!r:.80}, unknown to this "
                             "Orrery")
    known = {option.name for option in spec.options}
    options = {key: value for key, value in params.items() if key in known and value is not None}
    dt = attributes["dt"]
    try:
        dt = checked_dt(dt)
    except InvalidInputError:
        raise RecordingError(f"{path}: its dt {dt!r:.80} is not a positive finite number: "
                             "damaged") from None
    integrator = attributes["integrator"]
    if not isinstance(integrator, str):
        raise RecordingError(f"{path}: integrator {integrator!r:.80} is not a name: damaged")
    _check_constants(path, attributes, options if "softening" in known else None)
    return name, options, dt, integrator


def _check_constants(path, attributes: dict, options: dict | None) -> None:
    """G, where recorded, is Orrery's 1; the softening, where recorded beside the solver's
    options, is the one they give (``options``: None for a solver without one)."""
    gravity = attributes.get("G", 1.0)
    if not _is_number(gravity) or gravity != 1.0:
        raise RecordingError(f"{path}: its G attribute {gravity!r:.80} is not Orrery's G = 1: "
                             "damaged, or not an Orrery run")
    if "softening" not in attributes or options is None:
        return
    recorded, used = attributes["softening"], options.get("softening", SOFTENING.default)
    if not _is_number(recorded) or recorded != used:
        raise RecordingError(f"{path}: its softening attribute {recorded!r:.80} differs from "
                             f"its solver_params' {used!r}: damaged")


def _is_number(value) -> bool:
    number = isinstance(value, (int, float, np.integer, np.floating))
    return number and not isinstance(value, bool)
