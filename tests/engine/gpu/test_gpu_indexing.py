"""Counts past what the kernels' 32-bit offsets reach are refused before anything is allocated,
exercised on small data (no 2**31-element run): a device-resident state whose (n, 3) frames
the frame kernels would write at offsets past 2**31 - 1."""

import pytest

from orrery.engine import InvalidInputError, make_solver


def test_a_state_past_the_frame_kernels_32_bit_offsets_is_refused_before_it_is_allocated(device):
    solver = make_solver("gpu-direct", precision="f32", softening=0.01, device=device)
    with solver.context.memory.measure() as usage:
        with pytest.raises(InvalidInputError, match="at most 715827882 bodies .* got 715827883"):
            solver.check_device_fits(715827883)
        solver.check_device_fits(1000)
    assert usage.peak == 0
