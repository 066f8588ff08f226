"""The controls a served client can send, each checked by the rule the command line applies to
the same setting (``app/command_line.py`` and the solvers' option records), then applied.

Run controls act on the source and every client sees their effect (a live run through
:class:`~orrery.engine.runner.SimulationRunner`'s queued controls, a replay through
:class:`~orrery.engine.recording.Player`); view controls (exposure, point size, colour, render
mode, colour map) belong to the client that sent them, as its camera does. A recording started
from a client goes to a fresh name in the server's recordings folder: a client names no path.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...engine import scenarios
from ...engine.errors import InvalidInputError
from ...engine.recording import Player
from ...engine.runner import SimulationRunner
from ...engine.solvers import solver_specs
from ...engine.options import SOFTENING, THETA
from ..command_line import integer, number
from ..render import COLOUR_MODES, colour_maps
from ._distributed import DistributedRun
from ._protocol import ProtocolError

RENDER_MODES = ("sprites", "density")
# Most steps one "step" control asks for: a click is one; a script may ask for a batch.
MAX_STEP_CONTROL = 10_000
# Most frames per second of recording a client may ask the replay to play (either way).
MAX_REPLAY_SPEED = 10_000.0


class ControlRefused(InvalidInputError):
    """A well-formed control whose value the option's rule refuses: the client is told, and its
    connection stays open."""


@dataclass
class ViewSettings:
    """How one client's pictures look."""

    exposure: float = 0.6
    point_size: float = 3.0
    colour: str = "population"
    render: str = "sprites"
    colour_map: str = "magma"

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class RecordingRequest:
    """Where and how a client's Record control writes."""

    folder: Path | None
    every: int = 5
    started: list = field(default_factory=list)  # the paths written, newest last


def _cli_rule(parse: Callable[[str], Any]):
    """A value through the command line's own flag type (the same message on refusal)."""
    def check(value):
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ControlRefused(f"must be a number, got {value!r}")
        try:
            return parse(str(value))
        except argparse.ArgumentTypeError as error:
            raise ControlRefused(str(error)) from None
    return check


def _option_rule(option):
    def check(value):
        try:
            return option.coerce(value)
        except InvalidInputError as error:
            raise ControlRefused(str(error)) from None
    return check


def _choice(choices_of: Callable[[], tuple]):
    def check(value):
        choices = tuple(choices_of())
        if value not in choices:
            raise ControlRefused(f"must be one of {', '.join(map(str, choices))}; got {value!r}")
        return value
    return check


def _flag(value):
    if not isinstance(value, bool):
        raise ControlRefused(f"must be true or false, got {value!r}")
    return value


def _nothing(value):
    return None


def solver_choices() -> tuple[str, ...]:
    return ("auto", *sorted(name for name in solver_specs() if name != "auto"))


# name -> (rule, what it changes: "run", "replay" or "view")
RUN_CONTROLS = {
    "pause": _flag,
    "step": _cli_rule(integer(minimum=1)),
    "restart": _nothing,
    "scenario": _choice(scenarios.names),
    "n": _cli_rule(integer(minimum=1)),
    "seed": _cli_rule(integer(minimum=0)),
    "solver": _choice(solver_choices),
    "dt": _cli_rule(number(above=0)),
    "theta": _option_rule(THETA),
    "softening": _option_rule(SOFTENING),
    "record": _flag,
    "record_every": _cli_rule(integer(minimum=1)),
}
REPLAY_CONTROLS = {
    "pause": _flag,
    "step": _cli_rule(integer(minimum=-MAX_STEP_CONTROL)),
    "seek": _cli_rule(integer(minimum=0)),
    "speed": _cli_rule(number(at_least=-MAX_REPLAY_SPEED)),
}
VIEW_CONTROLS = {
    "exposure": _cli_rule(number(above=0)),
    "point_size": _cli_rule(number(above=0)),
    "colour": _choice(lambda: COLOUR_MODES),
    "render": _choice(lambda: RENDER_MODES),
    "colour_map": _choice(colour_maps),
}


# A run over MPI ranks steps as rank 0 decides (``_distributed``); changing what runs would
# mean rebuilding every rank's share.
DISTRIBUTED_CONTROLS = {name: RUN_CONTROLS[name] for name in ("pause", "step")}
_EVERY_CONTROL = {*RUN_CONTROLS, *REPLAY_CONTROLS, *VIEW_CONTROLS}


