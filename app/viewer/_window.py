"""The viewer window: a pyglet window whose GL context moderngl draws particles into and
imgui-bundle draws the panels into. It shows any FrameSource; a live run gets simulation controls,
a source with playback controls gets a timeline."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import imgui_bundle

import moderngl
import numpy as np
import pyglet
from imgui_bundle import imgui, implot
from imgui_bundle.python_backends.pyglet_backend import create_renderer
from pyglet.window import key, mouse

from ...engine.errors import OrreryError
from ...engine.frames import FrameSource, FrameStats
from ...engine.runner import SimulationRunner
from ..render import (DEFAULT_MAX_DRAWN, DrawPacing, ParticleScene, PointStyle, Renderer,
                      ToneMap, auto_exposure, drawn_sentence, ease_exposure, population_weights,
                      represented_count, sample_labels, sample_masses)
from ..render import _pacing
from ._branch import branch
from ._capture import CameraKeys, WindowVideo, default_screenshot_name, read_screen, save_png
from ._clock import FrameClock
from ._framing import (BETTER_BY, FOLLOW_BIG_EVERY, SAMPLE, bright, disk_normals, follow,
                       framed_camera, tail_length)
from ._panel import ControlPanel, live_ratio, scale_style
from ._timeline import TIMELINE_HEIGHT, TimelinePanel, has_playback

# Seconds between two lines of the --stats report.
STATS_INTERVAL = 0.5
# Seconds of waiting for the solver thread at exit before saying why the exit takes longer.
SHUTDOWN_WAIT = 1.0
# A font of imgui-bundle's whose letters ImGui's default (Latin-1 only) lacks, θ among them.
EXTRA_LETTERS_FONT = Path(imgui_bundle.__file__).parent / "assets" / "fonts" / "DroidSans.ttf"
# Seconds between two measurements of the light for the automatic exposure.
EXPOSURE_INTERVAL = 0.25
# A scripted run (``run(frames=...)``) draws nothing but new steps (and inputs) while its source
# brings a new frame at least this often, so the same command pictures the same step on a fast
# and on a slow machine; a source that stops (paused, failed, a still replay) is redrawn for the
# panel's clocks as usual.
STALLED_S = 1.0


def _add_letters() -> bool:
    """ImGui's default font, with the letters it lacks (θ, ...) taken from EXTRA_LETTERS_FONT;
    whether they were (a wheel without the font keeps the default alone)."""
    fonts = imgui.get_io().fonts
    fonts.add_font_default()
    if not EXTRA_LETTERS_FONT.is_file():
        return False
    merged = imgui.ImFontConfig()
    merged.merge_mode = True
    fonts.add_font_from_file_ttf(str(EXTRA_LETTERS_FONT), 0.0, merged)  # 0: the default's size
    return True


class ViewerWindow(pyglet.window.Window):
    """Parameters: ``source`` (any FrameSource), ``size`` (window pixels), ``max_fps`` (0: no
    cap), ``vsync`` (wait for the display's refresh in ``flip``, outside the GIL: the default),
    ``stats_path`` (append a JSON line of live statistics every half second), ``panel``
    ("open", "collapsed" to a slim title bar, or "hidden" as the H key hides it), ``max_drawn``
    (the particles a changing picture draws: :class:`~orrery.app.render.LevelOfDetail`).

    A frame is drawn only when it can show something new (``DrawPacing``: a step the source
    has not shown, an input, a capture); otherwise the loop waits for the source."""

    def __init__(self, source: FrameSource, *, size=(1280, 720), max_fps: float = 60.0,
                 vsync: bool = True, stats_path: str | None = None, title: str = "Orrery",
                 panel: str = "open", max_drawn: int | None = DEFAULT_MAX_DRAWN):
        self.pacing = DrawPacing()  # before the window exists: creating it dispatches events
        config = pyglet.gl.Config(major_version=3, minor_version=3, forward_compatible=True,
                                  double_buffer=True, depth_size=0)
        super().__init__(*size, caption=title, resizable=True, config=config, vsync=vsync)
        self.source = source
        self.ctx = moderngl.create_context()
        self.renderer = Renderer(self.ctx, max_drawn=max_drawn)
        self.scene = ParticleScene(self.ctx)
        self.camera = framed_camera(np.zeros((1, 3)))
        self._population_names = source.population_names
        self.point_style = PointStyle(weights=population_weights(self._population_names))
        self.tone = ToneMap(auto_exposure=True)
        self.clock = FrameClock(max_fps=max_fps)
        self.ui_visible = panel != "hidden"
        self.camera_follows = True  # until a hand moves the camera
        self._followed = 0  # the sequence of the frame the camera last followed
        self._exposure_due = 0.0
        self._light_measured = False
        self._best_picture = None  # (tail length, pixels, settings) for --screenshot at a moment
        self._scripted = False  # run(frames=...): see STALLED_S
        self._new_frame_at = 0.0
        self._camera_fitted_to = None
        self._stats_path = Path(stats_path) if stats_path else None
        self._stats_due = 0.0
        self._screenshot_request: str | None = None
        self.camera_keys = CameraKeys()
        self.video = WindowVideo()
        self.capture_message: str | None = None  # what the last capture key did, for the panel
        self._frame = None
        self._accumulated_inputs = None
        self._represents = 0  # the particles the frame shown stands for
        self.source_error: str | None = None

        imgui.create_context()
        implot.create_context()
        imgui.get_io().set_ini_filename("")
        scale_style(self._ui_scale())
        greek = _add_letters()
        self._imgui = create_renderer(self)
        self.timeline = TimelinePanel(source, self.branch_live) if has_playback(source) else None
        self.panel = ControlPanel(source, self.point_style, self.tone,
                                  bottom_margin=TIMELINE_HEIGHT if self.timeline else 0.0,
                                  collapsed=panel == "collapsed")
        self.panel.density_pass = self.renderer.density
        if greek:
            self.panel.theta_name = "\u03b8"

    # Frame ---------------------------------------------------------------------------------

    def pixel_ratio(self) -> float:
        """Framebuffer pixels per pixel of a scale-1 display (a point sprite's size grows by
        it): pyglet's content scale, 2 on a Retina Mac (a framebuffer twice the window) and on
        an X11 or Windows desktop set to 200% (a window in pixels already; Xft.dpi 192 on X11)."""
        return self.scale

    def _ui_scale(self) -> float:
        """ImGui's units (the window's) per pixel of a scale-1 display."""
        return self.scale * self.height / max(self.get_framebuffer_size()[1], 1)

    def on_scale(self, scale, dpi):  # moved to a display of another scale
        scale_style(self._ui_scale())

    def _latest(self):
        # A replay can fail to read its file; show that in the panel, keep the last frame.
        try:
            self._frame = self.source.latest()
            self.source_error = None
        except OrreryError as error:
            self.source_error = str(error)
        return self._frame

    def draw_frame(self, frame) -> None:
        """Draw ``frame`` (the source's latest, None before its first) and the panels."""
        if self.source.population_names != self._population_names:  # a new scenario was loaded
            self._population_names = self.source.population_names
            self.point_style.weights = population_weights(self._population_names)
            self.panel.density.weights = self.point_style.weights
            self.renderer.density.reset()
        if frame is not None:
            # a replay playing a priority-ordered recording hands over the first K particles
            self._represents = represented_count(frame.count, self.source.population)
            self.scene.show(frame, sample_labels(self.source.population, frame.count))
            if self.panel.mode == "density":
                self.scene.set_masses(sample_masses(self.source.masses, frame.count))
            self._aim_camera(frame)
        width, height = self.get_framebuffer_size()
        self.renderer.resize(width, height)
        view_projection = self._view_projection(width, height)
        # The particle pass is most of a frame; while nothing it depends on has changed (a paused
        # or slow simulation, a still camera) the accumulated light of the last frame is reused.
        style = self.panel.active_style()
        inputs = (self.scene.sequence, self.scene.layout_version, self.renderer.size,
                  view_projection.tobytes(), style.key(), self.pixel_ratio())
        # a still picture drawn from a subsample adds particles each frame until all are in
        if inputs != self._accumulated_inputs or self.renderer.refining:
            self.renderer.accumulate(self.scene, view_projection, style,
                                     pixel_ratio=self.pixel_ratio(), deferred=True,
                                     represents=self._represents)
            self._accumulated_inputs = inputs
            self._light_measured = False
        if self.renderer.land():
            self._light_measured = False
        if self.tone.auto_exposure and self.panel.mode != "density":
            self._expose()
        self.renderer.present(self.ctx.screen, self.tone)
        if self.video.recording and not self.video.add(read_screen(self.ctx, (width, height))):
            self.capture_message = "video stopped: the window changed size"
        self._draw_ui()
        if self._screenshot_request:
            self.save_screenshot(self._screenshot_request)
            self._screenshot_request = None

    def _aim_camera(self, frame) -> None:
        """Frame the bright particles of a new run; then follow them, a step each new frame,
        until the camera is moved by hand."""
        run = (self._represents, self._population_names)
        new_run = run != self._camera_fitted_to
        # a big frame's host copy costs milliseconds: follow it every FOLLOW_BIG_EVERY frames
        due = frame.sequence >= self._followed + (1 if frame.count <= SAMPLE else FOLLOW_BIG_EVERY)
        if not new_run and not (self.camera_follows and due):
            return
        labels = sample_labels(self.source.population, frame.count)
        shown = bright(frame.positions, labels, self.point_style.weights)
        if new_run:  # first frame, or a new scenario
            self.camera = framed_camera(shown, disk_normals(frame.positions, labels,
                                                            self._population_names))
            self._camera_fitted_to = run
            self.camera_follows = True
        else:
            follow(self.camera, shown)
        self._followed = frame.sequence

    def _expose(self) -> None:
        """Set the exposure from the light accumulated since the last measurement (at most every
        EXPOSURE_INTERVAL: the first at once, later ones eased in)."""
        if self._light_measured:
            return
        now = time.monotonic()
        if now < self._exposure_due:  # measured at the next frame drawn after the interval
            return
        light = self.renderer.current_light()
        target = auto_exposure(light[::2, ::2], scale=self.renderer.light_scale)
        self._light_measured = True
        if target is not None:
            first = self._exposure_due == 0.0
            self.tone.exposure = target if first else ease_exposure(self.tone.exposure, target)
            self._exposure_due = now + EXPOSURE_INTERVAL

    def _view_projection(self, width: int, height: int):
        # Centre the scene in the part of the window the panel leaves free.
        x, _, panel_width, _ = self.panel.rect
        beside = self.ui_visible and not self.panel.collapsed
        free_from = (x + panel_width) / max(self.width, 1) if beside else 0.0
        shift = free_from if free_from < 0.6 else 0.0
        return self.camera.view_projection(width / max(height, 1), shift_x=shift)

    def _draw_ui(self) -> None:
        self._imgui.process_inputs()
        imgui.new_frame()
        if self.ui_visible:
            self.panel.draw((self.width, self.height), self.clock.fps, self._frame,
                            self.source_error,
                            f"{self.scene.upload_path}, {self.renderer.particle_path}",
                            drawn_sentence(self.renderer.detail.drawn,
                                           self.renderer.detail.represents))
            if self.timeline is not None:
                self.timeline.draw((self.width, self.height))
            if self.capture_message:
                self._draw_capture_message()
        imgui.render()
        self._imgui.render(imgui.get_draw_data())

    def _draw_capture_message(self) -> None:
        imgui.set_next_window_pos(imgui.ImVec2(self.width - 10, 10), imgui.Cond_.always,
                                  imgui.ImVec2(1.0, 0.0))
        flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize
                 | imgui.WindowFlags_.no_inputs)
        imgui.begin("Capture", None, flags)
        imgui.text(self.capture_message)
        imgui.end()

    def save_screenshot(self, path: str) -> Path:
        """Save the framebuffer as drawn so far this frame (particles and UI), with the settings
        that made it in the PNG's text chunk."""
        return save_png(read_screen(self.ctx, self.get_framebuffer_size()), path,
                        settings=self.settings())

    def settings(self) -> dict:
        """What made the picture: camera, style, tone map and the frame shown."""
        camera, style, frame = self.camera, self.point_style, self._frame
        return {"camera": {"position": camera.eye.tolist(), "target": list(camera.target),
                           "fov": float(camera.fov_y) * 180.0 / 3.141592653589793},
                "style": {"point_size": style.point_size, "intensity": style.intensity,
                          "colour_mode": style.colour_mode,
                          "weights": None if style.weights is None else list(style.weights)},
                "tone": {"exposure": self.tone.exposure, "gamma": self.tone.gamma},
                "frame": None if frame is None else {"time": frame.time, "step": frame.step},
                "populations": list(self._population_names),
                "source": type(self.source).__name__}

    def _toggle_video(self) -> None:
        if self.video.recording:
            writer = self.video.stop()
            self.capture_message = f"saved {writer.path} ({writer.frames} frames)"
            return
        path = default_screenshot_name(".mp4")
        try:
            self.video.start(path, self.get_framebuffer_size(), self.clock.max_fps or 60.0,
                             self.settings())
            self.capture_message = f"recording {path} (V stops)"
        except OrreryError as error:
            self.capture_message = f"video: {error}"

    def dispatch_event(self, *args):
        self.pacing.input()  # any window event may change what the next frame shows
        return super().dispatch_event(*args)

    def _frame_due(self, frame) -> bool:
        new = frame is None or frame.sequence != self.scene.sequence
        if new:
            self._new_frame_at = time.monotonic()
        changed = new or self.video.recording or self._screenshot_request is not None or \
            self.renderer.refining
        advancing = time.monotonic() - self._new_frame_at < STALLED_S
        return self.pacing.due(changed, idle=not (self._scripted and advancing))

    def run(self, *, frames: int | None = None, screenshot: str | None = None,
            screenshot_at: str = "last") -> int:
        """The event loop: until the window closes, or for ``frames`` frames drawn.
        ``screenshot`` saves the last frame, or with ``screenshot_at="longest-tails"`` the frame
        whose tidal tails reach furthest (``_framing.tail_length``; the last frame where the
        scene has no tails to measure). Returns an exit code."""
        self._scripted = frames is not None
        try:
            while not self.has_exit and (frames is None or self.clock.frames < frames):
                self.dispatch_events()
                frame = self._latest()
                if not self._frame_due(frame):
                    self.source.wait_for_newer(self.scene.sequence, _pacing.POLL_S)
                    self._report_stats(final=False)
                    continue
                self.draw_frame(frame)
                last = frames is not None and self.clock.frames == frames - 1
                if screenshot and screenshot_at == "longest-tails":
                    self._keep_if_best(frame, last)
                if last and screenshot:
                    self._save_scripted_screenshot(screenshot)
                self.flip()
                self.pacing.drawn()
                self.clock.tick()
                self._report_stats(final=False)
            self._report_stats(final=True)
        finally:
            if self.video.recording:
                self.video.stop()
            self._imgui.shutdown()
            self.close()
            self._close_source()
        return 0

    def _keep_if_best(self, frame, last: bool) -> None:
        """Read the picture just drawn back when its tails are the longest so far (by BETTER_BY;
        the last frame ties in its favour)."""
        if frame is None:
            return
        length = tail_length(frame.positions, self.source.population, self._population_names)
        best = self._best_picture
        margin = 1.0 if last else BETTER_BY
        if length is None or (best is not None and length <= best[0] * margin):
            return
        size = self.get_framebuffer_size()
        self._best_picture = (length, read_screen(self.ctx, size).copy(), self.settings())

    def _save_scripted_screenshot(self, path: str) -> Path:
        best = self._best_picture
        if best is None:
            return self.save_screenshot(path)
        length, pixels, settings = best
        return save_png(pixels, path, settings={**settings, "tail_length": length})

    def _close_source(self) -> None:
        # Called after the window has gone. A step of a large direct run can take seconds; the
        # native solver's threads must finish it before the process exits (ending the process
        # under them aborts it), so say why the exit waits.
        runner = isinstance(self.source, SimulationRunner)
        if runner and not self.source.close(timeout=SHUTDOWN_WAIT):
            print("orrery-viewer: waiting for the solver to finish its current step",
                  file=sys.stderr)
        self.source.close()

    def _report_stats(self, *, final: bool) -> None:
        if self._stats_path is None or (not final and time.monotonic() < self._stats_due):
            return
        self._stats_due = time.monotonic() + STATS_INTERVAL
        frame = self._frame
        stats = frame.stats if frame else FrameStats()
        # "wall": time.monotonic() (the system's clock since boot), so that a reader of two
        # records, another process included, has the rates between them
        record = {"final": final, "wall": time.monotonic(), "frames": self.clock.frames,
                  "render_fps": self.clock.fps,
                  "upload": self.scene.upload_path, "particles": self.renderer.particle_path,
                  "drawn": [self.renderer.detail.drawn, self.renderer.detail.represents],
                  "live_ratio": live_ratio(stats),
                  "step": frame.step if frame else 0, "time": frame.time if frame else 0.0,
                  # the error is the record's own, below
                  "stats": {key: value for key, value in stats.as_dict().items()
                            if key != "error"},
                  "error": self.source.error or self.source_error,
                  "panel": self.panel.rect, "widgets": self.panel.widgets,
                  "window": [self.width, self.height]}
        with self._stats_path.open("a") as handle:
            handle.write(json.dumps(record) + "\n")

    # Input ---------------------------------------------------------------------------------

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        if imgui.get_io().want_capture_mouse:
            return
        self.camera_follows = False
        if buttons & mouse.LEFT and not modifiers & key.MOD_SHIFT:
            self.camera.orbit(dx, dy)
        else:
            self.camera.pan(dx, dy, self.height)

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        if not imgui.get_io().want_capture_mouse:
            self.camera_follows = False
            self.camera.zoom(scroll_y)

    def on_key_press(self, symbol, modifiers):
        if imgui.get_io().want_capture_keyboard:
            return
        if symbol == key.ESCAPE:
            self.has_exit = True
        elif symbol == key.SPACE:
            self._toggle_pause()
        elif symbol == key.PERIOD:
            self._single_step()
        elif symbol == key.R:
            self._camera_fitted_to = None  # framed afresh on the next frame, then followed
            self.pacing.input()
        elif symbol == key.F:
            self.set_fullscreen(not self.fullscreen)
        elif symbol == key.H:
            self.ui_visible = not self.ui_visible
        elif symbol == key.S:
            self._screenshot_request = default_screenshot_name()
        elif symbol == key.C:
            self.capture_message = f"camera key {len(self.camera_keys.keys) + 1} saved in " \
                                   f"{self.camera_keys.add(self.camera)}"
        elif symbol == key.V:
            self._toggle_video()
        elif symbol == key.B:
            self.branch_live()

    def branch_live(self) -> None:
        """Key B, or the timeline's button: continue the replayed frame on screen as a live run
        from the keyframe at or before it (``_branch``); the replay closes. A recording without
        a keyframe early enough says why, and the replay goes on."""
        try:
            runner = branch(self.source)
        except OrreryError as error:
            self.capture_message = f"cannot branch a live run: {error}"
            return
        replay, self.source = self.source, runner
        self.timeline = None
        panel = ControlPanel(runner, self.point_style, self.tone, density=self.panel.density,
                             mode=self.panel.mode)
        panel.density_pass = self.renderer.density
        panel.theta_name = self.panel.theta_name
        self.panel = panel
        self.capture_message = f"live run branched off {replay.path} at step " \
                               f"{runner.latest().step}"
        replay.close()

    def _toggle_pause(self) -> None:
        if self.timeline is not None:
            self.timeline.toggle()
        elif self.panel.runner is not None:
            runner = self.panel.runner
            runner.resume() if runner.paused else runner.pause()

    def _single_step(self) -> None:
        if self.timeline is not None:
            self.timeline.step(+1)
        elif self.panel.runner is not None:
            self.panel.runner.step()
