"""Steps replayed from a graph (``DeviceState.advance``, CUDA graphs) against the same steps
launched kernel by kernel: the same bits, a new capture for every new dt or integrator, the
state's finite check kept, and a step that cannot be captured still run. SYCL has no graphs:
there every step is launched kernel by kernel, which the same tests check."""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Simulation, ics, make_solver
from orrery.engine.solvers import _gpu

SOLVERS = [("gpu-tree", {"theta": 0.6}), ("gpu-direct", {})]


def _twins(device, name, options, *, integrator="kdk", n=2000):
    """Two simulations of one start: the first may replay its steps, the second never does."""
    particles = ics.plummer(n, seed=5)
    replayed, launched = (Simulation(particles, make_solver(name, device=device, **options),
                                     dt=1e-3, integrator=integrator) for _ in range(2))
    launched._state.graphs = False
    return replayed, launched


def _count_evaluations(simulation, log: list) -> None:
    solver = simulation.solver
    launch = solver.launch_accelerations

    def counted(*args, **kwargs):
        log.append(1)
        return launch(*args, **kwargs)
    solver.launch_accelerations = counted


@pytest.mark.parametrize("integrator", ["kdk", "dkd"])
@pytest.mark.parametrize("name, options", SOLVERS)
def test_steps_replayed_from_a_graph_are_bit_for_bit_the_steps_launched_one_by_one(
        device, name, options, integrator):
    replayed, launched = _twins(device, name, options, integrator=integrator)
    evaluations = {id(replayed): [], id(launched): []}
    for simulation in (replayed, launched):
        _count_evaluations(simulation, evaluations[id(simulation)])
        simulation.step(6)
        simulation.dt = 2e-3  # a new key: run once as it is, then captured again
        simulation.step(4)
    for a, b in zip(replayed._state.snapshot(), launched._state.snapshot()):
        assert np.array_equal(a, b)
    first = 1 if integrator == "kdk" else 0  # kdk evaluates the start once
    assert len(evaluations[id(launched)]) == first + 10
    state = replayed._state
    if device.startswith("cuda"):
        # per dt: one step launched kernel by kernel, one captured, the rest replayed
        assert len(evaluations[id(replayed)]) == first + 4
        assert state.graphs and state._graph[0] == (integrator, 2e-3)
        stats = replayed.solver.last_stats
        assert stats["graph"] and 0 < stats["step_s"] <= stats["wall_s"]
    else:
        assert len(evaluations[id(replayed)]) == first + 10
        assert not state.graphs and state.graph_unavailable == "the device has no graphs"


def test_a_replayed_step_still_refuses_a_state_that_is_not_finite(device, monkeypatch):
    monkeypatch.setattr(_gpu, "FINITE_CHECK_INTERVAL_S", 0.0)  # a check after every step
    simulation = Simulation(ics.plummer(500, seed=3),
                            make_solver("gpu-tree", device=device), dt=1e-3)
    simulation.step(4)  # replaying by now where there are graphs
    state = simulation._state
    rows = state.body.download()
    rows[7, 0] = np.nan
    state.body.upload(rows)
    with pytest.raises(InvalidInputError, match="not finite|NaN"):
        simulation.step(1)


def test_a_step_that_waits_for_the_host_is_run_as_it_is(device):
    """A capture that fails (here: an evaluation that reads a result back) leaves the step
    to run kernel by kernel, with the reason kept, and the run is unchanged."""
    replayed, launched = _twins(device, "gpu-direct", {})
    for simulation in (replayed, launched):
        launch = simulation.solver.launch_accelerations

        def reading_back(body, out, count, *, potential, launch=launch):
            events = launch(body, out, count, potential=potential)
            out.download()
            return events
        simulation.solver.launch_accelerations = reading_back
        simulation.step(5)
    for a, b in zip(replayed._state.snapshot(), launched._state.snapshot()):
        assert np.array_equal(a, b)
    state = replayed._state
    assert not state.graphs and state.graph_unavailable
    assert "graph" not in replayed.solver.last_stats


def test_a_solver_that_reads_back_during_an_evaluation_is_never_captured(device):
    simulation = Simulation(ics.plummer(300, seed=2), make_solver("gpu-fmm", device=device),
                            dt=1e-3)
    assert simulation._state.graphs is False
    simulation.step(3)
    assert simulation._state.graph_unavailable is None