def controls_for(source) -> dict:
    """The controls a client of ``source`` may send, by name."""
    run = RUN_CONTROLS if isinstance(source, SimulationRunner) else \
        DISTRIBUTED_CONTROLS if isinstance(source, DistributedRun) else \
        REPLAY_CONTROLS if isinstance(source, Player) else {}
    return {**run, **VIEW_CONTROLS}


def check(source, name: str, value):
    """``value`` as the control ``name`` takes it; ProtocolError for a name no source takes,
    ControlRefused for a control this source does not offer (a replay's ``solver``) or a value
    its rule refuses."""
    offered = controls_for(source)
    rule = offered.get(name)
    if rule is None and name in _EVERY_CONTROL:
        raise ControlRefused(f"{name}: not a control of this run (it takes "
                             f"{', '.join(sorted(offered))})")
    if rule is None:
        raise ProtocolError(f"unknown control {name!r}")
    try:
        checked = rule(value)
    except ControlRefused as error:
        raise ControlRefused(f"{name}: {error}") from None
    if name == "step" and abs(checked) > MAX_STEP_CONTROL:
        raise ControlRefused(f"step: at most {MAX_STEP_CONTROL} steps at once, got {checked}")
    if name == "speed" and checked > MAX_REPLAY_SPEED:
        raise ControlRefused(f"speed: at most {MAX_REPLAY_SPEED:g}, got {checked}")
    return checked


def apply(source, view: ViewSettings, recording: RecordingRequest, name: str, value) -> None:
    """Apply a checked control: to ``view`` if it is a view control, else to the source."""
    if name in VIEW_CONTROLS:
        setattr(view, name, value)
    elif isinstance(source, (SimulationRunner, DistributedRun)):
        _apply_run(source, recording, name, value)
    else:
        _apply_replay(source, name, value)


def _apply_run(runner: SimulationRunner, recording: RecordingRequest, name: str, value) -> None:
    if name == "pause":
        runner.pause() if value else runner.resume()
    elif name == "step":
        runner.step(value)
    elif name == "restart":
        runner.reset()
    elif name == "record_every":
        recording.every = value
    elif name == "record":
        if not value:
            runner.stop_recording()
            return
        if recording.folder is None:
            raise ControlRefused("record: this server records nothing (start it with "
                                 "--recordings DIR)")
        from ..viewer._panel import new_recording_path

        path = recording.folder / new_recording_path(runner.settings.scenario).name
        recording.started.append(path)
        runner.start_recording(path, every=recording.every)
    else:
        runner.update(**{name: value})


def _apply_replay(player: Player, name: str, value) -> None:
    if name == "pause":
        player.pause() if value else player.play()
    elif name == "step":
        player.step(value)
    elif name == "seek":
        if value >= player.frame_count:
            raise ControlRefused(f"seek: the recording has {player.frame_count} frames, "
                                 f"got {value}")
        player.seek(value)
    elif name == "speed":
        if value == 0:
            raise ControlRefused("speed: must not be 0 (pause instead)")
        player.speed = value


def run_settings(source) -> dict:
    """What every client is shown of the run's settings (after any client changed them)."""
    if isinstance(source, SimulationRunner):
        settings, frame = source.settings, source.latest()
        return {"kind": "live", "scenario": str(settings.scenario),
                "scenarios": list(scenarios.names()),
                "n": frame.stats.n if frame else settings.n, "seed": settings.seed,
                "solver": source.solver_name, "solvers": list(solver_choices()),
                "dt": frame.stats.dt if frame else settings.dt,
                "theta": settings.theta, "softening": source.softening,
                "paused": source.paused}
    if isinstance(source, DistributedRun):
        return {"kind": "live", "scenario": source.scenario, "scenarios": [source.scenario],
                "solver": source.solver_name, "solvers": [source.solver_name],
                "n": source.simulation.n, "dt": source.simulation.dt, "paused": source.paused}
    if isinstance(source, Player):
        return {"kind": "replay", "frames": source.frame_count, "position": source.position,
                "playing": source.playing, "speed": source.speed}
    return {"kind": "other"}
