"""gpu-direct against the reference solver, at awkward sizes, and driving a Simulation whose
state stays on the device."""

import math

import numpy as np
import pytest

from orrery.engine import (InvalidInputError, Particles, Simulation, SolverUnavailableError, ics,
                           make_solver)
from orrery.engine.accuracy import max_relative_error
from orrery.engine.compute import DeviceArray
from orrery.engine.solvers import _gpu
from orrery.engine.solvers._device_state import DeviceState

from .call_log import log_transfers


def _reference(particles, softening, potential=False):
    return make_solver("reference", softening=softening).accelerations(
        particles.pos, particles.mass, potential=potential)


def test_float32_matches_reference_at_4096(device):
    particles = ics.plummer(4096, seed=5)
    solver = make_solver("gpu-direct", device=device, precision="f32", softening=0.01, targets=2)
    acc = solver.accelerations(particles.pos, particles.mass)
    assert acc.dtype == np.float32 and acc.shape == (4096, 3)
    assert max_relative_error(acc, _reference(particles, 0.01)) <= 2e-5
    assert 0 < solver.last_stats["kernel_s"] <= solver.last_stats["wall_s"]


@pytest.mark.parametrize("n, tile_size, targets",
                         [(1, 256, 1), (5, 256, 2), (257, 256, 1), (1001, 64, 4), (97, 32, 2)])
def test_odd_sizes_and_fewer_bodies_than_a_tile(device, n, tile_size, targets):
    particles = ics.plummer(n, seed=n)
    solver = make_solver("gpu-direct", device=device, precision="f64", softening=0.05,
                         tile_size=tile_size, targets=targets)
    acc, pot = solver.accelerations(particles.pos, particles.mass, potential=True)
    ref_acc, ref_pot = _reference(particles, 0.05, potential=True)
    assert acc.shape == (n, 3) and pot.shape == (n,)
    if n == 1:  # a lone body feels nothing, not itself
        assert np.array_equal(acc, np.zeros((1, 3))) and np.array_equal(pot, np.zeros(1))
    else:
        assert max_relative_error(acc, ref_acc) <= 1e-12
        assert np.allclose(pot, ref_pot, rtol=1e-12, atol=0)


def test_zero_softening_two_bodies_exactly(device):
    pos = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    solver = make_solver("gpu-direct", device=device, precision="f64", softening=0.0)
    acc, pot = solver.accelerations(pos, np.array([3.0, 1.0]), potential=True)
    assert np.array_equal(acc, [[0.25, 0, 0], [-0.75, 0, 0]])
    assert np.array_equal(pot, [-0.5, -1.5])


def test_float32_potential_matches_reference(device):
    particles = ics.plummer(1500, seed=2)
    solver = make_solver("gpu-direct", device=device, softening=0.01)
    _, pot = solver.accelerations(particles.pos, particles.mass, potential=True)
    _, ref_pot = _reference(particles, 0.01, potential=True)
    assert np.max(np.abs(pot / ref_pot - 1)) <= 2e-6


def test_tile_size_must_fit_the_device(device):
    with pytest.raises(InvalidInputError, match="tile_size"):
        make_solver("gpu-direct", device=device, tile_size=48)


def test_named_absent_device_is_unavailable():
    # With some compute device present the error names the missing one; with none at all it
    # says that no GPU stack is there.
    from orrery.engine import compute

    expected = "sycl:42" if compute.list_devices().devices else "no GPU compute device"
    with pytest.raises(SolverUnavailableError, match=expected):
        make_solver("gpu-direct", device="sycl:42")


def test_simulation_state_stays_on_device_and_agrees_with_cpu(device, monkeypatch):
    # The once-a-second check for NaN copies positions back; a slow machine must not see one here.
    monkeypatch.setattr(_gpu, "FINITE_CHECK_INTERVAL_S", math.inf)
    particles = ics.plummer(600, seed=9)
    gpu = Simulation(particles, make_solver("gpu-direct", device=device, precision="f64",
                                            softening=0.02, tile_size=128), dt=2e-3)
    cpu = Simulation(particles, make_solver("cpu-direct", precision="f64", softening=0.02), dt=2e-3)
    assert isinstance(gpu._state, DeviceState)
    array_type = type(gpu._state.body)  # the backend's DeviceArray: every transfer goes through it
    assert issubclass(array_type, DeviceArray)
    transfers = log_transfers(monkeypatch, array_type)
    gpu.step(40)
    assert transfers == []  # forty steps, not one host transfer
    cpu.step(40)
    positions = gpu.positions()
    assert transfers == ["download"]
    assert np.allclose(positions, cpu.positions(), rtol=0, atol=1e-11)
    assert np.allclose(gpu.particles.vel, cpu.particles.vel, rtol=0, atol=1e-11)
    assert gpu.energy_error() == pytest.approx(cpu.energy_error(), abs=1e-12)


def test_float32_simulation_conserves_energy(device):
    particles = ics.plummer(512, seed=4)
    sim = Simulation(particles, make_solver("gpu-direct", device=device, softening=0.02), dt=1e-3)
    sim.step(200)
    assert sim.time == pytest.approx(0.2)
    assert abs(sim.energy_error()) <= 1e-4
    assert isinstance(sim.particles, Particles) and sim.particles.pos.dtype == np.float32



def test_automatic_launch_shrinks_groups_for_small_n_and_keeps_explicit_ones(device):
    solver = make_solver("gpu-direct", device=device, precision="f64", softening=0.05)
    units = solver.context.info.compute_units
    large = solver.launch_config(1 << 24)
    tile, targets = solver.launch_config(1000)
    assert tile * targets <= large[0] * large[1]
    assert -(-1000 // (tile * targets)) >= 0.9 * units or (tile, targets) == (64, 1)
    particles = ics.plummer(1000, seed=8)
    acc = solver.accelerations(particles.pos, particles.mass)
    assert max_relative_error(acc, _reference(particles, 0.05)) <= 1e-12
    assert (solver.last_stats["tile_size"], solver.last_stats["targets"]) == (tile, targets)
    explicit = make_solver("gpu-direct", device=device, tile_size=128, targets=4)
    assert explicit.launch_config(10) == (128, 4)
