"""PyTorch and JAX see a whole run, or one force evaluation, as a differentiable function.

- ``torch_run(pos, vel, mass, solver=, dt=, steps=)`` and ``jax_run(...)``: the final positions
  and velocities of ``steps`` reversible steps (``engine/gradients.py``) from the initial state;
  ``loss.backward()`` / ``jax.grad`` carry a loss of them back to dL/d(pos, vel, mass) through
  :meth:`ReversibleRun.backward`, which reconstructs the run instead of storing it (memory
  independent of ``steps``).
- ``torch_accelerations(pos, mass, solver=, potential=False)`` and ``jax_accelerations(...)``:
  the solver's accelerations (and potentials), differentiated through ``force_vjp``.

Each is a ``torch.autograd.Function`` or a ``jax.custom_vjp`` around host code, so only
reverse mode is offered (``loss.backward()``, ``torch.autograd.grad``, ``jax.grad``,
``jax.vjp``, under ``jax.jit`` and ``jax.vmap`` too; not ``jax.jvp`` or forward-mode
Jacobians). Outputs and gradients have their inputs' dtypes and devices; the run computes in
float64 on its lattice whatever they are, the force in the solver's precision.

Memory: PyTorch CPU tensors are read in place through DLPack (``np.from_dlpack``) and results
handed back without a copy (``torch.from_numpy``). JAX arrays reach the host code through
``jax.pure_callback``, which hands it NumPy arrays. The reversible state
and the VJPs live in host memory, so CUDA tensors and GPU JAX arrays are copied to the host and
back; the one computation that stays on the device is a GPU solver's forward force of
``torch_accelerations``, which reads CUDA tensors in place and returns a CUDA tensor.

A JAX run keeps its final lattice state between the forward and backward passes as a residual
(its int64 values as pairs of uint32 words, so it works with and without ``jax_enable_x64``);
the lattice is chosen again from the initial state, the same one. A backward pass that does not
come back to the initial state bit for bit (a solver whose forces are not reproducible) raises
:class:`NotReversibleError` rather than return a gradient of another trajectory.

PyTorch and JAX are optional (``pip install 'orrery[frameworks]'``): each is imported when its
functions are first called.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ._optional import require
from .compute import host_array
from .errors import OrreryError
from .force_vjp import check_has_vjp, force_vjp
from .gradients import ReversibleRun
from .lattice import Lattice
from .particles import Particles
from .solvers._gpu import GpuSolver


class NotReversibleError(OrreryError, RuntimeError):
    """A run's backward pass did not come back to its initial state bit for bit."""


# -- the host side, shared by both frameworks ------------------------------------------------------
def _run_forward(pos, vel, mass, solver, dt: float, steps: int,
                 lattice: Lattice | None) -> ReversibleRun:
    return ReversibleRun(Particles(pos, vel, mass), solver, dt=dt, steps=steps, lattice=lattice)


def _run_backward(run: ReversibleRun, pos_bar, vel_bar):
    gradient = run.backward(pos_bar, vel_bar)
    if not gradient.reversible:
        raise NotReversibleError(
            f"the backward pass of {run.steps} steps with {run.solver.describe()} did not come "
            "back to the initial state bit for bit, so its gradient would be another "
            "trajectory's: use a solver whose forces are reproducible")
    return gradient


def _accelerations(solver, pos, mass, potential: bool):
    """``(acc, pot or None)``: NumPy arrays, or a GPU solver's device arrays for device input."""
    if potential:
        return solver.accelerations(pos, mass, potential=True)
    return solver.accelerations(pos, mass), None


# -- PyTorch -------------------------------------------------------------------------------------
def torch_run(pos, vel, mass, *, solver, dt: float, steps: int, lattice: Lattice | None = None):
    """``(final_pos, final_vel)``: tensors after ``steps`` reversible steps of ``dt`` under
    ``solver`` from ``pos`` (n, 3), ``vel`` (n, 3), ``mass`` (n,), differentiable with respect
    to all three. ``lattice``: the run's (default: ``Lattice.for_state`` of the start)."""
    return _torch_functions()[0].apply(pos, vel, mass, solver, dt, steps, lattice)


def torch_accelerations(pos, mass, *, solver, potential: bool = False):
    """``solver``'s accelerations (n, 3) at ``pos``, ``mass`` (and potentials (n,) as a second
    tensor when ``potential``), differentiable with respect to both (the solvers of
    ``force_vjp.VJP_SOLVERS``; cpu-tree without potentials)."""
    check_has_vjp(solver)
    return _torch_functions()[1].apply(pos, mass, solver, potential)


def _torch_host(tensor) -> np.ndarray:
    """A tensor as a NumPy array: in place for a CPU tensor (DLPack), else a host copy."""
    tensor = tensor.detach()
    return host_array(tensor if tensor.device.type == "cpu" else tensor.cpu())


