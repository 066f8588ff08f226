"""Counts past what the kernels' 32-bit indices reach are refused before anything is allocated,
exercised on small data (no 2**31-element run): a device-resident state whose bodies the state's
kernels would index past 2**31 - 1. Frames' element offsets (3 a body) are 64-bit, so a state
past 715,827,882 bodies (2**31 / 3) is no longer refused."""

from dataclasses import replace

import pytest

from orrery.engine import InvalidInputError, make_solver
from orrery.engine.solvers._device_state import (ENERGY_GROUP, ENERGY_GROUPS, INTEGRATE_GROUP, MAX_STATE_BODIES,
                                                 padded_count)


def test_a_state_past_32_bit_body_indices_is_refused_before_it_is_allocated(device, monkeypatch):
    solver = make_solver("gpu-direct", precision="f32", softening=0.01, device=device)
    # A device with room for any state, so that the index limit alone decides.
    monkeypatch.setattr(solver.context, "info", replace(solver.context.info, global_memory_bytes=1 << 50))
    with solver.context.memory.measure() as usage:
        with pytest.raises(InvalidInputError, match=rf"at most {MAX_STATE_BODIES} bodies \(the state's kernels "
                                                    rf"index bodies with 32-bit integers\), got {MAX_STATE_BODIES + 1}"):
            solver.check_device_fits(MAX_STATE_BODIES + 1)
        solver.check_device_fits(MAX_STATE_BODIES)
        solver.check_device_fits(715_827_883)  # past the frames' former 32-bit offsets, 3 a body
        solver.check_device_fits(1000)
    assert usage.peak == 0


def test_every_body_index_of_the_largest_state_stays_below_2_to_the_31(device):
    solver = make_solver("gpu-direct", precision="f32", softening=0.01, device=device)
    rows = max(padded_count(MAX_STATE_BODIES, solver.padding_for(MAX_STATE_BODIES)),
               padded_count(MAX_STATE_BODIES, INTEGRATE_GROUP))
    # The padded rows the kernels launch over, and energy.cl's grid-stride loop's last step.
    assert rows + ENERGY_GROUP * ENERGY_GROUPS <= 2**31 - 1


@pytest.mark.parametrize(("quadrupole", "per_node", "limit"), [(False, 4, 268_435_456), (True, 6, 178_956_971)])
def test_gpu_tree_refuses_a_state_past_its_moments_32_bit_offsets(device, monkeypatch, quadrupole, per_node, limit):
    # Node i's moments are written at per_node i for up to 2n - 1 nodes: the last node of the
    # largest tree allowed is written below 2**31, the next tree's would not be.
    assert per_node * (2 * limit - 2) + per_node - 1 <= 2**31 - 1 < per_node * (2 * (limit + 1) - 2)
    solver = make_solver("gpu-tree", precision="f32", softening=0.01, device=device, quadrupole=quadrupole)
    monkeypatch.setattr(solver.context, "info", replace(solver.context.info, global_memory_bytes=1 << 50))
    with pytest.raises(InvalidInputError, match=rf"at most {limit} bodies \(tree_moments.cl writes node rows at "
                                                rf"32-bit offsets, {per_node} a node, .*\), got {limit + 1}"):
        solver.check_device_fits(limit + 1)
    solver.check_device_fits(limit)
