"""The vector-Jacobian product (VJP) of a direct-summation force evaluation, in float64.

The evaluation (G = 1, Plummer softening ``eps``, the particle itself left out):

    a_i   = sum_{j != i} m_j K(x_j - x_i),      K(d) = d / s^(3/2),  s = |d|^2 + eps^2
    phi_i = -sum_{j != i} m_j / s^(1/2)

Given cotangents ``acc_bar`` (of ``a``) and ``pot_bar`` (of ``phi``, optional), the VJP returns
``pos_bar = dL/dx`` and ``mass_bar = dL/dm`` for ``L = sum_i acc_bar_i . a_i + pot_bar_i phi_i``.
With ``T(d) = grad K = I / s^(3/2) - 3 d d^T / s^(5/2)`` (symmetric, even in ``d``) and, for each
particle k, ``d = x_j - x_k`` over the others j:

    pos_bar_k  = sum_j T(d) (m_k acc_bar_j - m_j acc_bar_k)
                 - sum_j d / s^(3/2) (m_j pot_bar_k + m_k pot_bar_j)
    mass_bar_k = -sum_j acc_bar_j . d / s^(3/2) - sum_j pot_bar_j / s^(1/2)

The first term of ``pos_bar`` is the field of dipoles ``m_k acc_bar_j`` at the particles minus
the tidal tensor applied to each particle's own cotangent. Each particle's sums run over the
others in index order, so the result does not depend on how the work is split (threads, blocks).
This is the exact VJP of the softened kernel the direct solvers evaluate (``cpu-direct``,
``gpu-direct``, ``reference``: the same sums, up to their round-off).

:func:`direct_vjp` runs the native kernel (``native/direct_vjp_kernel.hpp``: SIMD, threaded);
:func:`direct_vjp_numpy` is the same sums in numpy, kept as the readable statement of them and
the tests' independent check. :func:`force_and_vjp` gives a step's accelerations and VJP in one
pass where the solver is ``cpu-direct`` in float64 (the native kernel computes its accelerations
with the same operations, so the same bits). cpu-tree's VJP, its tree held fixed, is
``engine/tree_vjp.py``'s, and cpu-fmm's, its tree and lists held fixed, ``engine/fmm_vjp.py``'s;
gpu-fmm's runs on its device over the evaluation it differentiates (``kernels/fmm_vjp.cl``,
:func:`device_force_and_vjp`: the VJP of the same algebra, which ``engine/fmm_vjp.py`` states
and the tests hold it to); :func:`force_vjp` and :func:`force_and_vjp` take them for those
solvers.
"""

from __future__ import annotations

import numpy as np

from .. import _native
from .errors import InvalidInputError
from .fmm_vjp import FmmLists, fmm_lists, fmm_vjp
from .particles import check_no_coincident, check_positions_and_masses
from .solvers._device_state import pack, padded_count
from .tree_vjp import tree_lists, tree_vjp

# Solvers whose evaluation is the plain direct sum above.
DIRECT_SOLVERS = ("cpu-direct", "gpu-direct", "reference")
# Solvers with a VJP: the direct ones, cpu-tree with monopole cells (its tree held fixed) and
# the FMMs (their tree and lists held fixed; gpu-fmm's VJP runs on its device).
FMM_SOLVERS = ("cpu-fmm", "gpu-fmm")
VJP_SOLVERS = (*DIRECT_SOLVERS, "cpu-tree", *FMM_SOLVERS)
# Pairs a block of targets holds at once (a few MiB of temporaries).
_BLOCK_PAIRS = 1 << 16


def direct_vjp(pos, mass, softening: float, acc_bar, pot_bar=None, *, threads: int = 0,
               simd: str = "") -> tuple[np.ndarray, np.ndarray]:
    """``(pos_bar (n, 3), mass_bar (n,))`` of the direct sum at ``pos``, ``mass``, float64
    (native; ``threads`` 0: all cores; ``simd`` as cpu-direct's option)."""
    pos, mass, acc_bar, pot_bar = _checked(pos, mass, acc_bar, pot_bar)
    pos_bar, mass_bar, _ = _native.direct_vjp_f64(pos, mass, acc_bar, pot_bar, softening,
                                                  threads, simd)
    return pos_bar, mass_bar


