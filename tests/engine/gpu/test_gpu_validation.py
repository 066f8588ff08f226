"""GPU solvers refuse a non-finite state as the CPU solvers do (issue 18): whenever the state
comes to the host and, between, at least once per ``FINITE_CHECK_INTERVAL_S``; and a single
body, bad options and out-of-range inputs give errors, not NaN."""

import math

import pytest

from orrery.app.cli import main
from orrery.engine import InvalidInputError, Particles, Simulation, ics, make_solver
from orrery.engine.solvers import _gpu

GPU_SOLVERS = ["gpu-direct", "gpu-tree"]


@pytest.mark.parametrize("solver", GPU_SOLVERS)
def test_a_state_that_overflows_is_an_error_when_it_reaches_the_host(device, solver, monkeypatch):
    monkeypatch.setattr(_gpu, "FINITE_CHECK_INTERVAL_S", math.inf)
    sim = Simulation(ics.plummer(64, seed=2), make_solver(solver, device=device), dt=1e30)
    sim.step(2)  # no check between host reads with an infinite interval
    for read in (sim.positions, sim.diagnostics, sim.energy_error, lambda: sim.particles):
        with pytest.raises(InvalidInputError, match="not finite"):
            read()


@pytest.mark.parametrize("solver", GPU_SOLVERS)
def test_a_state_that_overflows_stops_the_steps_within_the_check_interval(device, solver,
                                                                          monkeypatch):
    monkeypatch.setattr(_gpu, "FINITE_CHECK_INTERVAL_S", 0.0)
    sim = Simulation(ics.plummer(64, seed=2), make_solver(solver, device=device), dt=1e30)
    with pytest.raises(InvalidInputError, match="position of particle .* is not finite"):
        sim.step(2)


def test_a_finite_run_passes_every_check(device, monkeypatch):
    monkeypatch.setattr(_gpu, "FINITE_CHECK_INTERVAL_S", 0.0)
    sim = Simulation(ics.plummer(64, seed=2), make_solver("gpu-direct", device=device), dt=1e-3)
    sim.step(5)
    assert abs(sim.energy_error()) < 1e-4


@pytest.mark.parametrize("solver", GPU_SOLVERS)
def test_one_body_has_zero_energy_error(device, solver):
    sim = Simulation(ics.plummer(1), make_solver(solver, device=device), dt=1e-3)
    sim.step(2)
    assert sim.energy_error() == 0.0


def test_float64_positions_beyond_float32_are_refused_before_upload(device):
    p = ics.plummer(16, seed=1)
    huge = Particles(p.pos * 1e39, p.vel, p.mass)
    with pytest.raises(InvalidInputError, match="too large for float32"):
        Simulation(huge, make_solver("gpu-direct", device=device, precision="f32"), dt=1e-3)


def test_the_cli_stops_a_gpu_run_that_overflows_with_one_line(device, capsys):
    code = main(["run", "--solver", "gpu-direct", "--device", device, "--n", "32", "--steps", "3",
                 "--dt", "1e30", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("orrery run: error: position of particle")
