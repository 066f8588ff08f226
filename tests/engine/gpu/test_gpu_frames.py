"""Recorded frames narrowed on the device (frames.cl): float16 with the host's bits, fixed16 on
the frame's box within the stated error, keyframes exact, and a recording made of device frames
that holds what a host recording of the same run holds."""

import numpy as np
import pytest

from orrery import _native
from orrery.engine import Simulation, frame_encoding, ics, make_solver
from orrery.engine.contracts import SimulationState
from orrery.engine.errors import InvalidInputError
from orrery.engine.particles import Particles
from orrery.engine.recording import Recorder, RecordingFile

pytestmark = pytest.mark.gpu


def _particles(positions: np.ndarray) -> Particles:
    n = positions.shape[0]
    return Particles(positions, np.zeros_like(positions), np.full(n, 1.0 / n, positions.dtype))


def _hard_half_values(dtype) -> np.ndarray:
    """Values where float16 rounding is easy to get wrong: ties (to even, both ways), the
    largest half and just past it, subnormal halves and their ties, signed zeros, and a spread
    over every exponent a half has."""
    ulp = 2.0**-10
    ties = [1 + ulp / 2, 1 + 3 * ulp / 2, -(1 + ulp / 2), 2048 + 1, 2048 + 3]
    edges = [65504.0, 65519.0, 65519.996, 65520.0, -65520.0, 1e6, 2.0**-14, 2.0**-24,
             2.0**-25, 2.0**-25 * 1.0001, 3 * 2.0**-25, 2.0**-26, 0.0, -0.0, 6.1e-5, -3e-7]
    rng = np.random.default_rng(7)
    spread = rng.choice([-1, 1], 3000) * 2.0 ** rng.uniform(-26, 17, 3000)
    values = np.concatenate([ties, edges, spread])
    values = np.resize(values, 3 * (len(values) // 3 + 1))
    return values.reshape(-1, 3).astype(dtype)


def test_a_device_state_keeps_the_state_contract_and_hands_out_its_arrays(device):
    state = make_solver("gpu-direct", device=device, softening=0.01).bind(ics.plummer(64, seed=1))
    assert isinstance(state, SimulationState)
    assert len(state.device_arrays()) == 3


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_device_float16_frames_have_the_bits_of_the_hosts_native_narrowing(device, precision):
    solver = make_solver("gpu-direct", device=device, precision=precision, softening=0.01)
    positions = _hard_half_values(solver.dtype)
    state = solver.bind(_particles(positions))
    staged = state.stage_frame(frame_encoding.FLOAT16).host()
    # The host's native narrowing itself: encode_on_host refuses these values (some narrow to
    # infinity), and the kernel must still give the same bits for the recorder to refuse them.
    expected = np.empty(positions.shape, np.float16)
    _native.narrow_to_half(np.ascontiguousarray(positions, dtype=np.float32), expected)
    assert staged.dtype == np.float16 and staged.shape == positions.shape
    assert np.array_equal(staged.view(np.uint16), expected.view(np.uint16))
    # and the host's narrowing is numpy's (float64 states round to float32 first, as the host)
    with np.errstate(over="ignore"):  # past 65519.99 is infinity, as intended
        numpy_bits = positions.astype(np.float32).astype(np.float16).view(np.uint16)
    assert np.array_equal(expected.view(np.uint16), numpy_bits)
    with pytest.raises(InvalidInputError, match="float16's largest value"):
        frame_encoding.check_narrowed(frame_encoding.FLOAT16, staged, source=positions)


def test_device_fixed16_frames_stay_within_the_stated_error_of_every_position(device):
    solver = make_solver("gpu-direct", device=device, softening=0.01)
    positions = ics.plummer(5000, seed=3).pos.astype(np.float32)
    positions[:, 2] *= 40.0  # a long axis: its step is larger, its bound too
    state = solver.bind(_particles(positions))
    stored, box = frame_encoding.split_staged(
        frame_encoding.FIXED16, state.stage_frame(frame_encoding.FIXED16).host(), 5000)
    assert np.array_equal(box[0], positions.min(axis=0))  # min and max are exact
    assert np.array_equal(box, frame_encoding.fixed16_box(positions))
    assert np.array_equal(stored, frame_encoding.fixed16_quantise(positions, box))
    error = np.abs(frame_encoding.fixed16_decode(stored, box).astype(np.float64) - positions)
    bound = frame_encoding.fixed16_error(box)
    assert (error <= bound).all()
    assert (error.max(axis=0) > 0.4 * 0.5 * box[1]).all()  # the bound is close, not loose
    assert stored.min() == 0 and stored.max() == frame_encoding.FIXED_LEVELS


def test_a_flat_axis_is_stored_exactly_in_fixed16(device):
    solver = make_solver("gpu-direct", device=device, softening=0.01)
    positions = np.random.default_rng(1).normal(size=(300, 3)).astype(np.float32)
    positions[:, 1] = 2.5
    stored, box = frame_encoding.split_staged(
        frame_encoding.FIXED16,
        solver.bind(_particles(positions)).stage_frame(frame_encoding.FIXED16).host(), 300)
    assert box[1, 1] == 0 and box[2, 1] == 0
    assert (frame_encoding.fixed16_decode(stored, box)[:, 1] == 2.5).all()


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_staged_keyframes_hold_the_state_exactly(device, precision):
    p = ics.plummer(700, seed=2)
    sim = Simulation(p, make_solver("gpu-direct", device=device, precision=precision,
                                    softening=0.01), dt=1e-3)
    sim.step(3)
    pos, vel = (snapshot.host() for snapshot in sim.stage_state())
    particles = sim.particles
    assert pos.dtype == particles.pos.dtype
    assert np.array_equal(pos, particles.pos) and np.array_equal(vel, particles.vel)


@pytest.mark.parametrize("precision", ["f16", "fixed16"])
def test_a_recording_of_device_frames_holds_the_runs_positions(device, tmp_path, precision):
    sim = Simulation(ics.plummer(1500, seed=4), make_solver("gpu-direct", device=device,
                                                            softening=0.01), dt=1e-3)
    expected, keyframes = [], []
    with Recorder.for_simulation(tmp_path / "r.h5", sim, scenario="test", dtype=precision,
                                 keyframe_every=2) as recorder:
        for _ in range(5):
            expected.append(sim.positions())
            keyframes.append(sim.particles)
            recorder.append_simulation(sim)
            sim.step(2)
        assert recorder.stats()["device_frames"] == 5
    with RecordingFile(tmp_path / "r.h5") as recording:
        assert recording.frame_count == 5 and recording.keyframe_count == 3
        assert recording.encoding == {"f16": "float16", "fixed16": "fixed16"}[precision]
        for index, positions in enumerate(expected):
            frame = recording.read(index)
            if precision == "f16":
                host = frame_encoding.encode_on_host(positions, frame_encoding.FLOAT16)
                assert np.array_equal(frame.view(np.uint16), host.view(np.uint16))
            else:
                bound = recording.position_error(index)
                assert (np.abs(frame.astype(np.float64) - positions) <= bound).all()
        for index, state in zip(range(3), keyframes[::2]):
            pos, vel = recording.read_keyframe(index)
            assert np.array_equal(pos, state.pos) and np.array_equal(vel, state.vel)



def test_every_half_widens_on_the_device_to_the_float_numpy_gives(device):
    from orrery.engine.compute import open_device

    context = open_device(device)
    halves = np.arange(2**16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    halves = np.concatenate([halves, halves[:2]]).reshape(-1, 3)  # (n, 3) positions
    wide = frame_encoding.widened_on_device(context, halves).download()
    expected = halves.astype(np.float32)
    assert wide.dtype == np.float32 and wide.shape == halves.shape
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(wide), nan)
    assert np.array_equal(wide[~nan].view(np.uint32), expected[~nan].view(np.uint32))  # -0 too
