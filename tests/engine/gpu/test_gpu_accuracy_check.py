"""``check_accuracy=K`` on a device: the sample's errors measured there, the same run within the
target, and a retune past it (tests/engine/test_accuracy_check.py for the CPU solvers)."""

import dataclasses

import numpy as np
import pytest

from orrery.engine import Simulation, ics, make_solver
from orrery.engine.accuracy import error_percentiles, sampled_exact
from orrery.engine.tuning import accuracy_table
from orrery.engine.solvers._device_state import pack, padded_count
from orrery.engine.tuning.accuracy_check import AccuracyCheck, AccuracyDriftWarning

SOFTENING = 0.01
UNDERSTATED = 20  # as in the CPU test: the table's errors this many times smaller than measured
GROUP_WALK = {"opening=group,quadrupole=False": {"opening": "group", "quadrupole": False}}


@pytest.fixture(scope="module")
def plummer():
    return ics.make("plummer", 3000, seed=4)


def test_a_device_check_reports_the_errors_that_a_separate_measurement_finds(device, plummer):
    solver = make_solver("gpu-tree", accuracy=1e-3, check_accuracy=2, softening=SOFTENING,
                         device=device)
    sim = Simulation(plummer, solver, dt=1e-3)
    sim.step(1)  # the evaluation before the first step and the step's: the second is checked
    checked = solver.accuracy_check.last
    assert checked.evaluation == 2 and checked.targets == 1000

    state = sim.particles
    targets = np.arange(0, plummer.n, 3)  # every third body: 1000, at most 1024 spread over all
    acc = make_solver("gpu-tree", accuracy=1e-3, softening=SOFTENING,
                      device=device).accelerations(state.pos, state.mass)
    rms, p90 = error_percentiles(acc[targets], sampled_exact(state.pos, state.mass, targets,
                                                             SOFTENING))
    assert checked.rms == pytest.approx(rms, rel=1e-6)
    assert checked.p90 == pytest.approx(p90, rel=1e-6)


@pytest.mark.parametrize("solver,integrator", [("gpu-tree", "kdk"), ("gpu-tree", "dkd"),
                                               ("gpu-tree", "reversible"), ("gpu-fmm", "kdk")])
def test_a_device_run_within_its_accuracy_is_bitwise_the_same_with_and_without_the_check(
        device, plummer, solver, integrator):
    runs = []
    for check in (None, 2):
        options = {} if check is None else {"check_accuracy": check}
        sim = Simulation(plummer, make_solver(solver, accuracy=1e-2, softening=SOFTENING,
                                              device=device, **options),
                         dt=1e-3, integrator=integrator)
        sim.step(4)
        runs.append(sim)
    plain, checked = runs
    last = checked.solver.accuracy_check.last
    assert last is not None and max(last.rms, last.p90) <= 1e-2
    np.testing.assert_array_equal(checked.particles.pos, plain.particles.pos)
    np.testing.assert_array_equal(checked.particles.vel, plain.particles.vel)


def test_a_device_run_past_its_accuracy_warns_once_and_retunes_to_a_setting_within_it(
        device, plummer, monkeypatch):
    rows = accuracy_table.measure("gpu-tree", GROUP_WALK,
                                  {key: (0.2, 0.3, 0.45, 0.6, 0.8, 1.0) for key in GROUP_WALK},
                                  ["plummer"], [plummer.n], seed=2,
                                  solver_options={"device": device})
    for by_scenario in rows.values():
        for by_n in by_scenario.values():
            for size, points in by_n.items():
                by_n[size] = [(theta, rms / UNDERSTATED, p90 / UNDERSTATED, cost)
                              for theta, rms, p90, cost in points]
    table = accuracy_table.AccuracyTable(rows, {key: "understated" for key in rows})
    monkeypatch.setattr(accuracy_table, "load_table", lambda: table)
    solver = make_solver("gpu-tree", accuracy=1e-3, check_accuracy=2, softening=SOFTENING,
                         device=device)
    sim = Simulation(plummer, solver, dt=1e-3)
    assert solver.theta_in_use(plummer.n) == 1.0

    with pytest.warns(AccuracyDriftWarning, match=r"gpu-tree: .* is past accuracy 0.001; "
                                                  r"retuned from theta 1 to theta 0\.") as warned:
        sim.step(5)
    assert len(warned) == 1
    last = solver.accuracy_check.last
    assert solver.theta_in_use(plummer.n) < 1.0 and solver.accuracy_check.retunes == 1
    assert last.evaluation == 6 and max(last.rms, last.p90) <= 1e-3


class _WithoutDoubles:
    """A context that says its device has no float64 (everything else is the real one's)."""

    def __init__(self, context):
        self._context = context
        self.info = dataclasses.replace(context.info, fp64=False)

    def __getattr__(self, name):
        return getattr(self._context, name)


def test_a_device_without_doubles_checks_on_the_host_what_the_device_measures(device, plummer):
    solver = make_solver("gpu-tree", accuracy=1e-3, softening=SOFTENING, device=device)
    context, n = solver.context, plummer.n
    rows = padded_count(n, solver.padding_for(n))
    body = context.upload(pack(plummer.pos, plummer.mass, rows, np.float32))
    acc = context.empty((rows, 4), np.float32)
    solver.launch_accelerations(body, acc, n, potential=False)
    on_device, on_host = (AccuracyCheck("gpu-tree", solver.setting, 1) for _ in range(2))
    on_device.device(context, body, acc, n, SOFTENING)
    on_host.device(_WithoutDoubles(context), body, acc, n, SOFTENING)
    assert on_host.last.rms == pytest.approx(on_device.last.rms, rel=1e-9)
    assert on_host.last.p90 == pytest.approx(on_device.last.p90, rel=1e-9)
