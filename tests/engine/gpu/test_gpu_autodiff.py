"""The PyTorch and JAX adapters (engine/autodiff.py) with gpu-direct on every device of the GPU
tests: its forces and their VJP pass gradcheck, and a run's gradient is cpu-direct's."""

import numpy as np
import pytest

from orrery.engine import ics, make_solver
from orrery.engine.autodiff import jax_run, torch_accelerations, torch_run

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install "
                                            "'orrery[frameworks]'); CI does not install it")

N, STEPS, DT, SOFTENING = 6, 4, 0.02, 0.1


def _tensors(particles, device="cpu"):
    return [torch.tensor(np.asarray(a, np.float64), device=device, requires_grad=True)
            for a in (particles.pos, particles.vel, particles.mass)]


def test_gradcheck_passes_for_gpu_directs_accelerations(device):
    solver = make_solver("gpu-direct", precision="f64", softening=SOFTENING, device=device)
    pos, _, mass = _tensors(ics.plummer(N, seed=31))
    assert torch.autograd.gradcheck(
        lambda p, m: torch_accelerations(p, m, solver=solver, potential=True), (pos, mass),
        eps=1e-6, atol=1e-7, rtol=1e-6)


def test_a_runs_gradient_with_gpu_direct_is_cpu_directs(device):
    particles = ics.plummer(N, seed=32)
    grads = []
    for solver in (make_solver("gpu-direct", precision="f64", softening=SOFTENING, device=device),
                   make_solver("cpu-direct", precision="f64", softening=SOFTENING)):
        tensors = _tensors(particles)
        final_pos, final_vel = torch_run(*tensors, solver=solver, dt=DT, steps=STEPS)
        (final_pos * final_vel).sum().backward()
        grads.append([t.grad.numpy() for t in tensors])
    for gpu, cpu in zip(*grads):
        np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-9 * np.abs(cpu).max())


def test_jax_grad_with_gpu_direct_is_cpu_directs(device):
    jax = pytest.importorskip("jax", reason="JAX is not installed (pip install "
                                            "'orrery[frameworks]'); CI does not install it")
    particles = ics.plummer(N, seed=33)
    with jax.enable_x64(True):
        arrays = [jax.numpy.asarray(np.asarray(a, np.float64))
                  for a in (particles.pos, particles.vel, particles.mass)]
        grads = []
        for solver in (make_solver("gpu-direct", precision="f64", softening=SOFTENING,
                                   device=device),
                       make_solver("cpu-direct", precision="f64", softening=SOFTENING)):
            def loss(pos, vel, mass, solver=solver):
                final_pos, final_vel = jax_run(pos, vel, mass, solver=solver, dt=DT, steps=STEPS)
                return (final_pos * final_vel).sum()
            grads.append([np.asarray(g) for g in jax.grad(loss, argnums=(0, 1, 2))(*arrays)])
    for gpu, cpu in zip(*grads):
        np.testing.assert_allclose(gpu, cpu, rtol=0, atol=1e-9 * np.abs(cpu).max())


def test_cuda_tensors_stay_on_the_device_with_gpu_direct(cuda_device):
    solver = make_solver("gpu-direct", precision="f64", softening=SOFTENING, device=cuda_device)
    particles = ics.plummer(N, seed=34)
    host = _tensors(particles)
    on_device = _tensors(particles, "cuda")
    for pos, _, mass in (host, on_device):
        acc, pot = torch_accelerations(pos, mass, solver=solver, potential=True)
        ((acc ** 2).sum() + pot.sum()).backward()
    assert acc.device.type == "cuda" and on_device[0].grad.device.type == "cuda"
    for h, d in ((host[0], on_device[0]), (host[2], on_device[2])):
        np.testing.assert_allclose(d.grad.cpu().numpy(), h.grad.numpy(), rtol=1e-12, atol=0)


def test_cuda_tensors_give_the_cpu_gradients(cuda_device):
    """CUDA tensors through a run on the host: the gradients come back on the device, the CPU
    tensors' bits (the device fixture fails under ORRERY_REQUIRE_DEVICES=cuda:0, never skips)."""
    solver = make_solver("cpu-direct", precision="f64", softening=SOFTENING)
    host = _tensors(ics.plummer(N, seed=33))
    device = [t.detach().cuda().requires_grad_() for t in host]
    for tensors in (host, device):
        final_pos, final_vel = torch_run(*tensors, solver=solver, dt=DT, steps=STEPS)
        (final_pos * final_vel).sum().backward()
    for h, d in zip(host, device):
        assert d.grad.device.type == "cuda"
        np.testing.assert_array_equal(d.grad.cpu().numpy(), h.grad.numpy())
