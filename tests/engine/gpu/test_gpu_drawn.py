"""Initial conditions drawn on the device (``initial_conditions/on_device.py``, ``plummer.cl``):
the host generator's distribution from a counter-based stream, in the centre-of-mass frame,
the same bodies for a seed, nothing built on the host, and ``orrery run --draw-on-device``."""

import numpy as np
import pytest
from scipy.stats import ks_2samp

from orrery.app.cli import main
from orrery.engine import InvalidInputError, Simulation, ics, make_solver
from orrery.engine.initial_conditions import on_device

from .conftest import needs_float64


def _drawn(device, n, *, seed=0, precision="f32", solver="gpu-direct"):
    state = make_solver(solver, precision=precision, softening=0.01, device=device).bind_drawn(
        "plummer", n, seed=seed)
    return state, state.snapshot()


def test_drawn_plummer_spheres_have_the_host_generators_radii_and_speeds(device):
    """Two-sample Kolmogorov-Smirnov against ics.plummer's bodies (another stream): the radii
    and speeds are drawn from the same distributions (a wrong scale, cutoff or speed law moves
    the statistic far past these p-values at 20,000 bodies)."""
    _, (pos, vel, mass) = _drawn(device, 20_000, seed=5)
    host = ics.plummer(20_000, seed=5)
    for drawn, hosted in ((pos, host.pos), (vel, host.vel)):
        assert ks_2samp(np.linalg.norm(drawn, axis=1), np.linalg.norm(hosted, axis=1)).pvalue > 1e-3
    assert np.all(mass == np.float32(1 / 20_000))


def test_drawn_bodies_are_in_their_centre_of_mass_frame_and_in_virial_equilibrium(device):
    solver = make_solver("gpu-direct", precision="f32", softening=0.0, device=device)
    sim = Simulation.drawn_on_device("plummer", 4096, solver, seed=2, dt=1e-3)
    particles = sim.particles
    pos, vel = particles.pos, particles.vel
    assert np.abs(pos.astype(np.float64).mean(axis=0)).max() < 1e-6
    assert np.abs(vel.astype(np.float64).mean(axis=0)).max() < 1e-6
    energy = sim.diagnostics()
    # Hénon units: kinetic 1/4, potential -1/2 (the mass cutoff and 4096 bodies move them by a
    # few per cent); 2K/|W| is 1 in equilibrium.
    assert abs(2 * energy.kinetic / abs(energy.potential) - 1) < 0.05
    assert abs(energy.kinetic - 0.25) < 0.02


def test_a_seed_draws_the_same_bodies_and_the_padding_stays_empty(device):
    state, (pos, vel, _) = _drawn(device, 1000, seed=7)
    _, (again, again_vel, _) = _drawn(device, 1000, seed=7)
    _, (other, _, _) = _drawn(device, 1000, seed=8)
    assert np.array_equal(pos.view(np.uint32), again.view(np.uint32))
    assert np.array_equal(vel.view(np.uint32), again_vel.view(np.uint32))
    assert not np.any(pos == other)
    rows = state.body.download()
    assert state.padded > 1000 and not rows[1000:].any()


def test_float64_states_are_drawn_in_float64(device):
    solver = make_solver("gpu-direct", precision="f64", softening=0.01, device=device)
    needs_float64(device, solver.context.info)
    pos, vel, mass = solver.bind_drawn("plummer", 2000, seed=1).snapshot()
    assert pos.dtype == np.float64 and abs(mass.sum() - 1) < 1e-12
    # float64 radii, not float32 ones widened: the low bits are used
    assert np.any(pos.astype(np.float32).astype(np.float64) != pos)


def test_drawing_builds_nothing_of_the_particles_on_the_host(device, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("drawn on the host")
    monkeypatch.setattr(ics, "plummer", refuse)
    monkeypatch.setattr(np.random, "default_rng", refuse)
    state, (pos, _, _) = _drawn(device, 500, solver="gpu-fmm")
    state.compute_accelerations()
    assert np.isfinite(state.accelerations()).all() and pos.shape == (500, 3)


def test_what_cannot_be_drawn_on_a_device_is_refused(device):
    solver = make_solver("gpu-direct", precision="f32", softening=0.01, device=device)
    with pytest.raises(InvalidInputError, match="drawn on the host only"):
        solver.bind_drawn("hernquist", 100)
    with pytest.raises(InvalidInputError, match="seed"):
        solver.bind_drawn("plummer", 100, seed=-1)
    with pytest.raises(InvalidInputError, match="reversible"):
        Simulation.drawn_on_device("plummer", 100, solver, dt=1e-3, integrator="reversible")
    with pytest.raises(InvalidInputError, match="GPU solver"):
        Simulation.drawn_on_device("plummer", 100, make_solver("cpu-direct"), dt=1e-3)
    assert on_device.DEVICE_GENERATORS == ("plummer",)


def test_orrery_run_draws_on_the_device_and_records_that_it_did(device, tmp_path, capsys):
    from orrery.engine.recording import RecordingFile

    path = tmp_path / "drawn.h5"
    assert main(["run", "--ic", "plummer", "--draw-on-device", "--solver", "gpu-direct", "--device", device,
                 "--n", "300", "--steps", "2", "--seed", "4", "--quiet", "--record", str(path)]) == 0
    with RecordingFile(path) as recording:
        assert recording.attributes["drawn_on_device"] is True and recording.n == 300
        first = recording.read(0)
    _, (pos, _, _) = _drawn(device, 300, seed=4)
    assert np.array_equal(first, pos)
    assert main(["run", "--draw-on-device", "--scenario", "galaxy-collision", "--quiet"]) == 2
    assert "a --scenario or --load snapshot is built on the host" in capsys.readouterr().err
