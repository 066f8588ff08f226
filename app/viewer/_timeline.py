"""The timeline panel for sources with playback controls (a recording being replayed): those
that keep ``contracts.Playback``. A ``live`` source (a recording still being written, followed as
it grows) is marked "live".
"""

from __future__ import annotations

from imgui_bundle import imgui

from ...engine.contracts import Playback
from ._branch import can_branch
from ._panel import PANEL_MARGIN, slider, ui_scale

# Range of the speed slider, frames of recording per second (either direction).
MAX_SPEED = 240.0
# Height of the panel at the bottom of the window, and the gap above it (window pixels at scale
# 1; times ``ui_scale`` on HiDPI).
TIMELINE_HEIGHT = 90.0
# The "live" mark of a recording still being written (RGBA).
LIVE_COLOUR = imgui.ImVec4(1.0, 0.35, 0.3, 1.0)


def has_playback(source) -> bool:
    return isinstance(source, Playback)


class TimelinePanel:
    """``on_branch`` (optional): called by the "Branch live run" button, shown for a replay of
    a recording (``_branch.can_branch``)."""

    def __init__(self, player: Playback, on_branch=None):
        self.player = player
        self.on_branch = on_branch

    @property
    def playing(self) -> bool:
        return self.player.playing

    def toggle(self) -> None:
        if self.playing:
            self.player.pause()
        else:
            self.player.play()

    def step(self, delta: int) -> None:
        self.player.step(delta)

    def draw(self, window_size: tuple[int, int]) -> None:
        player = self.player
        width, height = window_size
        unit = ui_scale()
        margin, panel_height = PANEL_MARGIN * unit, TIMELINE_HEIGHT * unit
        imgui.set_next_window_pos(imgui.ImVec2(margin, height - panel_height), imgui.Cond_.always)
        imgui.set_next_window_size(
            imgui.ImVec2(max(width - 2 * margin, 200), panel_height - margin), imgui.Cond_.always)
        imgui.begin("Timeline", None, imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_resize)
        if imgui.button("Pause" if self.playing else "Play", imgui.ImVec2(60 * unit, 0)):
            self.toggle()
        imgui.same_line()
        if imgui.button("-1"):
            self.step(-1)
        imgui.same_line()
        if imgui.button("+1"):
            self.step(+1)
        imgui.same_line()
        changed, loop = imgui.checkbox("loop", bool(player.loop))
        if changed:
            player.loop = loop
        imgui.same_line()
        imgui.set_next_item_width(200 * unit)
        changed, speed = slider("frames/s", float(player.speed), -MAX_SPEED, MAX_SPEED, "%.1f",
                                imgui.SliderFlags_.logarithmic)
        if changed:
            player.speed = speed
        if player.live:
            imgui.same_line()
            imgui.text_colored(LIVE_COLOUR, "live")
        if self.on_branch is not None and can_branch(player):
            imgui.same_line()
            if imgui.button("Branch live run (B)"):
                self.on_branch()
        last = max(int(player.frame_count) - 1, 0)
        label = f"frame {int(player.position)} / {last}"
        # the frame number beside the scrubber, not under its handle
        imgui.set_next_item_width(-imgui.calc_text_size(f"frame {last} / {last}").x - margin)
        changed, index = imgui.slider_int(f"{label}###frame", int(player.position), 0, last, "",
                                          imgui.SliderFlags_.no_input)
        if changed:
            player.seek(index)
        imgui.end()
