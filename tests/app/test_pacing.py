"""A render loop draws only what shows something new (DrawPacing)."""

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
