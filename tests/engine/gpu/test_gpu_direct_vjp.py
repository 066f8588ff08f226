"""gpu-direct's force VJP on the device (kernels/direct_vjp.cl) and reversible runs whose state
and adjoint stay there (solvers/_device_lattice.py), on each device of the GPU tests.

The device VJP against cpu-direct's host VJP (float64: to round-off; float32: the kernel sums
in float32, to 1e-5 of the largest component, about 1e-6 measured on sycl:cpu); the device
run's lattice points against the host path's (Simulation's reversible integrator with the
same solver) bit for bit; its gradient against central differences of the lattice run, as
tests/engine/test_gradients.py checks the host's.
"""

import numpy as np
import pytest

from orrery.engine import InvalidInputError, Particles, Simulation, ics, make_solver
from orrery.engine.force_vjp import direct_vjp
from orrery.engine.gradients import ReversibleRun, run_gradient
from orrery.engine.lattice import Lattice
from orrery.engine.solvers._device_state import pack, padded_count

from ..differences import central_differences, relative_error
from .conftest import needs_float64

# The VJP's relative error against the host's (of the largest component) in each precision.
VJP_TOLERANCE = {"f64": 1e-13, "f32": 1e-5}
N, STEPS, DT, SOFTENING = 8, 12, 0.02, 0.1


def _gpu_direct(device, precision, softening=SOFTENING):
    solver = make_solver("gpu-direct", precision=precision, softening=softening, device=device)
    if precision == "f64":
        needs_float64(device, solver.context.info)
    return solver


def _device_vjp(solver, pos, mass, acc_bar, pot_bar):
    context, dtype, n = solver.context, solver.dtype, len(mass)
    padded = padded_count(n, solver.padding_for(n))
    body = context.upload(pack(pos, mass, padded, dtype))
    cotangent = context.upload(pack(acc_bar, pot_bar, padded, dtype))
    out = context.empty((padded, 4), dtype)
    solver.launch_vjp(body, cotangent, out, n, potential=pot_bar is not None)
    rows = out.download()[:n].astype(np.float64)
    return rows[:, :3], rows[:, 3]


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("softening", [0.05, 0.0])
@pytest.mark.parametrize("potential", [False, True])
def test_the_device_vjp_is_the_host_vjp(device, precision, softening, potential):
    solver = _gpu_direct(device, precision, softening)
    n = 300  # not a multiple of the tile: padding rows in the sums
    p = ics.plummer(n, seed=4)
    rng = np.random.default_rng(2)
    # The host VJP at the values the device holds (rounded to its precision).
    pos, mass, acc_bar = (a.astype(solver.dtype).astype(np.float64)
                          for a in (p.pos, p.mass, rng.normal(size=(n, 3))))
    pot_bar = rng.normal(size=n).astype(solver.dtype).astype(np.float64) if potential else None
    got = _device_vjp(solver, pos, mass, acc_bar, pot_bar)
    expected = direct_vjp(pos, mass, softening, acc_bar, pot_bar)
    for a, b in zip(got, expected):
        assert relative_error(a, b) < VJP_TOLERANCE[precision]


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_a_run_on_the_device_takes_the_host_paths_lattice_points(device, precision):
    solver = _gpu_direct(device, precision)
    particles = ics.plummer(200, seed=9)
    run = ReversibleRun(particles, solver, dt=2e-3, steps=6)
    assert run.on_device
    sim = Simulation(particles, solver, dt=2e-3, integrator="reversible", lattice=run.lattice)
    sim.step(6)  # the host path: the lattice on the host, the forces through the host interface
    qpos, qvel = run.end
    np.testing.assert_array_equal(qpos, sim._state.qpos)
    np.testing.assert_array_equal(qvel, sim._state.qvel)
    gradient = run.backward(np.ones((200, 3)), np.zeros((200, 3)))
    assert gradient.reversible


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_device_gradients_agree_with_cpu_directs(device, precision):
    solver = _gpu_direct(device, precision)
    particles = ics.plummer(64, seed=3)
    weights = np.random.default_rng(5).normal(size=(2, 64, 3))

    def loss_grad(pos, vel, mass):
        return float(np.sum(weights[0] * pos) + np.sum(weights[1] * vel)), weights[0], weights[1]

    lattice = ReversibleRun(particles, solver, dt=2e-3, steps=0).lattice
    device, host = (run_gradient(particles, s, dt=2e-3, steps=5, loss_grad=loss_grad,
                                 lattice=lattice)
                    for s in (solver, make_solver("cpu-direct", precision="f64",
                                                  softening=SOFTENING)))
    assert device.reversible and host.reversible
    # float32: the forces differ from cpu-direct's float64 ones by float32 round-off, which
    # moves the trajectory too; measured 3e-8 to 1e-7 on sycl:cpu.
    tolerance = 1e-12 if precision == "f64" else 1e-5
    for a, b in ((device.pos, host.pos), (device.vel, host.vel), (device.mass, host.mass)):
        assert relative_error(a, b) < tolerance


