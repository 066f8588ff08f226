"""Branching a live run off a replay: the viewer's "Branch" control (key B), kept free of GL and
imgui so it runs without a display.

A recording's keyframes hold the whole state in the run's precision (``engine/recording``), so
the frame on screen can be continued as a live simulation: from the last keyframe at or before
it, with the recorded solver, options, dt and integrator (``scenarios.KeyframeScenario``). For
a deterministic solver the branch follows the recorded run bit for bit until it is changed;
pausing, changing the solver or recording it work as for any live run.
"""

from __future__ import annotations

from ...engine.errors import OrreryError
from ...engine.recording import Player
from ...engine.runner import RunSettings, SimulationRunner
from ...engine.initial_conditions.scenarios import KeyframeScenario


def can_branch(source) -> bool:
    """Whether ``source`` is a replay of a recording (a Player with a file), which may hold
    keyframes to branch from."""
    return isinstance(source, Player) and source.path is not None


def branch_settings(player) -> RunSettings:
    """The settings of a live run continuing ``player``'s shown frame from the keyframe at or
    before it; raises RecordingError (no keyframes, none early enough) with the reason."""
    frame = int(player.position)
    player.keyframe_before(frame)  # the reason, now, if there is no keyframe to start from
    attributes = player.attributes
    params = attributes.get("solver_params") if isinstance(attributes.get("solver_params"),
                                                           dict) else {}
    theta = params.get("theta")
    extra = {} if theta is None else {"theta": float(theta)}  # the recorded opening angle
    return RunSettings(scenario=KeyframeScenario(str(player.path), frame), **extra)


def branch(player, *, paused: bool = True) -> SimulationRunner:
    """A live :class:`SimulationRunner` continuing ``player``'s shown frame (see
    :func:`branch_settings`), paused by default so the first frame shown is the keyframe's."""
    if not can_branch(player):
        raise BranchError("only a replay of a recording can be branched into a live run")
    return SimulationRunner(branch_settings(player), paused=paused)


class BranchError(OrreryError, ValueError):
    """The source on screen has nothing a live run could start from."""
