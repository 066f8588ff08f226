"""``check_accuracy=K``: a run's force error measured while it runs, and retuned past the target."""

import time

import numpy as np
import pytest

from orrery.app.cli import main
from orrery.engine import Simulation, ics, make_solver
from orrery.engine.accuracy import error_percentiles, sampled_exact
from orrery.engine.errors import InvalidInputError, UnknownSolverError
from orrery.engine.runner import RunSettings, SimulationRunner
from orrery.engine.tuning import accuracy_table
from orrery.engine.tuning.accuracy_check import AccuracyDriftWarning

SOFTENING = 0.01
# The factor by which the table of the retune test understates the errors it measured.
UNDERSTATED = 20


@pytest.fixture(scope="module")
def plummer():
    return ics.make("plummer", 3000, seed=4)


def understated_table(solver: str, variants: dict, n: int, *,
                      thetas=(0.2, 0.3, 0.45, 0.6, 0.8, 1.0),
                      **options) -> accuracy_table.AccuracyTable:
    """``solver``'s errors at ``thetas`` measured on one Plummer sphere, written into a table as
    ``UNDERSTATED`` times smaller than measured: the table then chooses settings far too loose."""
    rows = accuracy_table.measure(solver, variants, {key: thetas for key in variants},
                                  ["plummer"], [n], seed=2,
                                  solver_options=options)
    for by_scenario in rows.values():
        for by_n in by_scenario.values():
            for size, points in by_n.items():
                by_n[size] = [(theta, rms / UNDERSTATED, p90 / UNDERSTATED, cost)
                              for theta, rms, p90, cost in points]
    return accuracy_table.AccuracyTable(rows, {key: "understated" for key in rows})


def test_a_check_reports_the_errors_that_a_separate_measurement_finds(plummer):
    solver = make_solver("cpu-tree", accuracy=1e-3, check_accuracy=3, softening=SOFTENING)
    sim = Simulation(plummer, solver, dt=1e-3)
    sim.step(2)  # kick-drift-kick: the evaluation before the first step and one a step
    checked = solver.accuracy_check.last
    assert checked.evaluation == 3 and checked.targets == 1000

    state = sim.particles
    targets = np.arange(0, plummer.n, 3)  # every third body: 1000, at most 1024 spread over all
    acc = make_solver("cpu-tree", accuracy=1e-3, softening=SOFTENING).accelerations(state.pos,
                                                                                     state.mass)
    rms, p90 = error_percentiles(acc[targets], sampled_exact(state.pos, state.mass, targets,
                                                             SOFTENING))
    assert checked.rms == pytest.approx(rms, rel=1e-9)
    assert checked.p90 == pytest.approx(p90, rel=1e-9)
    assert f"RMS {rms:.2g}, p90 {p90:.2g} over 1,000 bodies at evaluation 3" in sim.describe()


@pytest.mark.parametrize("solver,integrator", [("cpu-tree", "kdk"), ("cpu-tree", "dkd"),
                                               ("cpu-tree", "reversible"), ("cpu-fmm", "kdk")])
def test_a_run_within_its_accuracy_is_bitwise_the_same_with_and_without_the_check(
        plummer, solver, integrator):
    runs = []
    for check in (None, 2):
        options = {} if check is None else {"check_accuracy": check}
        sim = Simulation(plummer, make_solver(solver, accuracy=1e-2, softening=SOFTENING,
                                              **options), dt=1e-3, integrator=integrator)
        sim.step(5)
        runs.append(sim)
    plain, checked = runs
    last = checked.solver.accuracy_check.last
    assert last is not None and max(last.rms, last.p90) <= 1e-2  # within: no warning either
    np.testing.assert_array_equal(checked.particles.pos, plain.particles.pos)
    np.testing.assert_array_equal(checked.particles.vel, plain.particles.vel)


def test_a_run_past_its_accuracy_warns_once_and_retunes_to_a_setting_within_it(plummer,
                                                                                 monkeypatch):
    table = understated_table("cpu-tree", {"quadrupole=False": {"quadrupole": False}}, plummer.n)
    monkeypatch.setattr(accuracy_table, "load_table", lambda: table)
    solver = make_solver("cpu-tree", accuracy=1e-3, quadrupole=False, check_accuracy=1,
                         softening=SOFTENING)
    sim = Simulation(plummer, solver, dt=1e-3)
    loose = solver.theta_in_use(plummer.n)
    assert loose == 1.0  # the understated table's loosest theta

    with pytest.warns(AccuracyDriftWarning, match=r"cpu-tree: the force error measured at "
                      r"evaluation 1 \(RMS .*\) is past accuracy 0.001; retuned from theta 1 "
                      r"to theta 0\.") as warned:
        sim.step(3)
    assert len(warned) == 1
    tight = solver.theta_in_use(plummer.n)
    last = solver.accuracy_check.last
    assert tight < loose and solver.accuracy_check.retunes == 1
    assert last.evaluation == 4 and max(last.rms, last.p90) <= 1e-3
    assert "retuned: the table asked for" in sim.describe()


