"""cpu-direct against the compensated reference, on every SIMD level this CPU runs."""

import numpy as np
import pytest

from orrery import _native
from orrery.engine import InvalidInputError, make_solver
from orrery.engine.accuracy import max_relative_error
from orrery.engine.cpu_features import available_simd_levels
from orrery.engine.errors import SolverUnavailableError

LEVELS = available_simd_levels()
TOLERANCE = {"f32": 1e-5, "f64": 1e-12}


def reference(pos, mass, softening=0.01):
    """The reference on exactly the inputs the solver saw (float32 inputs widened exactly)."""
    solver = make_solver("reference", softening=softening)
    return solver.accelerations(pos.astype(np.float64), mass.astype(np.float64), potential=True)


@pytest.fixture(scope="module")
def inputs(plummer_2048):
    out = {}
    for precision, dtype in (("f32", np.float32), ("f64", np.float64)):
        pos, mass = plummer_2048.pos.astype(dtype), plummer_2048.mass.astype(dtype)
        out[precision] = (pos, mass, *reference(pos, mass))
    return out


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("simd", LEVELS)
def test_matches_reference(inputs, simd, precision):
    pos, mass, acc_ref, pot_ref = inputs[precision]
    solver = make_solver("cpu-direct", precision=precision, softening=0.01, simd=simd)
    acc, pot = solver.accelerations(pos, mass, potential=True)
    assert acc.dtype == pos.dtype and solver.last_stats["simd"] == simd
    assert max_relative_error(acc, acc_ref) <= TOLERANCE[precision]
    assert np.max(np.abs(pot - pot_ref) / np.abs(pot_ref)) <= TOLERANCE[precision]


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("simd", LEVELS)
def test_total_momentum_change_is_round_off(inputs, simd, precision):
    pos, mass, _, _ = inputs[precision]
    acc = make_solver("cpu-direct", precision=precision, simd=simd).accelerations(pos, mass)
    force = acc.astype(np.float64) * mass.astype(np.float64)[:, None]
    scale = np.abs(force).sum(axis=0)
    assert np.all(np.abs(force.sum(axis=0)) <= 10 * np.finfo(acc.dtype).eps * scale)


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("simd", LEVELS)
def test_bit_identical_for_any_thread_count(simd, precision):
    rng = np.random.default_rng(3)
    pos, mass = rng.normal(size=(1001, 3)), rng.uniform(0.5, 1.5, 1001)
    results = [make_solver("cpu-direct", precision=precision, threads=threads, simd=simd)
               .accelerations(pos, mass, potential=True) for threads in (1, 2, 3)]
    for acc, pot in results[1:]:
        assert np.array_equal(acc, results[0][0]) and np.array_equal(pot, results[0][1])


@pytest.mark.parametrize("n", [1, 2, 3, 17, 1000])
@pytest.mark.parametrize("simd", LEVELS)
def test_sizes_that_fill_no_block(simd, n):
    rng = np.random.default_rng(n)
    pos, mass = rng.uniform(-1, 1, size=(n, 3)), rng.uniform(0.5, 1.5, n)
    acc, pot = make_solver("cpu-direct", precision="f64", simd=simd).accelerations(
        pos, mass, potential=True)
    acc_ref, pot_ref = reference(pos, mass)
    assert acc.shape == (n, 3) and pot.shape == (n,)
    if n == 1:
        assert np.all(acc == 0) and np.all(pot == 0)
    else:
        assert max_relative_error(acc, acc_ref) <= 1e-12
        assert np.max(np.abs(pot - pot_ref) / np.abs(pot_ref)) <= 1e-12


@pytest.mark.parametrize("precision", ["f32", "f64"])
@pytest.mark.parametrize("simd", LEVELS)
def test_zero_softening_leaves_self_out_without_nan(simd, precision):
    """With eps = 0 a particle's own term is 0/0: the kernel must drop it, not sum a NaN."""
    rng = np.random.default_rng(5)
    pos, mass = rng.uniform(-1, 1, size=(100, 3)), rng.uniform(0.5, 1.5, 100)
    pos = pos.astype(np.float32 if precision == "f32" else np.float64)
    acc, pot = make_solver("cpu-direct", precision=precision, softening=0.0, simd=simd).accelerations(
        pos, mass, potential=True)
    acc_ref, pot_ref = reference(pos, mass, softening=0.0)
    assert np.isfinite(acc).all() and np.isfinite(pot).all()
    assert max_relative_error(acc, acc_ref) <= TOLERANCE[precision]


@pytest.mark.parametrize("simd", LEVELS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverse_sqrt_is_accurate_to_the_type(simd, dtype):
    """The refined estimate (or exact sqrt and divide) stays within one epsilon of 1/sqrt(x)
    across 120 binades; long double gives the exact value."""
    rng = np.random.default_rng(11)
    x = np.exp(rng.uniform(np.log(1e-18), np.log(1e18), 200_000)).astype(dtype)
    kernel = _native.kernel_inverse_sqrt_f32 if dtype == np.float32 else _native.kernel_inverse_sqrt_f64
    exact = 1 / np.sqrt(x.astype(np.longdouble))
    error = np.abs(kernel(x, simd).astype(np.longdouble) - exact) / exact
    assert float(error.max()) <= np.finfo(dtype).eps


@pytest.mark.parametrize("simd", LEVELS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverse_cube_is_accurate_to_the_type(simd, dtype):
    """The accelerations' x^(-3/2), refined on the cube from the estimate (ADR 0080), stays within
    two epsilon; sqrt, divide and two multiplies (levels without an estimate) within 3.5."""
    rng = np.random.default_rng(12)
    x = np.exp(rng.uniform(np.log(1e-12), np.log(1e12), 200_000)).astype(dtype)
    name = "f32" if dtype == np.float32 else "f64"
    kernel = getattr(_native, f"kernel_inverse_cube_{name}")
    exact = x.astype(np.longdouble) ** -1.5
    error = np.abs(kernel(x, simd).astype(np.longdouble) - exact) / exact
    exact_path = _native.simd_level(simd)[f"rsqrt_{name}"].startswith("exact")
    assert float(error.max()) <= (3.5 if exact_path else 2.0) * np.finfo(dtype).eps


def test_orrery_simd_environment_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv("ORRERY_SIMD", "scalar")
    assert make_solver("cpu-direct").simd == "scalar"
    assert make_solver("cpu-direct", simd=LEVELS[-1]).simd == LEVELS[-1]
    monkeypatch.setenv("ORRERY_SIMD", "sse9")
    with pytest.raises(InvalidInputError, match="ORRERY_SIMD must be scalar, avx2, avx512, neon or sve"):
        make_solver("cpu-direct")


def test_unknown_simd_level_is_refused():
    with pytest.raises(InvalidInputError, match="simd must be one of"):
        make_solver("cpu-direct", simd="sse9")


def test_a_level_of_the_other_architecture_is_unavailable():
    other = "avx2" if "neon" in available_simd_levels() else "neon"
    with pytest.raises(SolverUnavailableError, match=f"SIMD level {other} is not available"):
        make_solver("cpu-direct", simd=other)
