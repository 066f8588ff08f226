"""gpu-fmm's force VJP on its device (kernels/fmm_vjp.cl) on each device of the GPU tests: its
lists and tree, downloaded from the device, evaluated in numpy give its own forces (so they are
the ones it evaluated); its VJP equals engine/fmm_vjp.py's numpy VJP over those lists (float64:
to round-off; float32: the far field in float32 expansions and the pairs in float32, to 1e-5 of
the largest component, about 6e-7 measured on sycl:cpu), with heavy nodes and with the
potentials' cotangents, and gives the same bits each call; a reversible run under gpu-fmm keeps
its state and adjoint on the device, moving only the evaluations' states between steps, and
has cpu-fmm's gradient."""

import numpy as np
import pytest

from orrery.engine import ics, make_solver
from orrery.engine.fmm_vjp import FmmLists, evaluated_lists, fixed_fmm_forces, fmm_vjp
from orrery.engine.force_vjp import force_and_vjp, force_vjp
from orrery.engine.gradients import ReversibleRun, run_gradient

from ..differences import relative_error
from .conftest import needs_float64

SOFTENING = 0.05
# The numpy evaluation of the downloaded lists against gpu-fmm's forces, relative to the
# largest: float64 to round-off, float32 to its pair sums' rounding.
AGREEMENT = {"f64": 1e-12, "f32": 1e-5}
SETTING = {"theta": 0.6, "order": 4, "leaf_capacity": 8}


def _gpu_fmm(device, precision, **setting):
    solver = make_solver("gpu-fmm", device=device, precision=precision, softening=SOFTENING,
                         **setting)
    if precision == "f64":
        needs_float64(device, solver.context.info)
    return solver


def _downloaded_lists(solver, pos) -> FmmLists:
    """The tree and lists of the solver's last evaluation (at ``pos``), downloaded."""
    tree = solver.last_tree()
    return evaluated_lists(np.asarray(pos).astype(solver.dtype), solver.order, solver.last_lists(),
                           tree.node_records(solver.dtype), tree.order.download()[:tree.count])


def _rounded(solver, *arrays):
    """The arrays at the values the device holds (rounded to its precision), float64."""
    return [None if a is None else np.asarray(a).astype(solver.dtype).astype(np.float64) for a in arrays]


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_gpu_fmms_downloaded_lists_give_its_forces(device, precision):
    p = ics.plummer(600, seed=3)
    solver = _gpu_fmm(device, precision, **SETTING)
    acc, pot = solver.accelerations(p.pos, p.mass, potential=True)
    lists = _downloaded_lists(solver, p.pos)
    assert len(lists.m2l_target) > 0
    pos, mass = p.pos.astype(solver.dtype), p.mass.astype(solver.dtype)
    fixed_acc, fixed_pot = fixed_fmm_forces(pos, mass, SOFTENING, lists)
    assert relative_error(fixed_acc, acc) < AGREEMENT[precision]
    assert relative_error(fixed_pot, pot) < AGREEMENT[precision]


@pytest.mark.parametrize("precision", ["f64", "f32"])
@pytest.mark.parametrize("potential", [False, True])
@pytest.mark.parametrize("heavy_share", [None, 0.02])
def test_the_device_vjp_is_the_numpy_vjp_over_its_lists(device, precision, potential, heavy_share):
    n = 400
    p = ics.plummer(n, seed=8)
    solver = _gpu_fmm(device, precision, **SETTING, heavy_share=heavy_share)
    rng = np.random.default_rng(2)
    pos, mass, acc_bar, pot_bar = _rounded(solver, p.pos, p.mass, rng.normal(size=(n, 3)),
                                           rng.normal(size=n) if potential else None)
    got = force_vjp(solver, pos, mass, acc_bar, pot_bar)
    lists = _downloaded_lists(solver, pos)
    if heavy_share is not None:  # the heavy nodes' smaller angle: more M2L pairs at n = 400
        assert len(lists.m2l_target) > 11000
    expected = fmm_vjp(pos, mass, SOFTENING, acc_bar, lists, pot_bar)
    for a, b in zip(got, expected):
        assert relative_error(a, b) < AGREEMENT[precision]


def test_the_device_vjp_with_zero_softening_is_the_numpy_vjp(device):
    p = ics.plummer(300, seed=5)
    solver = make_solver("gpu-fmm", device=device, precision="f64", softening=0.0, **SETTING)
    needs_float64(device, solver.context.info)
    rng = np.random.default_rng(4)
    acc_bar, pot_bar = rng.normal(size=(300, 3)), rng.normal(size=300)
    got = force_vjp(solver, p.pos, p.mass, acc_bar, pot_bar)
    expected = fmm_vjp(p.pos, p.mass, 0.0, acc_bar, _downloaded_lists(solver, p.pos), pot_bar)
    for a, b in zip(got, expected):
        assert relative_error(a, b) < AGREEMENT["f64"]


