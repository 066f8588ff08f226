"""A render loop draws only what shows something new (DrawPacing), capped on a fixed grid."""

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