@cache
def _torch_functions():
    torch = require("torch")

    def like(array, tensor):
        """``array`` as a tensor with ``tensor``'s dtype and device (no copy where they match)."""
        return torch.from_numpy(np.ascontiguousarray(array)).to(dtype=tensor.dtype,
                                                                device=tensor.device)

    class Run(torch.autograd.Function):
        @staticmethod
        def forward(ctx, pos, vel, mass, solver, dt, steps, lattice):
            run = _run_forward(_torch_host(pos), _torch_host(vel), _torch_host(mass), solver,
                               dt, steps, lattice)
            ctx.run = run
            ctx.inputs = [torch.empty(0, dtype=t.dtype, device=t.device) for t in (pos, vel, mass)]
            return like(run.positions, pos), like(run.velocities, vel)

        @staticmethod
        def backward(ctx, pos_bar, vel_bar):
            gradient = _run_backward(ctx.run, _torch_host(pos_bar), _torch_host(vel_bar))
            grads = (like(g, t) for g, t in zip((gradient.pos, gradient.vel, gradient.mass),
                                                ctx.inputs))
            return (*grads, None, None, None, None)

    class Accelerations(torch.autograd.Function):
        @staticmethod
        def forward(ctx, pos, mass, solver, potential):
            ctx.solver, ctx.potential = solver, potential
            ctx.save_for_backward(pos, mass)
            # A GPU solver reads CUDA tensors in place and returns CuPy arrays on that device.
            on_device = pos.device.type == "cuda" and isinstance(solver, GpuSolver)
            inputs = ((pos.detach(), mass.detach()) if on_device
                      else (_torch_host(pos), _torch_host(mass)))
            acc, pot = _accelerations(solver, *inputs, potential)

            def out(array, template):
                if on_device:
                    return torch.from_dlpack(array).to(template.dtype)
                return like(array, template)

            acc, pot = out(acc, pos), None if pot is None else out(pot, mass)
            return (acc, pot) if potential else acc

        @staticmethod
        def backward(ctx, acc_bar, pot_bar=None):
            pos, mass = ctx.saved_tensors
            pos_bar, mass_bar = force_vjp(ctx.solver, _torch_host(pos), _torch_host(mass),
                                          _torch_host(acc_bar),
                                          _torch_host(pot_bar) if ctx.potential else None)
            return like(pos_bar, pos), like(mass_bar, mass), None, None

    return Run, Accelerations


# -- JAX -------------------------------------------------------------------------------------------
def jax_run(pos, vel, mass, *, solver, dt: float, steps: int, lattice: Lattice | None = None):
    """:func:`torch_run` for JAX arrays: a ``jax.custom_vjp`` function of (pos, vel, mass)."""
    return _jax_run_function(solver, float(dt), int(steps), lattice)(pos, vel, mass)


def jax_accelerations(pos, mass, *, solver, potential: bool = False):
    """:func:`torch_accelerations` for JAX arrays."""
    check_has_vjp(solver)
    return _jax_accelerations_function(solver, bool(potential))(pos, mass)


def _words(q: np.ndarray) -> np.ndarray:
    """int64 lattice points as uint32 pairs (n, 3, 2), a view."""
    return np.ascontiguousarray(q).view(np.uint32).reshape(*q.shape, 2)


def _points(words) -> np.ndarray:
    return np.ascontiguousarray(words, dtype=np.uint32).view(np.int64).reshape(words.shape[:-1])


def _jax_run_function(solver, dt: float, steps: int, lattice: Lattice | None):
    jax = require("jax")
    shape = jax.ShapeDtypeStruct

    def forward_host(pos, vel, mass):
        run = _run_forward(pos, vel, mass, solver, dt, steps, lattice)
        qpos, qvel = run.end
        return (run.positions.astype(pos.dtype), run.velocities.astype(vel.dtype),
                np.stack([_words(qpos), _words(qvel)]))

    def backward_host(pos, vel, mass, words, pos_bar, vel_bar):
        run = ReversibleRun(Particles(pos, vel, mass), solver, dt=dt, steps=steps,
                            lattice=lattice, end=(_points(words[0]), _points(words[1])))
        gradient = _run_backward(run, pos_bar, vel_bar)
        return (gradient.pos.astype(pos.dtype), gradient.vel.astype(vel.dtype),
                gradient.mass.astype(mass.dtype))

    def forward(pos, vel, mass):
        results = (shape(pos.shape, pos.dtype), shape(vel.shape, vel.dtype),
                   shape((2, *pos.shape, 2), np.uint32))
        return jax.pure_callback(forward_host, results, pos, vel, mass,
                                 vmap_method="sequential")

    @jax.custom_vjp
    def run(pos, vel, mass):
        final_pos, final_vel, _ = forward(pos, vel, mass)
        return final_pos, final_vel

    def run_forward(pos, vel, mass):
        final_pos, final_vel, words = forward(pos, vel, mass)
        return (final_pos, final_vel), (pos, vel, mass, words)

    def run_backward(residuals, cotangents):
        pos, vel, mass, _ = residuals
        results = tuple(shape(a.shape, a.dtype) for a in (pos, vel, mass))
        return jax.pure_callback(backward_host, results, *residuals, *cotangents,
                                 vmap_method="sequential")

    run.defvjp(run_forward, run_backward)
    return run


def _jax_accelerations_function(solver, potential: bool):
    jax = require("jax")
    shape = jax.ShapeDtypeStruct

    def forward_host(pos, mass):
        acc, pot = _accelerations(solver, pos, mass, potential)
        acc = acc.astype(pos.dtype)
        return (acc, pot.astype(mass.dtype)) if potential else acc

    def backward_host(pos, mass, acc_bar, pot_bar=None):
        pos_bar, mass_bar = force_vjp(solver, pos, mass, acc_bar, pot_bar)
        return pos_bar.astype(pos.dtype), mass_bar.astype(mass.dtype)

    @jax.custom_vjp
    def accelerations(pos, mass):
        results = shape(pos.shape, pos.dtype)
        if potential:
            results = (results, shape(mass.shape, mass.dtype))
        return jax.pure_callback(forward_host, results, pos, mass, vmap_method="sequential")

    def accelerations_forward(pos, mass):
        return accelerations(pos, mass), (pos, mass)

    def accelerations_backward(residuals, cotangents):
        pos, mass = residuals
        cotangents = cotangents if potential else (cotangents,)
        results = (shape(pos.shape, pos.dtype), shape(mass.shape, mass.dtype))
        return jax.pure_callback(backward_host, results, pos, mass, *cotangents,
                                 vmap_method="sequential")

    accelerations.defvjp(accelerations_forward, accelerations_backward)
    return accelerations
