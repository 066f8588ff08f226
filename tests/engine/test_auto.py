"""The ``auto`` solver: picks per stored crossovers, falls back to defaults and says so."""

import json

import numpy as np
import pytest

import orrery.engine.solvers as solvers_module
from orrery.engine import Simulation, ics, make_solver
from orrery.engine.errors import InvalidInputError
from orrery.engine.options import SolverSpec
from orrery.engine.solvers import cpu_direct
from orrery.engine.solvers.auto import DEFAULT_THRESHOLDS, default_schedule
from orrery.engine.tuning.calibration import Calibration, CalibrationCacheWarning, save_calibration

TWIN = "cpu-direct-twin"
GPU_FMM_FROM = DEFAULT_THRESHOLDS["gpu-fmm"]
CPU_FMM_FROM = DEFAULT_THRESHOLDS["cpu-fmm"]


class TwinSolver(cpu_direct.CpuDirectSolver):
    """cpu-direct under another name: a second solver that can run anywhere."""

    name = TWIN


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("ORRERY_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def with_twin(monkeypatch):
    """Add the twin to the registry, as a solver merged later would be."""
    real = solvers_module.solver_specs
    twin = SolverSpec(name=TWIN, doc="test double", options=cpu_direct.SPEC.options,
                      factory=TwinSolver)
    monkeypatch.setattr(solvers_module, "solver_specs", lambda: {**real(), TWIN: twin})


def crossing_at(threshold, *, first="cpu-direct", second=TWIN, **extra):
    sizes = [2 ** k for k in range(6, 16)]
    curves = {first: [(n, n * n * 1e-9) for n in sizes],
              second: [(n, threshold * n * 1e-9) for n in sizes]}
    return Calibration(precision="f32", curves=curves, **extra)


def test_uncalibrated_auto_uses_the_defaults_and_says_so(cache_dir, plummer_2048):
    auto = make_solver("auto", softening=0.02)
    assert auto.chosen is None and "first evaluation" in auto.reason
    acc = auto.accelerations(plummer_2048.pos, plummer_2048.mass)
    assert auto.chosen == "cpu-direct"
    assert auto.reason.startswith("not calibrated")
    assert "default thresholds" in auto.reason
    assert auto.last_stats["solver"] == "cpu-direct"
    expected = make_solver("cpu-direct", softening=0.02).accelerations(plummer_2048.pos,
                                                                       plummer_2048.mass)
    np.testing.assert_array_equal(acc, expected)


def test_auto_picks_per_the_stored_crossover_and_again_when_n_changes(cache_dir, with_twin):
    save_calibration(crossing_at(1000))
    auto = make_solver("auto")
    small, large = ics.plummer(500, seed=1), ics.plummer(1500, seed=1)
    auto.accelerations(small.pos, small.mass)
    assert auto.chosen == "cpu-direct"
    assert auto.reason.startswith("calibrated on 20")
    assert auto.reason.endswith("cpu-direct is fastest below 1,000 particles")
    auto.accelerations(large.pos, large.mass)
    assert auto.chosen == TWIN and auto.last_stats["solver"] == TWIN
    assert auto.reason.endswith(f"{TWIN} is fastest above 1,000 particles")
    auto.accelerations(small.pos, small.mass)
    assert auto.chosen == "cpu-direct"


def test_defaults_without_a_calibration_ignore_unknown_solvers(cache_dir, with_twin):
    auto = make_solver("auto")
    large = ics.plummer(3000, seed=1)  # below every default tree threshold
    auto.accelerations(large.pos, large.mass)
    assert auto.chosen == "cpu-direct"


def test_a_calibration_for_another_precision_is_not_used(cache_dir, with_twin):
    save_calibration(crossing_at(1000))
    auto = make_solver("auto", precision="f64")
    p = ics.plummer(1500, seed=1)
    acc = auto.accelerations(p.pos, p.mass)
    assert auto.chosen == "cpu-direct"
    assert auto.reason.startswith("not calibrated (run `orrery calibrate --precision f64`)")
    assert acc.dtype == np.float64


def test_a_stale_cache_is_ignored_with_a_warning(cache_dir, with_twin):
    save_calibration(crossing_at(1000, machine={"cpu": "a machine long gone", "threads": 4}))
    auto = make_solver("auto")
    p = ics.plummer(1500, seed=1)
    with pytest.warns(CalibrationCacheWarning, match="another machine"):
        auto.accelerations(p.pos, p.mass)
    assert auto.chosen == "cpu-direct" and auto.reason.startswith("not calibrated")


def test_a_corrupt_cache_is_ignored_with_a_warning(cache_dir, with_twin):
    (cache_dir / "calibration.json").write_text(json.dumps({"format": 1, "entries": [{"x": 1}]}))
    auto = make_solver("auto")
    p = ics.plummer(1500, seed=1)
    with pytest.warns(CalibrationCacheWarning, match="damaged entry"):
        auto.accelerations(p.pos, p.mass)
    assert auto.chosen == "cpu-direct" and auto.reason.startswith("not calibrated")


def test_a_solver_that_rejects_the_options_is_not_a_candidate(cache_dir, monkeypatch):
    real = solvers_module.solver_specs
    single_only = SolverSpec(
        name=TWIN, doc="f32 only",
        options=(cpu_direct.SPEC.options[0].__class__("precision", str, "f32", "f32 only",
                                                      choices=("f32",)),
                 *cpu_direct.SPEC.options[1:]),
        factory=TwinSolver)
    monkeypatch.setattr(solvers_module, "solver_specs", lambda: {**real(), TWIN: single_only})
    save_calibration(Calibration(precision="f64", curves=crossing_at(1000).curves))
    auto = make_solver("auto", precision="f64")
    p = ics.plummer(1500, seed=1)
    auto.accelerations(p.pos, p.mass)
    assert auto.chosen == "cpu-direct"
    assert auto.reason.endswith("cpu-direct is fastest at every size")


def test_options_reach_the_chosen_solver_only_if_it_has_them(cache_dir, plummer_2048):
    auto = make_solver("auto", theta=0.3, quadrupole=True, threads=1, precision="f64")
    auto.accelerations(plummer_2048.pos, plummer_2048.mass)
    chosen = auto._solvers["cpu-direct"]
    assert {k: chosen.params[k] for k in ("precision", "softening", "threads")} == {
        "precision": "f64", "softening": 0.01, "threads": 1}
    assert "theta" not in chosen.params and "quadrupole" not in chosen.params
    assert "cpu-direct" in auto.describe() and "not calibrated" in auto.describe()
    with pytest.raises(InvalidInputError, match="theta"):
        make_solver("auto", theta=5.0)


def test_bind_hands_the_chosen_solvers_own_state_to_the_simulation(cache_dir):
    particles = ics.plummer(300, seed=4)
    auto_sim = Simulation(particles, make_solver("auto"), dt=1e-3)
    direct_sim = Simulation(particles, make_solver("cpu-direct"), dt=1e-3)
    assert auto_sim._state.solver.name == "cpu-direct"
    auto_sim.step(5)
    direct_sim.step(5)
    np.testing.assert_array_equal(auto_sim.positions(), direct_sim.positions())


@pytest.mark.parametrize("available, expected", [
    ({"cpu-direct"}, [("cpu-direct", 0, None)]),
    ({"cpu-direct", "cpu-tree"}, [("cpu-direct", 0, 4000), ("cpu-tree", 4000, None)]),
    ({"cpu-direct", "cpu-tree", "gpu-direct"},
     [("cpu-direct", 0, 2200), ("gpu-direct", 2200, None)]),
    ({"cpu-direct", "cpu-tree", "gpu-direct", "gpu-tree"},
     [("cpu-direct", 0, 2200), ("gpu-direct", 2200, 9000), ("gpu-tree", 9000, None)]),
    ({"cpu-direct", "cpu-tree", "gpu-tree"},
     [("cpu-direct", 0, 4000), ("cpu-tree", 4000, 9000), ("gpu-tree", 9000, None)]),
    ({"cpu-direct", "some-future-solver"}, [("cpu-direct", 0, None)]),
    ({"cpu-direct", "cpu-tree", "cpu-fmm"},
     [("cpu-direct", 0, 4000), ("cpu-tree", 4000, CPU_FMM_FROM), ("cpu-fmm", CPU_FMM_FROM, None)]),
    ({"cpu-direct", "cpu-tree", "cpu-fmm", "gpu-direct", "gpu-tree", "gpu-fmm"},  # the FMM on the GPU
     [("cpu-direct", 0, 2200), ("gpu-direct", 2200, GPU_FMM_FROM), ("gpu-fmm", GPU_FMM_FROM, None)]),
])
def test_default_thresholds_for_each_set_of_available_solvers(available, expected):
    schedule = default_schedule(available)
    assert [(s.solver, s.lower, s.upper) for s in schedule.segments] == expected


def test_auto_at_1e_3_picks_what_the_same_run_measures_fastest_at_equal_error(cache_dir):
    """Crossovers timed the way `orrery calibrate` times them (every CPU solver, the approximate
    ones at accuracy 1e-3, so at equal error), stored, and auto asked at each size: it names a
    solver the run measured within 30% of the fastest (closer than that is too close to call in
    one run on a shared machine), and says it was calibrated at 1e-3; direct summation is among
    them at 256 (where a tree at 1e-3 opens nearly every cell, so it may tie), and not at 65536."""
    from orrery.engine.tuning.solver_timing import as_timing_curves, measure_curves

    sizes = [256, 4096, 65536]
    curves = measure_curves(["cpu-direct", "cpu-tree", "cpu-fmm"], sizes, warmup=1, trials=3,
                            budget_s=120, max_eval_s=30)
    save_calibration(Calibration(precision="f32", curves=as_timing_curves(curves),
                                 settings={"accuracy": 1e-3}))
    fastest = {}
    for n in sizes:
        medians = {name: next(p.timing.median for p in points if p.n == n)
                   for name, points in curves.items() if any(p.n == n for p in points)}
        best = min(medians.values())
        fastest[n] = {name for name, median in medians.items() if median < 1.3 * best}
        auto = make_solver("auto", accuracy=1e-3)
        particles = ics.plummer(n, seed=0)
        auto.accelerations(particles.pos, particles.mass)
        assert auto.chosen in fastest[n], (n, medians, auto.reason)
        assert "at accuracy 0.001" in auto.reason
    assert "cpu-direct" in fastest[256], fastest
    assert "cpu-direct" not in fastest[65536], fastest
