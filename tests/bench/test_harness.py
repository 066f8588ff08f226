"""The ceiling probes' accounting and what a benchmark times as one evaluation."""

import numpy as np
import pytest

from orrery import _native
from orrery.bench import ceilings
from orrery.engine.cpu_features import available_simd_levels


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
    from orrery.engine.tuning.timing import time_trials

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


def test_an_evaluation_launched_one_by_one_turns_replay_off_only_within():
    """A solver that replays captured evaluations (gpu-fmm) launches kernel by kernel inside
    ``launched_one_by_one`` and replays again after it; one that never replays stays so."""
    from orrery.bench.harness import launched_one_by_one
    from orrery.engine import make_solver

    host = make_solver("cpu-fmm", softening=0.05, threads=1)
    replaying = make_solver("cpu-fmm", softening=0.05, threads=1)
    replaying.replay = True  # as gpu-fmm's are made
    with launched_one_by_one(host), launched_one_by_one(replaying):
        assert (host.replay, replaying.replay) == (False, False)
    assert (host.replay, replaying.replay) == (False, True)
