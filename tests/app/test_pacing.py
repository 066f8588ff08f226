"""A render loop draws only what shows something new (DrawPacing); bench live's capped mode waits
for the next tick of a fixed grid, as vsync does, and the viewer's cap (FrameClock) for a deadline a
period after the last, no wait where a frame took longer."""

import pytest

from orrery.app.render import DrawPacing
from orrery.app.render._pacing import AFTER_INPUT_S, REDRAW_S


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_frame_is_due_when_it_changed_after_input_and_at_the_redraw_floor():
    clock = _Clock()
    pacing = DrawPacing(clock)
    assert pacing.due(False)  # nothing drawn yet
    pacing.drawn()
    assert pacing.due(True) and not pacing.due(False)
    clock.now += REDRAW_S * 0.9
    assert not pacing.due(False)
    clock.now += REDRAW_S * 0.2
    assert pacing.due(False)  # the floor: the panel's clocks and messages stay current
    pacing.drawn()
    pacing.input()
    clock.now += AFTER_INPUT_S * 0.5
    pacing.drawn()
    assert pacing.due(False)  # the panel answers an input over several frames
    clock.now += AFTER_INPUT_S * 0.6
    pacing.drawn()
    assert not pacing.due(False)


def test_without_idle_redraws_only_changes_and_inputs_are_due():
    clock = _Clock()
    pacing = DrawPacing(clock)
    pacing.drawn()
    clock.now += REDRAW_S * 10
    assert pacing.due(False) and not pacing.due(False, idle=False)
    assert pacing.due(True, idle=False)
    pacing.input()
    assert pacing.due(False, idle=False)


def test_a_capped_frame_waits_for_the_next_tick_of_a_fixed_grid():
    from orrery.app.render._pacing import next_tick

    assert next_tick(10.0, 0.5, 10.2) == pytest.approx(10.5)
    assert next_tick(10.0, 0.5, 10.5) == pytest.approx(10.5)  # on a tick: no wait
    assert next_tick(10.0, 0.5, 11.7) == pytest.approx(12.0)  # a late frame skips ticks


class _Time:
    """A stand-in for the time module: perf_counter reads ``now``; sleep moves it on by what was
    asked and ``late`` more (a late wake-up) and records the request."""

    def __init__(self, late: float = 0.0):
        self.now, self.late, self.sleeps = 100.0, late, []

    def perf_counter(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds + self.late


def _frames(monkeypatch, durations, *, max_fps=60.0, late=0.0):
    """A FrameClock ticked after frames of ``durations`` seconds: (the fake time, the clock)."""
    from orrery.app.viewer import _clock

    fake = _Time(late)
    monkeypatch.setattr(_clock, "time", fake)
    clock = _clock.FrameClock(max_fps=max_fps)
    for duration in durations:
        fake.now += duration
        before = len(fake.sleeps)
        clock.tick()
        yield fake, clock, len(fake.sleeps) > before


def test_a_capped_fast_frame_waits_for_its_deadline_and_late_wake_ups_do_not_add_up(monkeypatch):
    start = 100.0
    for fake, clock, _ in _frames(monkeypatch, [0.004] * 600, late=0.001):
        pass
    # 599 periods after the first frame's end, each wake-up 1 ms late but not carried over
    assert fake.now - (start + 0.004) == pytest.approx(599 / 60.0 + 0.001, abs=1e-9)
    assert clock.fps == pytest.approx(60.0, rel=1e-6)


def test_a_capped_frame_slower_than_the_period_does_not_wait(monkeypatch):
    """A fixed grid of ticks would make each 55 ms frame wait for the next 1/60 s tick (half a
    period on average); the cap adds nothing to a frame that already took longer."""
    durations = [0.055] * 50 + [0.004] + [0.030, 0.010] * 20
    slept = [(duration, waited) for duration, (_, _, waited) in
             zip(durations, _frames(monkeypatch, durations))]
    assert not any(waited for duration, waited in slept if duration > 1 / 60)
    # a fast frame after a slow one waits out its period, counted from the slow one's end
    assert all(waited for duration, waited in slept[1:] if duration < 1 / 60)
    for fake, clock, _ in _frames(monkeypatch, [0.055] * 60):
        pass
    assert fake.sleeps == [] and clock.fps == pytest.approx(1 / 0.055)


def test_no_cap_never_waits(monkeypatch):
    for fake, clock, waited in _frames(monkeypatch, [0.001] * 30, max_fps=0):
        assert not waited
    assert clock.fps == pytest.approx(1000.0)
