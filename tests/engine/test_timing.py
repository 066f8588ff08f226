"""The timing protocol's statistics, on synthetic samples and a fake clock."""

import itertools

import pytest

from orrery.engine.tuning.timing import Timing, time_interleaved, time_trials


def test_timing_median_iqr_and_drift():
    timing = Timing((1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0))
    assert timing.median == 4.5
    assert timing.iqr == pytest.approx(6.25 - 2.75)
    # second half (5..8, median 6.5) over first half (1..4, median 2.5)
    assert timing.drift == pytest.approx(6.5 / 2.5 - 1)
    assert Timing((2.0, 2.0, 2.0)).iqr == 0.0 and Timing((3.0,)).drift == 0.0


def fake_clock(step_of_call):
    """A timer that advances by the duration assigned to each timed call in turn."""
    now = [0.0]
    durations = iter(step_of_call)

    def timer():
        return now[0]

    def work():
        now[0] += next(durations)
    return timer, work


def test_time_trials_discards_warmup():
    timer, work = fake_clock([100.0, 100.0, 1.0, 2.0, 3.0])
    timing = time_trials(work, warmup=2, trials=3, timer=timer)
    assert timing.samples == (1.0, 2.0, 3.0)


def test_time_interleaved_takes_turns():
    order = []
    clock = itertools.count()
    fns = {"a": lambda: order.append("a"), "b": lambda: order.append("b")}
    timings = time_interleaved(fns, warmup=1, trials=2, timer=lambda: float(next(clock)))
    assert order == ["a", "b", "a", "b", "a", "b"]
    assert set(timings) == {"a", "b"} and all(len(t.samples) == 2 for t in timings.values())