def direct_vjp_numpy(pos, mass, softening: float, acc_bar,
                     pot_bar=None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`direct_vjp` in numpy, blocks of targets at a time."""
    pos, mass, acc_bar, pot_bar = _checked(pos, mass, acc_bar, pot_bar)
    n = len(pos)
    eps2 = float(softening) ** 2
    pos_bar = np.empty((n, 3))
    mass_bar = np.empty(n)
    block = max(1, _BLOCK_PAIRS // n)
    for start in range(0, n, block):
        k = slice(start, min(n, start + block))
        d = pos[None, :, :] - pos[k, None, :]                      # (b, n, 3): x_j - x_k
        s = np.einsum("bjc,bjc->bj", d, d) + eps2
        rows = np.arange(k.stop - k.start)
        s[rows, rows + start] = np.inf                               # leaves out j == k
        inv_sqrt = 1.0 / np.sqrt(s)
        r3 = inv_sqrt / s
        w = (mass[k, None, None] * acc_bar[None, :, :]
             - mass[None, :, None] * acc_bar[k, None, :])            # m_k abar_j - m_j abar_k
        d_dot_w = np.einsum("bjc,bjc->bj", d, w)
        pos_bar[k] = (np.einsum("bj,bjc->bc", r3, w)
                      - np.einsum("bj,bjc->bc", 3.0 * r3 / s * d_dot_w, d))
        mass_bar[k] = -np.einsum("bj,bjc,jc->b", r3, d, acc_bar)
        if pot_bar is not None:
            weight = r3 * (mass[None, :] * pot_bar[k, None] + mass[k, None] * pot_bar[None, :])
            pos_bar[k] -= np.einsum("bj,bjc->bc", weight, d)
            mass_bar[k] -= inv_sqrt @ pot_bar
    return pos_bar, mass_bar


def _checked(pos, mass, acc_bar, pot_bar):
    pos, mass = check_positions_and_masses(np.ascontiguousarray(pos, np.float64),
                                           np.ascontiguousarray(mass, np.float64))
    acc_bar = _cotangent(acc_bar, pos.shape, "acc_bar")
    if pot_bar is not None:
        pot_bar = _cotangent(pot_bar, mass.shape, "pot_bar")
    return pos, mass, acc_bar, pot_bar


def _cotangent(values, shape: tuple, name: str) -> np.ndarray:
    values = np.ascontiguousarray(values, np.float64)
    if values.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {values.shape}")
    return values


def force_vjp(solver, pos, mass, acc_bar, pot_bar=None) -> tuple[np.ndarray, np.ndarray]:
    """The VJP of ``solver``'s force evaluation at ``pos``, ``mass`` (float64 arrays out);
    cpu-tree's with its tree as built at ``pos`` held fixed (no potential cotangents), the FMMs'
    with their tree and lists as evaluated at ``pos`` held fixed (gpu-fmm's: it evaluates once
    on its device, and the VJP runs there)."""
    check_has_vjp(solver)
    if solver.name == "gpu-fmm":
        return device_force_and_vjp(solver, pos, mass, acc_bar, pot_bar)[1:]
    if solver.name == "cpu-fmm":
        pos, mass, acc_bar, pot_bar = _checked(pos, mass, acc_bar, pot_bar)
        return fmm_vjp(pos, mass, solver.softening, acc_bar, _fmm_lists(solver, pos, mass), pot_bar)
    if solver.name == "cpu-tree":
        if pot_bar is not None:
            raise InvalidInputError("cpu-tree's VJP takes the accelerations' cotangents only, "
                                    "not the potentials'")
        lists = tree_lists(pos, mass, theta=solver.setting.theta(len(mass)),
                           leaf_capacity=solver.leaf_capacity,
                           group_capacity=solver.group_capacity, precision=solver.precision,
                           threads=solver.threads)
        return tree_vjp(pos, mass, solver.softening, acc_bar, lists)
    return direct_vjp(pos, mass, solver.softening, acc_bar, pot_bar,
                      threads=getattr(solver, "threads", 0), simd=_simd(solver))


def force_and_vjp(solver, pos, mass, acc_bar) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(acc, pos_bar, mass_bar)``: ``solver.accelerations(pos, mass)`` (the same bits) and the
    VJP there, in one native pass for cpu-direct in float64, else one after the other."""
    check_has_vjp(solver)
    if solver.name == "cpu-direct" and solver.precision == "f64":
        pos, mass, acc_bar, _ = _checked(pos, mass, acc_bar, None)
        if solver.softening == 0:  # as solver.accelerations refuses: an infinite force
            check_no_coincident(pos)
        pos_bar, mass_bar, acc = _native.direct_vjp_f64(pos, mass, acc_bar, None,
                                                        solver.softening, solver.threads,
                                                        solver.simd, True)
        return acc, pos_bar, mass_bar
    if solver.name == "cpu-fmm":
        pos, mass, acc_bar, _ = _checked(pos, mass, acc_bar, None)
        # The lists first: an accuracy check after the evaluation may retune the setting.
        lists = _fmm_lists(solver, pos, mass)
        acc = solver.accelerations(pos, mass)
        return (acc, *fmm_vjp(pos, mass, solver.softening, acc_bar, lists))
    if solver.name == "gpu-fmm":
        return device_force_and_vjp(solver, pos, mass, acc_bar)
    acc = solver.accelerations(pos, mass)
    return (acc, *force_vjp(solver, pos, mass, acc_bar))


def device_force_and_vjp(solver, pos, mass, acc_bar,
                         pot_bar=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(acc, pos_bar, mass_bar)`` of a solver with a device VJP (``contracts.DeviceForceVjp``):
    the bodies and cotangents go up once, the evaluation and its VJP run on the device one
    after the other, and their rows come down once: the accelerations in the solver's precision
    (``solver.accelerations``' bits), the VJP as float64 arrays of its values."""
    pos, mass, acc_bar, pot_bar = _checked(pos, mass, acc_bar, pot_bar)
    if solver.softening == 0:  # as solver.accelerations refuses: an infinite force
        check_no_coincident(pos)
    context, dtype, n = solver.context, solver.dtype, len(mass)
    padded = padded_count(n, solver.padding_for(n))
    body = context.upload(pack(pos, mass, padded, dtype), "bodies.rows")
    acc = context.empty((padded, 4), dtype, "accelerations.rows")
    solver.launch_accelerations(body, acc, n, potential=False)
    cotangent = context.upload(pack(acc_bar, pot_bar, padded, dtype), "adjoint.cotangents")
    out = cotangent if solver.vjp_in_place else context.empty((padded, 4), dtype, "adjoint.cotangents")
    solver.launch_vjp(body, cotangent, out, n, potential=pot_bar is not None)
    rows = out.download()[:n].astype(np.float64)
    return acc.download()[:n, :3], rows[:, :3], rows[:, 3]


def _fmm_lists(solver, pos, mass) -> FmmLists:
    """The tree and lists cpu-fmm evaluates at ``pos``, ``mass`` with its setting now."""
    return fmm_lists(pos, mass, **solver.evaluation_setting(len(mass)),
                     leaf_capacity=solver.leaf_capacity, precision=solver.precision,
                     threads=solver.threads)


def check_has_vjp(solver) -> None:
    """Refuse a solver whose evaluation has no VJP here (InvalidInputError naming those that do)."""
    if solver.name not in VJP_SOLVERS:
        raise InvalidInputError(f"no force VJP for solver {solver.name!r} yet; these have one: "
                                f"{', '.join(VJP_SOLVERS)} (cpu-tree without quadrupoles, "
                                "the FMMs with their tree and lists held fixed)")
    if solver.name == "cpu-tree" and solver.quadrupole:
        raise InvalidInputError("no force VJP for cpu-tree's quadrupole cells yet; "
                                "quadrupole=False has one")


def _simd(solver) -> str:
    """The SIMD level the VJP runs at: cpu-direct's own, else the widest."""
    return getattr(solver, "simd", "") if solver.name == "cpu-direct" else ""