def _loss_grad(pos, vel, mass):
    rng = np.random.default_rng(7)
    c, u = rng.normal(size=(len(pos), 3)), rng.normal(size=(len(pos), 3))
    return np.sum(c * pos) + np.sum(u * vel) + 0.5 * np.sum(pos * pos), c + pos, u


def test_a_device_gradient_matches_central_differences(device):
    solver = _gpu_direct(device, "f64")
    p = ics.plummer(N, seed=11)
    lattice = ReversibleRun(p, solver, dt=DT, steps=0).lattice
    gradient = run_gradient(p, solver, dt=DT, steps=STEPS, loss_grad=_loss_grad, lattice=lattice)
    assert gradient.reversible

    def loss(pos, vel, mass):
        run = ReversibleRun(Particles(pos, vel, mass), solver, dt=DT, steps=STEPS,
                            lattice=lattice)
        return _loss_grad(run.positions, run.velocities, mass)[0]

    expected = central_differences(loss, (p.pos, p.vel, p.mass), relative=(2,), h=1e-5)
    for got, fd in zip((gradient.pos, gradient.vel, gradient.mass), expected):
        assert relative_error(got, fd) < 1e-6


def test_steps_move_nothing_to_the_host(device):
    solver = _gpu_direct(device, "f32")
    particles = ics.plummer(128, seed=2)
    context = solver.context

    def moved(steps):
        before = (context.transfers.uploaded, context.transfers.downloaded)
        run = ReversibleRun(particles, solver, dt=2e-3, steps=steps)
        run.backward(np.ones((128, 3)), np.ones((128, 3)))
        return (context.transfers.uploaded - before[0], context.transfers.downloaded - before[1])

    assert moved(2) == moved(9)


def test_a_run_and_its_backward_pass_on_the_device_count_their_steps(device):
    solver = _gpu_direct(device, "f32")
    particles = ics.plummer(64, seed=4)
    forward, backward = [], []
    run = ReversibleRun(particles, solver, dt=2e-3, steps=5,
                        progress=lambda done, total: forward.append((done, total)))
    assert run.on_device
    gradient = run.backward(np.ones((64, 3)), np.zeros((64, 3)),
                            progress=lambda done, total: backward.append((done, total)))
    assert forward == backward == [(done, 5) for done in range(1, 6)]
    assert gradient.reversible


def test_a_run_that_leaves_the_lattice_is_refused_naming_the_particle(device):
    solver = _gpu_direct(device, "f32")
    # Two particles flying apart past a lattice of positions up to 1.5 (test_reversible's case).
    pos = np.array([[-1.0, 0, 0], [1.0, 0, 0]])
    particles = Particles(pos, pos.copy(), np.array([1e-6, 1e-6]))
    with pytest.raises(InvalidInputError, match=r"position of particle 0 off the reversible"):
        ReversibleRun(particles, solver, dt=0.1, steps=100, lattice=Lattice.covering(1.5, 4.0))


def test_bench_grad_counts_the_device_memory_of_both_runs(device):
    from orrery.bench import grad

    (row,) = grad.run(n=[256], steps=2, trials=1, warmup=0, solver="gpu-direct",
                      precision=["f32"], device=device, softening=0.05)
    assert row["reversible"] and row["device"] == _gpu_direct(device, "f32").context.info.spec
    # The forward run holds the lattice points (48 bytes a particle) and the force kernels'
    # rows (2 x 16); the gradient adds the float64 adjoint (56) and the cotangents' rows (16).
    assert row["forward_device_bytes"] >= 256 * 80
    assert row["device_memory_over_forward"] == pytest.approx(
        row["gradient_device_bytes"] / row["forward_device_bytes"])
    assert 1.5 < row["device_memory_over_forward"] < 2.5


def test_gpu_direct_and_gpu_fmm_keep_the_device_vjp_contract(device):
    from orrery.engine.contracts import DeviceForceVjp

    kept = {name for name in ("gpu-direct", "gpu-tree", "gpu-fmm")
            if isinstance(make_solver(name, precision="f32", device=device), DeviceForceVjp)}
    assert kept == {"gpu-direct", "gpu-fmm"}
