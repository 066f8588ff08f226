"""The timeline panel for sources with playback controls (a recording being replayed).

Duck-typed: a source qualifies when it has ``seek``, ``play``, ``pause``, ``frame_count``,
``position``, ``speed`` and ``loop``. ``position`` is a frame index; ``speed`` is frames of the
recording per second of wall time (negative plays backwards) and ``loop`` a flag, both writable.
A ``playing`` flag and a ``step(delta)`` method are used when the source has them, and a
``live`` flag (a recording still being written, followed as it grows) is shown as "live".
"""

from __future__ import annotations

from imgui_bundle import imgui

from ._branch import can_branch
from ._panel import slider

PLAYBACK_MEMBERS = ("seek", "play", "pause", "frame_count", "position", "speed", "loop")
# Range of the speed slider, frames of recording per second (either direction).
MAX_SPEED = 240.0
# Height of the panel at the bottom of the window, and the gap above it (window pixels).
TIMELINE_HEIGHT = 90.0
# The "live" mark of a recording still being written (RGBA).
LIVE_COLOUR = imgui.ImVec4(1.0, 0.35, 0.3, 1.0)


def has_playback(source) -> bool:
    return all(hasattr(source, member) for member in PLAYBACK_MEMBERS)


class TimelinePanel:
    """``on_branch`` (optional): called by the "Branch live run" button, shown for a replay of
    a recording (``_branch.can_branch``)."""

    def __init__(self, player, on_branch=None):
        self.player = player
        self.on_branch = on_branch
        self._playing = False  # used only for sources without a ``playing`` flag

    @property
    def playing(self) -> bool:
        return bool(getattr(self.player, "playing", self._playing))

    def toggle(self) -> None:
        if self.playing:
            self.player.pause()
        else:
            self.player.play()
        self._playing = not self._playing

    def step(self, delta: int) -> None:
        player = self.player
        if hasattr(player, "step"):
            player.step(delta)
            return
        if self.playing:
            self.toggle()
        player.seek(min(max(int(player.position) + delta, 0), int(player.frame_count) - 1))

    def draw(self, window_size: tuple[int, int]) -> None:
        player = self.player
        width, height = window_size
        imgui.set_next_window_pos(imgui.ImVec2(10, height - TIMELINE_HEIGHT), imgui.Cond_.always)
        imgui.set_next_window_size(imgui.ImVec2(max(width - 20, 200), TIMELINE_HEIGHT - 10),
                                   imgui.Cond_.always)
        imgui.begin("Timeline", None, imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_resize)
        if imgui.button("Pause" if self.playing else "Play", imgui.ImVec2(60, 0)):
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
        imgui.set_next_item_width(200)
        changed, speed = slider("frames/s", float(player.speed), -MAX_SPEED, MAX_SPEED, "%.1f",
                                imgui.SliderFlags_.logarithmic)
        if changed:
            player.speed = speed
        if getattr(player, "live", False):
            imgui.same_line()
            imgui.text_colored(LIVE_COLOUR, "live")
        if self.on_branch is not None and can_branch(player):
            imgui.same_line()
            if imgui.button("Branch live run (B)"):
                self.on_branch()
        last = max(int(player.frame_count) - 1, 0)
        label = f"frame {int(player.position)} / {last}"
        # the frame number beside the scrubber, not under its handle
        imgui.set_next_item_width(-imgui.calc_text_size(f"frame {last} / {last}").x - 10)
        changed, index = imgui.slider_int(f"{label}###frame", int(player.position), 0, last, "",
                                          imgui.SliderFlags_.no_input)
        if changed:
            player.seek(index)
        imgui.end()