def test_a_run_past_its_accuracy_at_the_tables_tightest_setting_warns_once_and_goes_on_at_it(
        plummer, monkeypatch):
    # One theta: the tightest setting is the one chosen (a tree chooses between the thetas of a
    # table of more).
    table = understated_table("cpu-tree", {"quadrupole=False": {"quadrupole": False}}, plummer.n,
                              thetas=(0.2,))
    monkeypatch.setattr(accuracy_table, "load_table", lambda: table)
    solver = make_solver("cpu-tree", accuracy=1e-5, quadrupole=False, check_accuracy=1,
                         softening=SOFTENING)
    sim = Simulation(plummer, solver, dt=1e-3)
    with pytest.warns(AccuracyDriftWarning, match="past accuracy 1e-05; the accuracy table has "
                      "nothing tighter than theta 0.2: the run goes on at it$"):
        sim.step(1)
    sim.step(2)  # still past the target: no second warning (it would fail this test)
    last = solver.accuracy_check.last
    assert last.evaluation == 4 and max(last.rms, last.p90) > 1e-5
    assert solver.theta_in_use(plummer.n) == 0.2 and solver.accuracy_check.retunes == 0


def test_check_accuracy_is_refused_without_an_accuracy_to_check():
    with pytest.raises(InvalidInputError, match="check_accuracy verifies accuracy=, which this "
                                                "solver was not given .it runs at theta 0.5."):
        make_solver("cpu-tree", theta=0.5, check_accuracy=10)
    with pytest.raises(InvalidInputError, match="check_accuracy verifies accuracy="):
        make_solver("auto", theta=0.5, check_accuracy=10)
    with pytest.raises(UnknownSolverError, match="no option.*check_accuracy"):
        make_solver("cpu-direct", check_accuracy=10)
    for every in (0, -3, 2.5, "often"):
        with pytest.raises(InvalidInputError, match="check_accuracy must be"):
            make_solver("cpu-tree", accuracy=1e-3, check_accuracy=every)


def test_orrery_run_checks_every_k_evaluations_and_reports_the_last_check(capsys):
    code = main(["run", "--n", "2000", "--steps", "4", "--quiet", "--solver", "cpu-tree",
                 "--accuracy", "1e-3", "--check-accuracy", "2"])
    assert code == 0
    assert "accuracy checked every 2 evaluations: RMS" in capsys.readouterr().out


def test_orrery_run_refuses_a_check_of_no_accuracy(capsys):
    assert main(["run", "--n", "100", "--steps", "1", "--quiet", "--solver", "cpu-tree",
                 "--theta", "0.5", "--check-accuracy", "2"]) == 2
    assert "check_accuracy verifies accuracy=" in capsys.readouterr().err


def test_a_live_run_shows_its_checks_in_the_frame_stats():
    runner = SimulationRunner(RunSettings(scenario="plummer", n=5000, seed=1, solver="auto",
                                          dt=1e-3, check_accuracy=1), energy_every=1000)
    try:
        assert _wait_until(lambda: "accuracy checked every 1 evaluations: RMS"
                           in runner.latest().stats.solver)
        assert runner.error is None
    finally:
        runner.close()


def test_a_live_run_given_a_theta_or_another_solver_runs_on_unchecked():
    runner = SimulationRunner(RunSettings(scenario="plummer", n=5000, seed=1, solver="auto",
                                          dt=1e-3, check_accuracy=1), energy_every=1000)

    def described(*parts):
        return _wait_until(lambda: all(part in runner.latest().stats.solver for part in parts))

    try:
        assert described("auto: cpu-tree", "accuracy checked every 1 evaluations: RMS")
        runner.update(theta=0.6)
        assert described("auto: cpu-tree", "theta=0.6")
        runner.update(theta=None, solver="cpu-direct")
        assert described("cpu-direct (")
        runner.update(solver="cpu-tree")
        assert described("cpu-tree (")
        assert "accuracy checked" not in runner.latest().stats.solver and runner.error is None
        runner.update(solver="auto")
        assert described("auto: cpu-tree", "accuracy checked every 1 evaluations: RMS")
        assert runner.error is None
    finally:
        runner.close()


def _wait_until(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False
