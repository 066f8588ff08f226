"""The control panel: a one-line summary of the run, the run's buttons, then collapsible sections
(scenario, solver, view, statistics and the energy-error plot), most used first. It fits a
1280x720 window, and on a HiDPI display (``scale_style``) it reads as at scale 1: the window is as
tall as its open sections and never taller than the screen. Records where its main widgets are, so
scripts can click them."""

from __future__ import annotations

import datetime
import math
import re
from pathlib import Path

import numpy as np
from imgui_bundle import imgui, implot

from ...engine import flock, scenarios
from ...engine.compute import list_devices
from ...engine.errors import InvalidInputError
from ...engine.frames import FrameStats
from ...engine.runner import SimulationRunner
from ...engine.solvers import solver_specs
from ...engine.options import THETA
from ..render import (COLOUR_MODES, DENSITY_QUANTITIES, DensityStyle, PointStyle, ToneMap,
                      colour_maps)
from ._summary import SLOW_FOR_S, SMOOTH_MOVIE, run_sentence, slow_hint

# How particles can be drawn: light of point sprites, or a kernel-splatted density image.
RENDER_MODES = ("sprites", "density")

# Panel width at ImGui's default 13-pixel font; it grows with the font (HiDPI).
PANEL_WIDTH = 330
_DEFAULT_FONT_SIZE = 13.0
# Gap between the panels and the window's edges, at scale 1 (window pixels).
PANEL_MARGIN = 10.0
# Share of the panel's width a slider takes; its label, with the value, goes to the right.
_SLIDER_SHARE = 0.55
_RED = imgui.ImVec4(1.0, 0.4, 0.35, 1.0)
_AMBER = imgui.ImVec4(1.0, 0.75, 0.3, 1.0)
_DIM = imgui.ImVec4(0.7, 0.7, 0.7, 1.0)
# Where the record button writes: recordings/ under the working directory (as the README says).
RECORDINGS_FOLDER = Path("recordings")


def live_ratio(stats: FrameStats) -> float | None:
    """Steps per second over the rate the solver's own step time allows (1 / seconds per step):
    the share of the solver's speed the live run keeps; None while unknown or paused."""
    seconds = stats.solver_seconds_per_step or 0.0
    rate = stats.steps_per_second or 0.0
    return rate * seconds if seconds > 0 and rate > 0 else None


def new_recording_path(scenario) -> Path:
    """``recordings/<scenario>-<UTC date and time>.h5``: a fresh name for every recording (a
    snapshot scenario is named by its file)."""
    scenario = re.sub(r"[^\w.-]+", "_", Path(str(scenario)).name).strip("_")
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return RECORDINGS_FOLDER / f"{scenario}-{stamp}.h5"


def scale_style(scale: float) -> None:
    """Draw the panels for a display of content scale ``scale`` (ImGui units per pixel of a
    scale-1 display: 2 on a desktop set to 200%): ImGui's default style with its spacing scaled,
    and its fonts rasterised at the scaled size, so the text is as sharp as at scale 1. Starts
    afresh from the default style, so a window moved to a display of another scale is scaled
    once, not twice."""
    style = imgui.Style()
    style.scale_all_sizes(scale)
    style.font_scale_dpi = scale
    imgui.get_current_context().style = style


def ui_scale() -> float:
    """Widget sizes follow the font: 1 at ImGui's default size, more on HiDPI (inside a frame)."""
    return imgui.get_font_size() / _DEFAULT_FONT_SIZE


def slider(label: str, value: float, low: float, high: float, shown: str,
           flags: int = 0) -> tuple[bool, float]:
    """A slider whose value is written in its label (``shown``, a %-format), beside the handle
    rather than under it; the label is the widget's id, so the text may change. Ctrl+click
    typing is off: with no number inside the slider, ImGui's text input would start empty."""
    changed, value = imgui.slider_float(f"{label} {shown % value}###{label}", float(value), low,
                                        high, "", flags | imgui.SliderFlags_.no_input)
    return changed, value


