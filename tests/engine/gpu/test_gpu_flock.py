"""Boids on every device backend give the CPU's bits: each search and cell width, two
work-group sizes, state kept on the device for several steps."""

import numpy as np
import pytest

from orrery.engine.flock import SEARCHES, FlockParameters, FlockSimulation, initial_flock, reference
from orrery.engine.compute import STEPS_IN_FLIGHT
from orrery.engine.errors import InvalidInputError
from orrery.engine.flock._device import DeviceFlock

from ..flock_cases import SEAM_RULES, seam_flock
from .call_log import log_waits

RULES = FlockParameters(world=50.0)


# The naive search has no grid, so one cell width covers it.
CASES = [(search, width) for search in SEARCHES for width in ((1,) if search == "naive" else (1, 2))]


@pytest.mark.parametrize("search, cell_width", CASES)
def test_device_steps_equal_the_cpu_steps_bit_for_bit(device, search, cell_width):
    rules = RULES.with_changes(search=search, cell_width=cell_width)
    start = initial_flock(3000, seed=11, rules=rules, clumps=3)
    cpu = FlockSimulation(start, rules, dt=0.2)
    cpu.step(3)
    for group in (32, 128):
        on_device = FlockSimulation(start, rules, dt=0.2, device=device, group=group)
        on_device.step(3)
        got = on_device.particles
        np.testing.assert_array_equal(got.vel, cpu.particles.vel)
        np.testing.assert_array_equal(got.pos, cpu.particles.pos)


def test_device_timing_names_the_phases_and_the_sort_is_part_of_the_grid(device):
    sim = FlockSimulation(initial_flock(2000, rules=RULES), RULES, dt=0.2, device=device)
    sim.step(1)
    timing = sim.timing
    assert set(timing) == {"grid", "sort", "gather", "rules"}
    assert 0 < timing["sort"] < timing["grid"] and timing["rules"] > 0  # keys computed
    sim.step(1)  # the first step's rule kernel wrote this step's keys
    assert sim.timing["grid"] == sim.timing["sort"] > 0
    sim.rules = RULES.with_changes(cell_width=1)  # another grid: keys computed again
    sim.step(1)
    assert sim.timing["sort"] < sim.timing["grid"]


@pytest.mark.parametrize("search", SEARCHES)
def test_device_seam_sums_stay_exact_with_a_world_off_the_position_grid(device, search):
    pos, vel, constants = seam_flock(0.2)
    ref_pos, ref_vel = reference.step(pos, vel, constants)
    for cell_width in (1, 2):
        rules = SEAM_RULES.with_changes(search=search, cell_width=cell_width)
        flock = DeviceFlock(pos, vel, device=device, group=32)
        flock.step(constants, rules.search, rules.cell_width)
        got_pos, got_vel = flock.state()
        np.testing.assert_array_equal(got_vel, ref_vel)
        np.testing.assert_array_equal(got_pos, ref_pos)


def test_device_state_read_in_cell_order_and_searches_switched_midway_keep_the_cpu_bits(device):
    # The coherent search leaves the state in cell order; reading it, and switching to the
    # searches that keep the state's order, must not lose a boid's identity.
    start = initial_flock(3000, seed=21, rules=RULES, clumps=2)
    cpu = FlockSimulation(start, RULES, dt=0.2)
    on_device = FlockSimulation(start, RULES, dt=0.2, device=device, group=64)
    for search in ("coherent-grid", "coherent-grid", "scattered-grid", "naive", "coherent-grid"):
        for sim in (cpu, on_device):
            sim.rules = RULES.with_changes(search=search, cell_width=1)
            sim.step(1)
        np.testing.assert_array_equal(on_device.positions(), cpu.positions())
    np.testing.assert_array_equal(on_device.velocities(), cpu.velocities())
    on_device.rules = RULES.with_changes(world=45.0)  # a new box reads the state back
    cpu.rules = RULES.with_changes(world=45.0)
    for sim in (cpu, on_device):
        sim.step(2)
    np.testing.assert_array_equal(on_device.particles.pos, cpu.particles.pos)


def test_device_work_groups_must_be_whole_sub_groups(device):
    start = initial_flock(100, rules=RULES)
    for group in (-32, 48, 1 << 20):
        with pytest.raises(InvalidInputError, match="work-group size must be a multiple"):
            FlockSimulation(start, RULES, dt=0.2, device=device, group=group)


@pytest.mark.parametrize("zero", ["separation_radius", "alignment_radius", "cohesion_radius"])
def test_device_rules_with_a_zero_radius_keep_the_cpu_bits(device, zero):
    # A rule switched off by a zero radius: no boid is inside it, not even the boid itself.
    rules = RULES.with_changes(search="coherent-grid", cell_width=1, **{zero: 0.0})
    start = initial_flock(2000, seed=31, rules=rules, clumps=2)
    cpu = FlockSimulation(start, rules, dt=0.2)
    on_device = FlockSimulation(start, rules, dt=0.2, device=device, group=64)
    for search in SEARCHES:
        for sim in (cpu, on_device):
            sim.rules = rules.with_changes(search=search)
            sim.step(1)
    np.testing.assert_array_equal(on_device.velocities(), cpu.velocities())
    np.testing.assert_array_equal(on_device.positions(), cpu.positions())


def test_device_steps_keep_the_host_at_most_two_steps_ahead(device, monkeypatch):
    """A device flock step never waits for the device, so the host would queue steps without
    bound: it waits for the oldest of STEPS_IN_FLIGHT queued steps before queuing another."""
    sim = FlockSimulation(initial_flock(1500, rules=RULES), RULES, dt=0.2, device=device)
    sim.step(1)
    queue = sim._backend._in_flight
    waited = log_waits(monkeypatch, queue._queued[-1])
    sim.step(9)
    assert len(queue) == STEPS_IN_FLIGHT
    assert len(waited) == 9 - (STEPS_IN_FLIGHT - 1)
