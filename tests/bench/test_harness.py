"""The benchmark harness's statistics on synthetic samples, and the ceiling probes' accounting."""

import itertools

import numpy as np
import pytest

from orrery import _native
from orrery.bench import ceilings
from orrery.bench.harness import Timing, time_interleaved, time_trials
from orrery.engine.cpu_features import available_simd_levels


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


def test_device_ceilings_become_rows():
    rates = {"fma_f32": 2e11, "rsqrt_estimate_f64": 5e10, "read": 3e10}
    rows = ceilings.rows_from_rates(rates, simd="cuda:0", threads=None)
    assert [(r["probe"], r["precision"], r["unit"]) for r in rows] == [
        ("fma", "f32", "flop/s"), ("rsqrt_estimate", "f64", "estimates/s"), ("read", "", "B/s")]
    assert rows[0]["rate_g"] == 200.0


LANES = {"scalar": {"f32": 1, "f64": 1}, "avx2": {"f32": 8, "f64": 4}, "avx512": {"f32": 16, "f64": 8}}


@pytest.mark.parametrize("simd", available_simd_levels())
def test_probes_count_the_work_they_do(simd):
    """Every rate is operations / seconds: the counts must follow from the probe's shape
    (4 units per thread, 12 FMA chains x 2 flop, 8 sqrt+divide chains, lanes per register)."""
    for precision, lanes in LANES[simd].items():
        units = 4 * 3
        assert _native.probe_operations("fma", precision, 10, 3, simd) == units * 10 * 12 * lanes * 2
        assert _native.probe_operations("sqrt_div", precision, 10, 3, simd) == units * 10 * 8 * lanes
    assert _native.probe_read_bytes(np.ones(3 * 2**17 + 5), 2, simd) == 3 * 2**20


def test_probes_refuse_what_a_level_lacks():
    with pytest.raises(ValueError, match="probe must be"):
        _native.probe_operations("tan", "f32", 1, 1, "scalar")
    with pytest.raises(RuntimeError, match="no f64 rsqrt_estimate instruction at SIMD level scalar"):
        _native.probe_operations("rsqrt_estimate", "f64", 1, 1, "scalar")
    assert not ceilings.probe_available("rsqrt_estimate", "f64", "avx2")


def test_a_resident_evaluation_is_timed_until_the_device_has_finished_it():
    """A device evaluation queues and returns (ADR 0162): what tree and fmm time through
    ``one_evaluation`` must wait for the work, here a stand-in state whose queued work takes
    50 ms to finish after the queueing call returned."""
    import time

    from orrery.bench.harness import one_evaluation

    class QueuedState:
        done_at = 0.0

        def compute_accelerations(self):
            self.done_at = time.perf_counter() + 0.05  # queued: returns at once

        def synchronize(self):
            time.sleep(max(0.0, self.done_at - time.perf_counter()))

    class Solver:
        def bind(self, particles):
            return QueuedState()

    timing = time_trials(one_evaluation(Solver(), None, resident=True), warmup=0, trials=3)
    assert timing.median >= 0.05
