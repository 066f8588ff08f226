"""gpu-fmm's force VJP on each device of the GPU tests: its lists and tree, downloaded from the
device, evaluated in numpy give its own forces (so they are the ones it evaluated), its VJP over
them is cpu-fmm's (the same lists), and a reversible run under gpu-fmm has cpu-fmm's gradient.
The VJP itself runs on the host (engine/fmm_vjp.py)."""

import numpy as np
import pytest

from orrery.engine import ics, make_solver
from orrery.engine.fmm_vjp import fixed_fmm_forces, gpu_fmm_lists
from orrery.engine.force_vjp import force_and_vjp, force_vjp
from orrery.engine.gradients import run_gradient

SOFTENING = 0.05
# The numpy evaluation of the downloaded lists against gpu-fmm's forces, relative to the
# largest: float64 to round-off, float32 to its pair sums' rounding.
AGREEMENT = {"f64": 1e-12, "f32": 1e-5}
SETTING = {"theta": 0.6, "order": 4, "leaf_capacity": 8}


def _relative_error(got, expected):
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def _gpu_fmm(device, precision, **setting):
    solver = make_solver("gpu-fmm", device=device, precision=precision, softening=SOFTENING,
                         **setting)
    if precision == "f64" and not solver.context.info.fp64:
        pytest.skip(f"{device} has no float64")
    return solver


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_gpu_fmms_downloaded_lists_give_its_forces(device, precision):
    p = ics.plummer(600, seed=3)
    solver = _gpu_fmm(device, precision, **SETTING)
    acc, pot = solver.accelerations(p.pos, p.mass, potential=True)
    lists = gpu_fmm_lists(solver, p.pos)
    assert len(lists.m2l_target) > 0
    pos, mass = p.pos.astype(solver.dtype), p.mass.astype(solver.dtype)
    fixed_acc, fixed_pot = fixed_fmm_forces(pos, mass, SOFTENING, lists)
    assert _relative_error(fixed_acc, acc) < AGREEMENT[precision]
    assert _relative_error(fixed_pot, pot) < AGREEMENT[precision]


def test_gpu_fmms_vjp_is_cpu_fmms_over_the_same_lists(device):
    p = ics.plummer(400, seed=8)
    gpu = _gpu_fmm(device, "f64", **SETTING)
    cpu = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, **SETTING)
    rng = np.random.default_rng(2)
    acc_bar, pot_bar = rng.normal(size=(400, 3)), rng.normal(size=400)
    acc, pos_bar, mass_bar = force_and_vjp(gpu, p.pos, p.mass, acc_bar)
    np.testing.assert_array_equal(acc, gpu.accelerations(p.pos, p.mass))
    expected = force_vjp(cpu, p.pos, p.mass, acc_bar)
    assert _relative_error(pos_bar, expected[0]) < 1e-12
    assert _relative_error(mass_bar, expected[1]) < 1e-12
    with_potentials = force_vjp(gpu, p.pos, p.mass, acc_bar, pot_bar)
    expected = force_vjp(cpu, p.pos, p.mass, acc_bar, pot_bar)
    assert _relative_error(with_potentials[0], expected[0]) < 1e-12


def test_a_reversible_run_under_gpu_fmm_has_cpu_fmms_gradient(device):
    p = ics.plummer(64, seed=12)
    setting = {"theta": 0.6, "order": 4, "leaf_capacity": 4}
    gpu = _gpu_fmm(device, "f64", **setting)
    cpu = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, **setting)
    weights = np.random.default_rng(7).normal(size=(2, 64, 3))

    def loss_grad(pos, vel, mass):
        return float(np.sum(weights[0] * pos) + np.sum(weights[1] * vel)), weights[0], weights[1]

    gradient = run_gradient(p, gpu, dt=0.02, steps=4, loss_grad=loss_grad)
    expected = run_gradient(p, cpu, dt=0.02, steps=4, loss_grad=loss_grad)
    assert gradient.reversible
    assert gpu.last_stats["m2l_interactions"] > 0
    # The devices' forces differ from the host's in their last bits, and so do the runs.
    for got, want in zip((gradient.pos, gradient.vel, gradient.mass),
                         (expected.pos, expected.vel, expected.mass)):
        assert _relative_error(got, want) < 1e-9