def test_the_device_vjp_with_m2l_streamed_is_the_numpy_vjp(device, monkeypatch):
    """The VJP's M2L transpose is gpu-fmm's M2L, in the form the highest orders take (the
    sources' terms read as the sums take them), here at order 4."""
    from orrery.engine.solvers import _fmm_code

    monkeypatch.setattr(_fmm_code, "STREAMED_FROM_ORDER", 1)
    p = ics.plummer(300, seed=7)
    solver = _gpu_fmm(device, "f64", **SETTING)
    rng = np.random.default_rng(6)
    acc_bar, pot_bar = rng.normal(size=(300, 3)), rng.normal(size=300)
    got = force_vjp(solver, p.pos, p.mass, acc_bar, pot_bar)
    expected = fmm_vjp(p.pos, p.mass, SOFTENING, acc_bar, _downloaded_lists(solver, p.pos), pot_bar)
    for a, b in zip(got, expected):
        assert relative_error(a, b) < AGREEMENT["f64"]


@pytest.mark.parametrize("n", [1, 5])
def test_the_device_vjp_of_bodies_at_one_point_is_the_numpy_vjp(device, n):
    """Bodies at one point make a cube of side 1, fixed: no particle moves its side."""
    solver = _gpu_fmm(device, "f64", **SETTING)
    pos, mass = np.full((n, 3), 0.25), np.linspace(1.0, 2.0, n)
    rng = np.random.default_rng(1)
    acc_bar, pot_bar = rng.normal(size=(n, 3)), rng.normal(size=n)
    got = force_vjp(solver, pos, mass, acc_bar, pot_bar)
    expected = fmm_vjp(pos, mass, SOFTENING, acc_bar, _downloaded_lists(solver, pos), pot_bar)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12 * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("precision", ["f64", "f32"])
def test_the_device_vjp_gives_the_same_bits_each_call(device, precision):
    p = ics.plummer(500, seed=6)
    solver = _gpu_fmm(device, precision, **SETTING)
    rng = np.random.default_rng(3)
    acc_bar, pot_bar = rng.normal(size=(500, 3)), rng.normal(size=500)
    first, second = (force_vjp(solver, p.pos, p.mass, acc_bar, pot_bar) for _ in range(2))
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def _evaluated_on_device(solver, particles, *, potential):
    """The solver's bodies and acceleration rows on its device, evaluated once: (body, acc,
    padded)."""
    from orrery.engine.solvers._device_state import pack, padded_count

    n, context = particles.n, solver.context
    padded = padded_count(n, solver.padding_for(n))
    body = context.upload(pack(particles.pos, particles.mass, padded, solver.dtype), "bodies.rows")
    acc = context.empty((padded, 4), solver.dtype, "accelerations.rows")
    solver.launch_accelerations(body, acc, n, potential=potential)
    return body, acc, padded


def test_the_device_vjp_in_place_gives_the_bits_of_a_separate_output(device):
    """gpu-fmm's VJP may write its rows over its cotangents (``vjp_in_place``, as the
    reversible run and force_vjp use it): each row is read before it is written."""
    from orrery.engine.solvers._device_state import pack

    n = 500
    p = ics.plummer(n, seed=9)
    solver = _gpu_fmm(device, "f32", **SETTING)
    assert solver.vjp_in_place
    context, dtype = solver.context, solver.dtype
    body, acc, padded = _evaluated_on_device(solver, p, potential=True)
    rng = np.random.default_rng(5)
    rows = pack(rng.normal(size=(n, 3)), rng.normal(size=n), padded, dtype)
    cotangent = context.upload(rows, "adjoint.cotangents")
    separate = context.empty((padded, 4), dtype, "adjoint.cotangents")
    solver.launch_vjp(body, cotangent, separate, n, potential=True)
    solver.launch_accelerations(body, acc, n, potential=True)  # an evaluation has one VJP
    in_place = context.upload(rows, "adjoint.cotangents")
    solver.launch_vjp(body, in_place, in_place, n, potential=True)
    np.testing.assert_array_equal(cotangent.download(), rows)  # a separate output leaves it
    np.testing.assert_array_equal(in_place.download()[:n], separate.download()[:n])
    assert np.abs(separate.download()[:n, 3]).max() > 0


def test_an_evaluation_has_one_vjp(device):
    """The VJP writes the multipoles' cotangents over the evaluation's local expansions: a
    second VJP of the same evaluation is refused, and one after evaluating again is the first's."""
    from orrery.engine.errors import InvalidInputError
    from orrery.engine.solvers._device_state import pack

    n = 300
    p = ics.plummer(n, seed=4)
    solver = _gpu_fmm(device, "f32", **SETTING)
    context, dtype = solver.context, solver.dtype
    body, acc, padded = _evaluated_on_device(solver, p, potential=False)
    cotangent = context.upload(pack(np.ones((n, 3)), None, padded, dtype), "adjoint.cotangents")
    rows = []
    for _ in range(2):
        solver.launch_accelerations(body, acc, n, potential=False)
        out = context.empty((padded, 4), dtype, "adjoint.cotangents")
        solver.launch_vjp(body, cotangent, out, n, potential=False)
        rows.append(out.download()[:n])
    with pytest.raises(InvalidInputError, match="one VJP"):
        solver.launch_vjp(body, cotangent, out, n, potential=False)
    np.testing.assert_array_equal(rows[0], rows[1])


