"""What the panel says in a sentence: the run in one line, and why the window is slow (and what
would help) when it is. Pure functions of the frame's statistics, so they are tested without a
window."""

from __future__ import annotations

import math
import re

from ...engine.frames import FrameStats

# Below this many frames a second the window feels slow enough to say why.
SLOW_FPS = 12.0
# Seconds the rate must stay low before the panel says so (the first frames are always slow).
SLOW_FOR_S = 3.0

# How to get a smooth movie of a run too slow to watch live (the slow line's tooltip).
SMOOTH_MOVIE = ("The window draws a frame for each step. For a smooth movie of a slow run, record "
                "it headless (`orrery run --record run.h5`), then `orrery render run.h5`.")

_ACCURACY = re.compile(r"chosen for accuracy ([0-9.eE+-]+)")


def short_number(value: float) -> str:
    """0.001 -> "1e-3", 0.0005 -> "5e-4", 0.02 -> "0.02": a tolerance as people write it."""
    if value <= 0 or not math.isfinite(value):
        return f"{value:g}"
    exponent = math.floor(math.log10(value))
    mantissa = value / 10.0 ** exponent
    if exponent >= -2 or abs(mantissa - round(mantissa)) > 1e-9:
        return f"{value:g}"
    return f"{round(mantissa)}e{exponent}"


def solver_in_use(description: str) -> str:
    """The solver's name in a runner's description ("auto: cpu-tree (...)" -> "cpu-tree";
    "flock, coherent-grid, ... (...)" -> "flock, coherent-grid")."""
    text = description.removeprefix("auto: ")
    name = re.split(r" \(|;", text, maxsplit=1)[0].strip()
    if name.startswith("flock,"):
        name = ", ".join(part.strip() for part in name.split(",")[:2])
    return name or "starting"


def run_sentence(stats: FrameStats, *, theta_name: str = "theta") -> str:
    """"cpu-tree, theta 0.3 for accuracy 1e-3 · 30,000 particles · 4.8 steps/s": the solver,
    its opening angle (and the accuracy that chose it), the particle count and the rate.
    ``theta_name``: "θ" where the font has the letter."""
    solver = solver_in_use(stats.solver or "")
    theta = stats.theta
    if theta is not None:
        solver += f", {theta_name} {theta:g}"
        accuracy = _ACCURACY.search(stats.solver or "")
        if accuracy:
            solver += f" for accuracy {short_number(float(accuracy.group(1)))}"
    parts = [solver]
    if stats.n:
        parts.append(f"{int(stats.n):,} particles")
    if stats.paused:
        parts.append("paused")
    elif stats.steps_per_second:
        parts.append(f"{stats.steps_per_second:.1f} steps/s")
    return " \u00b7 ".join(parts)


def slow_hint(render_fps: float, stats: FrameStats, *,
              gpu_solver: str | None = None) -> str | None:
    """One line on why the window draws fewer than ``SLOW_FPS`` frames a second and what would
    help, or None when it does not. ``gpu_solver``: a GPU solver this machine offers, if any.

    1. The window draws a frame for each new step, so when a step takes longer than a frame
       should, the solver is the reason: fewer particles or a GPU solver help (and for a smooth
       movie, recording headless and rendering afterwards: ``SMOOTH_MOVIE``, the line's tooltip).
    2. Otherwise drawing is the reason: fewer particles or smaller points help.
    """
    if render_fps >= SLOW_FPS or render_fps <= 0 or stats.paused:
        return None
    seconds = stats.solver_seconds_per_step or 0.0
    if seconds * SLOW_FPS > 1.0:
        on_gpu = (stats.solver or "").removeprefix("auto: ").startswith("gpu")
        remedy = "a smaller N" + (f" or {gpu_solver}" if gpu_solver and not on_gpu else "")
        return f"Slow: {1e3 * seconds:.0f} ms a step; try {remedy}."
    return f"Slow drawing ({render_fps:.0f} fps); try a smaller N or point size."