class ControlPanel:
    def __init__(self, source, style: PointStyle, tone: ToneMap, *, bottom_margin: float = 0.0,
                 density: DensityStyle | None = None, mode: str = "sprites",
                 collapsed: bool = False):
        self.source = source
        self.style = style
        self.tone = tone
        self.density = density or DensityStyle(weights=style.weights)
        self.mode = mode
        self.density_pass = None  # the renderer's, for showing its smoothing and ranges
        self.runner = source if isinstance(source, SimulationRunner) else None
        self._record_every = 5
        self.bottom_margin = bottom_margin  # room below the panel at scale 1 (the timeline's)
        self.widgets: dict[str, tuple[float, float, float, float]] = {}
        self.rect = (0.0, 0.0, 0.0, 0.0)
        self.collapsed = collapsed  # start as a slim title bar (--panel collapsed)
        self._collapse_next = collapsed
        self._slow_since: float | None = None
        self.theta_name = "theta"  # "θ" where the window's font has the letter
        # a run started from a snapshot (--load) keeps it as the first choice
        self._scenarios = list(scenarios.names())
        if self.runner is not None and not isinstance(self.runner.settings.scenario, str):
            self._scenarios.insert(0, self.runner.settings.scenario)
        self._scenario_names = [str(scenario) for scenario in self._scenarios]
        specs = solver_specs()
        self._solver_names = ["auto", *sorted(name for name in specs if name != "auto")]
        self._solver_labels = [
            name if specs[name].unavailable_reason() is None else f"{name} (unavailable here)"
            for name in self._solver_names]
        self._gpu_solver: str | None = None  # what the slow-frame hint may suggest
        self._gpu_looked_for = False
        self._flock_devices: list[str] | None = None  # listed when a flock is first shown
        self._flock_problem: str | None = None
        if self.runner is not None:
            settings = self.runner.settings
            self._scenario_index = self._index(self._scenarios, settings.scenario)
            self._n = settings.n or self.runner.latest().stats.n

    @staticmethod
    def _index(items, value) -> int:
        return items.index(value) if value in items else 0

    def _remember(self, name: str) -> None:
        low, high = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.widgets[name] = (low.x, low.y, high.x - low.x, high.y - low.y)

    def draw(self, window_size: tuple[int, int], render_fps: float, frame,
             source_error: str | None = None, upload_path: str | None = None,
             drawn: str | None = None) -> None:
        """Draw the panel for ``frame`` (the frame on screen, or None); ``upload_path`` says
        how frames reach the GPU's vertex buffer, ``drawn`` how many particles the picture
        holds (``drawn_sentence``)."""
        unit = ui_scale()
        width, margin = PANEL_WIDTH * unit, PANEL_MARGIN * unit
        tallest = max(window_size[1] - 2 * margin - self.bottom_margin * unit, 60.0)
        imgui.set_next_window_pos(imgui.ImVec2(margin, margin), imgui.Cond_.first_use_ever)
        # As tall as the open sections, never taller than the window: it scrolls instead.
        imgui.set_next_window_size_constraints(imgui.ImVec2(width, 0), imgui.ImVec2(width, tallest))
        if self._collapse_next:
            imgui.set_next_window_collapsed(True)
            self._collapse_next = False
        expanded = imgui.begin("Orrery", None, imgui.WindowFlags_.always_auto_resize)[0]
        position, size = imgui.get_window_pos(), imgui.get_window_size()
        self.rect = (position.x, position.y, size.x, size.y)
        self.collapsed = not expanded
        if expanded:
            imgui.push_item_width(width * _SLIDER_SHARE)
            self._contents(render_fps, frame, source_error, upload_path, drawn)
            imgui.pop_item_width()
        imgui.end()

    def _contents(self, render_fps, frame, source_error, upload_path, drawn) -> None:
        stats = frame.stats if frame else FrameStats()
        if source_error:
            imgui.push_text_wrap_pos(0.0)
            imgui.text_colored(_RED, source_error)
            imgui.pop_text_wrap_pos()
        if self.runner is not None:  # the buttons first: lines below them come and go
            self._run_buttons(frame)
            self._summary(stats, render_fps)
        if self.runner is not None and imgui.collapsing_header("Scenario"):
            self._scenario_controls()
        if self.runner is not None:
            if self.runner.flock is not None:
                if imgui.collapsing_header("Flock"):
                    self._flock_controls(frame)
            elif imgui.collapsing_header("Solver"):
                self._solver_controls(frame)
        if imgui.collapsing_header("View", imgui.TreeNodeFlags_.default_open):
            self._view_controls()
        if imgui.collapsing_header("Statistics", imgui.TreeNodeFlags_.default_open):
            self._statistics(frame, render_fps, upload_path, drawn)
        if self.runner is not None and imgui.collapsing_header("Energy error"):
            self._energy_plot()
        if imgui.collapsing_header("Mouse and keys"):
            imgui.push_text_wrap_pos(0.0)
            imgui.text_colored(_DIM, "drag: orbit, right-drag: pan, wheel: zoom; space: pause, "
                                     ".: step, R: reset view, F: fullscreen, S: screenshot, "
                                     "H: hide; double-click the title bar: fold the panel")
            imgui.pop_text_wrap_pos()
        self._remember("last")

    def _summary(self, stats: FrameStats, render_fps: float) -> None:
        """The run in a sentence (its full description on hover), and a line on why the window
        is slow, once it has been slow for a while."""
        imgui.push_text_wrap_pos(0.0)
        imgui.text(run_sentence(stats, theta_name=self.theta_name) if stats != FrameStats()
                   else "starting ...")
        imgui.pop_text_wrap_pos()
        self._remember("summary")
        if stats.solver and imgui.is_item_hovered():
            imgui.set_tooltip(stats.solver)
        hint = slow_hint(render_fps, stats, gpu_solver=self._gpu_solver)
        if hint is not None and not self._gpu_looked_for:
            self._gpu_solver = self._find_gpu_solver()
            hint = slow_hint(render_fps, stats, gpu_solver=self._gpu_solver)
        now = imgui.get_time()
        if hint is None:
            self._slow_since = None
        elif self._slow_since is None:
            self._slow_since = now
        if hint is not None and now - self._slow_since >= SLOW_FOR_S:
            imgui.push_text_wrap_pos(0.0)
            imgui.text_colored(_AMBER, hint)
            imgui.pop_text_wrap_pos()
            self._remember("slow")
            if imgui.is_item_hovered():
                imgui.set_tooltip(SMOOTH_MOVIE)

    def _find_gpu_solver(self) -> str | None:
        """A GPU solver worth suggesting: one that can run here, and a GPU to run it on (a
        SYCL CPU device runs the GPU solvers too, on the cores the CPU solvers already use).
        Looked for once."""
        self._gpu_looked_for = True
        if not any(info.kind == "gpu" for info in list_devices().devices):
            return None
        specs = solver_specs()
        return next((name for name in ("gpu-tree", "gpu-fmm", "gpu-direct")
                     if name in specs and specs[name].unavailable_reason() is None), None)

    def _run_buttons(self, frame) -> None:
        """Pause, step, restart and record: one row, always in view."""
        runner = self.runner
        unit = ui_scale()
        if imgui.button("Resume" if runner.paused else "Pause", imgui.ImVec2(70 * unit, 0)):
            runner.resume() if runner.paused else runner.pause()
        self._remember("pause")
        imgui.same_line()
        if imgui.button("Step", imgui.ImVec2(50 * unit, 0)):
            runner.step()
        imgui.same_line()
        if imgui.button("Restart", imgui.ImVec2(70 * unit, 0)):
            runner.reset()
        imgui.same_line()
        self._record_button(frame)
        if runner.recording_error:
            imgui.push_text_wrap_pos(0.0)
            imgui.text_colored(_RED, runner.recording_error)
            imgui.pop_text_wrap_pos()
        if runner.error:
            imgui.text_colored(_RED, "Solver stopped with an error:")
            imgui.text_wrapped(runner.error.strip().splitlines()[-1])

    def _record_button(self, frame) -> None:
        """Record: float16 frames every K steps (set in the Scenario section) into a new file
        under recordings/; while recording, Stop and what is being written."""
        runner = self.runner
        recording = frame.stats.recording if frame else None
        if recording is None:
            if imgui.button("Record", imgui.ImVec2(-1, 0)):
                runner.start_recording(new_recording_path(runner.settings.scenario),
                                       every=self._record_every)
            self._remember("record")
            if imgui.is_item_hovered():
                imgui.set_tooltip(f"record every {self._record_every} steps into "
                                  f"{RECORDINGS_FOLDER}/ (K is set under Scenario)")
            return
        path, frames = recording
        if imgui.button("Stop", imgui.ImVec2(-1, 0)):
            runner.stop_recording()
        self._remember("record")
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(_RED, f"recording: {frames} frames to {path}")
        imgui.pop_text_wrap_pos()
        waits = (frame.stats.recording_stats or {}).get("queue_waits", 0)
        if waits:  # the disk is behind: the run waited rather than drop frames
            imgui.text_colored(_RED, f"the run waited for the disk {waits} time(s)")

    def _scenario_controls(self) -> None:
        runner = self.runner
        _, self._scenario_index = imgui.combo("scenario", self._scenario_index,
                                              self._scenario_names)
        _, self._n = imgui.input_int("N", int(self._n), 1000, 10000)
        self._n = max(int(self._n), 2)
        if imgui.button("Load scenario"):
            runner.update(scenario=self._scenarios[self._scenario_index], n=self._n)
        _, every = imgui.input_int("record every K", self._record_every)
        self._record_every = max(1, int(every))

    def _where_steps_run(self, label: str, names: list[str], labels: list[str]) -> None:
        """The choice of what makes the steps (``names``, shown as ``labels``: the solvers, or a
        flock's devices), and what is in use, in words."""
        runner = self.runner
        changed, chosen = imgui.combo(label, self._index(names, runner.solver_name), labels)
        if changed:
            runner.update(solver=names[chosen])
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(_DIM, f"in use: {runner.solver_description}")
        imgui.pop_text_wrap_pos()

    def _solver_controls(self, frame) -> None:
        runner = self.runner
        settings = runner.settings
        self._where_steps_run("solver", self._solver_names, self._solver_labels)
        dt = frame.stats.dt if frame else scenarios.DT.default
        _, new_dt = slider("dt", float(dt), 1e-5, 0.5, "%.5f", imgui.SliderFlags_.logarithmic)
        if imgui.is_item_deactivated_after_edit():
            runner.update(dt=new_dt)
        softening = runner.softening
        _, new_softening = slider("softening", float(softening), 1e-4, 0.5, "%.4f",
                                  imgui.SliderFlags_.logarithmic)
        if imgui.is_item_deactivated_after_edit():
            runner.update(softening=new_softening)
        spec = solver_specs().get(runner.solver_name)
        has_theta = spec is not None and any(option.name == "theta" for option in spec.options)
        imgui.begin_disabled(not has_theta)
        # the theta in use: the one set here, else the one the solver was given or chose
        in_use = frame.stats.theta if frame else None
        theta = settings.theta if settings.theta is not None else \
            in_use if in_use is not None else THETA.default
        _, new_theta = slider("theta", float(theta), THETA.minimum, THETA.maximum, "%.2f")
        if imgui.is_item_deactivated_after_edit():
            runner.update(theta=new_theta)
        imgui.end_disabled()

    def active_style(self) -> PointStyle | DensityStyle:
        return self.density if self.mode == "density" else self.style

    def _flock_controls(self, frame) -> None:
        """Where the flock runs, its time step, its neighbour search and its rules (the
        FlockParameters options table); a change applies from the next step."""
        runner, rules = self.runner, self.runner.flock
        if self._flock_devices is None:  # the kernels compute in float64
            self._flock_devices = ["cpu", *(info.spec for info in list_devices().devices
                                            if info.fp64)]
        self._where_steps_run("runs on", self._flock_devices, self._flock_devices)
        dt = frame.stats.dt if frame else 0.2
        _, new_dt = slider("dt", float(dt), 0.01, 1.0, "%.3f", imgui.SliderFlags_.logarithmic)
        if imgui.is_item_deactivated_after_edit():
            runner.update(dt=new_dt)
        changes = dict(runner.settings.flock or {})
        # the options table names the rules' fields: read by name, one control per option
        for option in flock.SEARCH_OPTIONS:
            choices = list(option.choices)
            changed, index = imgui.combo(option.name.replace("_", " "),
                                         choices.index(getattr(rules, option.name)),
                                         [str(choice) for choice in choices])
            if changed:
                changes[option.name] = choices[index]
                runner.update(flock=changes)
        for option in flock.RULE_OPTIONS:
            value = float(getattr(rules, option.name))
            _, new_value = slider(option.name.replace("_", " "), value,
                                  value / 4 if value > 0 else 0.0, value * 4 if value > 0 else 1.0,
                                  "%.3f")
            if imgui.is_item_deactivated_after_edit():
                changes[option.name] = new_value
                try:
                    rules.with_changes(**changes)
                except InvalidInputError as error:
                    self._flock_problem = str(error)
                else:
                    self._flock_problem = None
                    runner.update(flock=changes)
            if imgui.is_item_hovered():
                imgui.set_tooltip(option.doc)
        if self._flock_problem:
            imgui.push_text_wrap_pos(0.0)
            imgui.text_colored(_RED, self._flock_problem)
            imgui.pop_text_wrap_pos()

    def _view_controls(self) -> None:
        changed, index = imgui.combo("render", RENDER_MODES.index(self.mode), list(RENDER_MODES))
        if changed:
            self.mode = RENDER_MODES[index]
        if self.mode == "density":
            self._density_controls()
        else:
            self._sprite_controls()
        names = self.source.population_names
        if len(names) > 1 and imgui.tree_node("populations"):
            weights = self.style.weights
            for index, name in enumerate(names[:len(weights)]):
                _, weights[index] = slider(name, float(weights[index]), 0.0, 1.0, "%.2f")
            imgui.tree_pop()

    def _sprite_controls(self) -> None:
        tone = self.tone
        # narrower than the other sliders: its "auto" box shares the line
        imgui.set_next_item_width(imgui.calc_item_width() - 45 * ui_scale())
        changed, exposure = slider("exposure", tone.exposure, 0.001, 50.0, "%.2g",
                                   imgui.SliderFlags_.logarithmic)
        if changed:  # a hand on the slider takes over from the automatic exposure
            tone.exposure, tone.auto_exposure = exposure, False
        imgui.same_line()
        _, tone.auto_exposure = imgui.checkbox("auto", tone.auto_exposure)
        if imgui.is_item_hovered():
            imgui.set_tooltip("exposure follows the picture: its brightest 1% stay below white")
        _, self.style.point_size = slider("point size", self.style.point_size, 1.0, 16.0,
                                          "%.1f px")
        _, tone.bloom = slider("bloom", tone.bloom, 0.0, 3.0, "%.2f")
        mode = COLOUR_MODES.index(self.style.colour_mode)
        changed, mode = imgui.combo("colour", mode, list(COLOUR_MODES))
        if changed:
            self.style.colour_mode = COLOUR_MODES[mode]

    def _density_controls(self) -> None:
        density, estimated = self.density, self.density_pass
        maps = list(colour_maps())
        changed, index = imgui.combo("colour map", maps.index(density.colour_map), maps)
        if changed:
            density.colour_map = maps[index]
        changed, index = imgui.combo("quantity", DENSITY_QUANTITIES.index(density.quantity),
                                     ["density", "speed"])
        if changed:
            density.quantity = DENSITY_QUANTITIES[index]
            density.quantity_range = None
            if estimated is not None:
                estimated.quantity_range = None
        smoothing = density.smoothing or (estimated.smoothing if estimated else None) or 0.05
        changed, smoothing = slider("smoothing", float(smoothing), 1e-4, 10.0, "%.4f",
                                    imgui.SliderFlags_.logarithmic)
        if changed:
            density.smoothing = smoothing
        if estimated is not None and estimated.density_range is not None:
            low, high = estimated.density_range
            changed, span = imgui.drag_float2("log density", [low, high], 0.02, -30.0, 30.0,
                                              "%.2f")
            if changed and span[1] > span[0]:
                density.density_range = (span[0], span[1])
            if imgui.button("auto range"):
                density.density_range = density.quantity_range = None
                estimated.density_range = estimated.quantity_range = None
            imgui.same_line()
            imgui.text_colored(_DIM, f"bar: 10^{low:.1f} .. 10^{high:.1f} mass/px"
                               if math.isfinite(low) else "")
        _, density.colour_bar = imgui.checkbox("colour bar", density.colour_bar)

    def _statistics(self, frame, render_fps: float, upload_path: str | None = None,
                    drawn: str | None = None) -> None:
        stats = frame.stats if frame else FrameStats()
        imgui.text(f"render        {render_fps:8.1f} fps")
        if stats.steps_per_second is not None:
            imgui.text(f"simulation    {stats.steps_per_second:8.1f} steps/s")
            imgui.text(f"solver        {1e3 * stats.solver_seconds_per_step:8.2f} ms/step")
            ratio = live_ratio(stats)
            if ratio is not None:
                # what the solver thread keeps of the rate its own step time allows
                imgui.text(f"live/solver   {100 * ratio:8.1f} %")
            error = stats.energy_error
            imgui.text(f"energy error  {error:+.2e}" if error is not None else
                       "energy error  (not sampled yet)")
        count = frame.count if frame else 0
        imgui.text(f"N {count:,}   step {frame.step if frame else 0}"
                   f"   t = {frame.time if frame else 0.0:.4g}")
        if drawn:
            imgui.text(drawn)
        if upload_path:
            imgui.push_text_wrap_pos(0.0)
            imgui.text_colored(_DIM, f"frames: {upload_path}")
            imgui.pop_text_wrap_pos()

    def _energy_plot(self) -> None:
        times, errors = self.runner.energy_history()
        times, errors = times[1:], errors[1:]  # the first sample is the reference itself (zero)
        if times.size < 2:
            imgui.text_colored(_DIM, "(after a few samples)")
            return
        if implot.begin_plot("energy error", imgui.ImVec2(-1, 120 * ui_scale()),
                             implot.Flags_.no_legend):
            implot.setup_axes("time", "|dE/E|", implot.AxisFlags_.auto_fit,
                              implot.AxisFlags_.auto_fit)
            implot.setup_axis_scale(implot.ImAxis_.y1, implot.Scale_.log10)
            magnitude = np.maximum(np.abs(errors), 1e-12)
            implot.plot_line("|dE/E|", np.ascontiguousarray(times), np.ascontiguousarray(magnitude))
            implot.end_plot()