def test_gpu_fmms_vjp_is_cpu_fmms_over_the_same_lists(device):
    p = ics.plummer(400, seed=8)
    gpu = _gpu_fmm(device, "f64", **SETTING)
    cpu = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, **SETTING)
    rng = np.random.default_rng(2)
    acc_bar, pot_bar = rng.normal(size=(400, 3)), rng.normal(size=400)
    acc, pos_bar, mass_bar = force_and_vjp(gpu, p.pos, p.mass, acc_bar)
    np.testing.assert_array_equal(acc, gpu.accelerations(p.pos, p.mass))
    expected = force_vjp(cpu, p.pos, p.mass, acc_bar)
    assert relative_error(pos_bar, expected[0]) < 1e-12
    assert relative_error(mass_bar, expected[1]) < 1e-12
    with_potentials = force_vjp(gpu, p.pos, p.mass, acc_bar, pot_bar)
    expected = force_vjp(cpu, p.pos, p.mass, acc_bar, pot_bar)
    assert relative_error(with_potentials[0], expected[0]) < 1e-12
    assert relative_error(with_potentials[1], expected[1]) < 1e-12


def test_a_reversible_run_under_gpu_fmm_has_cpu_fmms_gradient(device):
    p = ics.plummer(64, seed=12)
    setting = {"theta": 0.6, "order": 4, "leaf_capacity": 4}
    gpu = _gpu_fmm(device, "f64", **setting)
    cpu = make_solver("cpu-fmm", precision="f64", softening=SOFTENING, **setting)
    weights = np.random.default_rng(7).normal(size=(2, 64, 3))

    def loss_grad(pos, vel, mass):
        return float(np.sum(weights[0] * pos) + np.sum(weights[1] * vel)), weights[0], weights[1]

    assert ReversibleRun(p, gpu, dt=0.02, steps=0).on_device
    gradient = run_gradient(p, gpu, dt=0.02, steps=4, loss_grad=loss_grad)
    expected = run_gradient(p, cpu, dt=0.02, steps=4, loss_grad=loss_grad)
    assert gradient.reversible
    assert len(gpu.last_lists()["m2l_source"]) > 0
    # The devices' forces differ from the host's in their last bits, and so do the runs.
    for got, want in zip((gradient.pos, gradient.vel, gradient.mass),
                         (expected.pos, expected.vel, expected.mass)):
        assert relative_error(got, want) < 1e-9


def test_steps_move_only_the_evaluations_states_to_the_host(device):
    solver = _gpu_fmm(device, "f32", theta=0.6, order=3, leaf_capacity=8)
    particles = ics.plummer(128, seed=2)
    context = solver.context

    def moved(steps):
        before = (context.transfers.uploaded, context.transfers.downloaded)
        run = ReversibleRun(particles, solver, dt=2e-3, steps=steps)
        assert run.on_device and run.backward(np.ones((128, 3)), np.ones((128, 3))).reversible
        return (context.transfers.uploaded - before[0], context.transfers.downloaded - before[1])

    moved(2)  # the plans made
    two, nine = moved(2), moved(9)
    # Each evaluation (one a step forward, one back) reads its state, 36 bytes, to check that
    # the tree fitted its plans; no particle data moves between steps.
    assert nine[0] == two[0]
    assert nine[1] - two[1] == 2 * 7 * solver._walk.state.nbytes


def test_bench_grad_counts_the_solvers_own_arrays_in_both_runs(device):
    """Each run's device memory includes what the solver holds for it (tree, lists,
    expansions; the VJP's cotangents), as a process running it alone would hold it."""
    from orrery.bench import grad

    n = 2048
    (row,) = grad.run(n=[n], steps=1, trials=1, warmup=0, solver="gpu-fmm", precision=["f32"],
                      device=device, softening=SOFTENING, theta=0.6, order=[4])
    solver = _gpu_fmm(device, "f32", theta=0.6, order=4)
    particles = ics.plummer(n, seed=1)
    with solver.context.memory.measure() as usage:
        solver.accelerations(particles.pos.astype(np.float32), particles.mass.astype(np.float32))
    held = sum(usage.peak_by_kind().get(kind, 0) for kind in ("tree", "lists", "expansions"))
    assert held > 0
    # The lattice's arrays are 80 bytes a particle (test_gpu_direct_vjp's count).
    assert row["forward_device_bytes"] >= n * 80 + held
    assert row["gradient_device_bytes"] > row["forward_device_bytes"]
