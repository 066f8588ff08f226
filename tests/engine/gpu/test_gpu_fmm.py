"""gpu-fmm on every backend: the same tree and lists as cpu-fmm, results that agree with it,
identical bits run to run, and the hard inputs."""

import numpy as np
import pytest

from orrery.engine import ics, make_solver
from orrery.engine.accuracy import rms_relative_error

SOFTENING = 0.01
# Agreement with cpu-fmm, as max |a_gpu - a_cpu| / max |a_cpu|: the same lists and centres, so
# only rounding differs: the pair sums' order and RSQRT in real, the expansions in double on both
# (measured 2.4e-6 in f32 and 4e-15 in f64 on sycl:cpu).
AGREEMENT = {"f32": 2e-5, "f64": 1e-12}


def _pair(device, precision, **options):
    options = {"precision": precision, "softening": SOFTENING, **options}
    return make_solver("cpu-fmm", **options), make_solver("gpu-fmm", device=device, **options)


@pytest.mark.parametrize("precision", ["f32", "f64"])
def test_gpu_fmm_agrees_with_cpu_fmm(device, precision):
    particles = ics.hernquist(3000, seed=21)
    cpu, gpu = _pair(device, precision, order=4, theta=0.6)
    acc_c, pot_c = cpu.accelerations(particles.pos, particles.mass, potential=True)
    acc_g, pot_g = gpu.accelerations(particles.pos, particles.mass, potential=True)
    assert np.abs(acc_g - acc_c).max() < AGREEMENT[precision] * np.abs(acc_c).max()
    assert np.abs(pot_g - pot_c).max() < AGREEMENT[precision] * np.abs(pot_c).max()
    assert gpu.last_stats["m2l_interactions"] == cpu.last_stats["m2l_interactions"]
    assert gpu.last_stats["nodes"] == cpu.last_stats["nodes"]


def _assert_same_lists(cpu, gpu):
    host, device_lists = cpu.last_lists(), gpu.last_lists()
    for name in ("m2l_start", "m2l_source", "p2p_start", "p2p_source", "parent"):
        assert np.array_equal(device_lists[name], host[name]), name
    # The same key boxes; the cubes they quantise differ in the last bits (the device's box
    # reduction runs in another order), so the centres agree to rounding.
    scale = np.abs(host["centre"]).max()
    assert np.allclose(device_lists["centre"], host["centre"], rtol=0, atol=1e-6 * scale)


@pytest.mark.parametrize("theta", [0.0, 0.3, 0.7, 0.95])
def test_gpu_fmm_walk_builds_cpu_fmms_lists(device, theta):
    particles = ics.plummer(2500, seed=22)
    cpu, gpu = _pair(device, "f32", theta=theta, order=2)
    cpu.accelerations(particles.pos, particles.mass)
    gpu.accelerations(particles.pos, particles.mass)
    _assert_same_lists(cpu, gpu)
    assert gpu.last_stats["walk_steps"] >= 1


@pytest.mark.parametrize("theta", [0.5, 0.9])
def test_gpu_fmm_walk_with_heavy_nodes_builds_cpu_fmms_lists(device, theta):
    # A share of 2% makes the nodes above 50 bodies heavy: most of the tree's pairs take the
    # host's table of smaller angles.
    particles = ics.plummer(2500, seed=23)
    cpu, gpu = _pair(device, "f32", theta=theta, order=5, heavy_share=0.02)
    cpu.accelerations(particles.pos, particles.mass)
    gpu.accelerations(particles.pos, particles.mass)
    _assert_same_lists(cpu, gpu)
    plain = make_solver("cpu-fmm", precision="f32", softening=SOFTENING, theta=theta, order=5)
    plain.accelerations(particles.pos, particles.mass)
    assert gpu.last_stats["m2l_interactions"] != plain.last_stats["m2l_interactions"]


@pytest.mark.parametrize("name", ["clustered_hernquist", "thin_disk", "coincident", "two_clumps",
                                  "one", "two", "three"])
def test_gpu_fmm_walk_on_hard_inputs(device, fmm_hard_cases, name):
    pos, mass = fmm_hard_cases[name]
    cpu, gpu = _pair(device, "f32", leaf_capacity=8, order=2)
    cpu.accelerations(pos, mass)
    gpu.accelerations(pos, mass)
    _assert_same_lists(cpu, gpu)


def test_gpu_fmm_plans_queue_the_evaluation_and_recover_when_a_tree_outgrows_them(device):
    gpu = make_solver("gpu-fmm", device=device, order=2, theta=0.6)
    small, large = ics.plummer(500, seed=25), ics.plummer(3000, seed=26)
    small_acc = gpu.accelerations(small.pos, small.mass)
    # No plans yet: the tree's counts, then the walk step by step (a read after each step, and
    # after each step that outgrew an array, which then runs again), then the state at the end.
    assert gpu.last_stats["host_reads"] > gpu.last_stats["walk_steps"] + 2
    assert gpu.last_stats["passes"] == 1
    small_lists = gpu.last_lists()
    # The large tree outgrows the small one's node plan (the passes do nothing, and run again
    # with its counts) and then its walk plan (walked again step by step).
    first_acc = gpu.accelerations(large.pos, large.mass)
    assert gpu.last_stats["passes"] == 3
    assert gpu.last_stats["host_reads"] >= 2 + gpu.last_stats["walk_steps"]
    first = gpu.last_lists()
    fresh = make_solver("gpu-fmm", device=device, order=2, theta=0.6)
    assert np.array_equal(first_acc, fresh.accelerations(large.pos, large.mass))
    second_acc = gpu.accelerations(large.pos, large.mass)
    assert gpu.last_stats["host_reads"] == 1 and gpu.last_stats["passes"] == 1  # queued whole
    second = gpu.last_lists()
    for name, values in first.items():
        assert np.array_equal(values, second[name]), name
    assert np.array_equal(first_acc, second_acc)
    # A smaller tree fits the larger one's plans (the spare node slots and the walk's last
    # steps run empty).
    assert np.array_equal(gpu.accelerations(small.pos, small.mass), small_acc)
    assert gpu.last_stats["host_reads"] == 1 and gpu.last_stats["passes"] == 1
    for name, values in small_lists.items():
        assert np.array_equal(values, gpu.last_lists()[name]), name


def _clump_at_two_depths(n: int, *, seed: int):
    """``n`` bodies spread through a cube and a clump of 40 at (0.3, 0.3, 0.3): ``deep`` with
    the clump 1e-6 across, ``shallow`` the same clump grown 1000x about its centre (ten cell
    levels higher), and equal masses."""
    rng = np.random.default_rng(seed)
    clump = 1e-6 * rng.standard_normal((40, 3))
    deep = np.concatenate([rng.uniform(-1, 1, (n, 3)), 0.3 + clump])
    shallow = deep.copy()
    shallow[n:] = 0.3 + 1e3 * clump
    return deep, shallow, np.full(len(deep), 1 / len(deep))


def test_gpu_fmm_renews_its_levels_for_a_tree_in_other_levels(device):
    """A tree in cell levels its node plan lacks, and otherwise within the plans (a clump grown
    1000x about its centre sits ten cell levels higher, in fewer nodes and walk steps): the
    passes run again with those levels, and the result is a fresh solver's."""
    deep, shallow, mass = _clump_at_two_depths(2000, seed=27)
    options = {"device": device, "order": 3, "theta": 0.6, "leaf_capacity": 8}
    gpu = make_solver("gpu-fmm", **options)
    gpu.accelerations(deep, mass)
    acc = gpu.accelerations(shallow, mass)
    assert gpu.last_stats["passes"] == 2
    assert np.array_equal(acc, make_solver("gpu-fmm", **options).accelerations(shallow, mass))
    gpu.accelerations(deep, mass)  # the levels of both are planned now
    assert gpu.last_stats["passes"] == 1


def test_gpu_fmm_replays_planned_evaluations_bit_for_bit_and_recovers_from_an_outgrown_plan(cuda_device):
    """CUDA: the second planned evaluation in a row is captured and replayed from then on, with
    the launched evaluations' bits; a tree in cell levels the graph's plan lacks is run again
    launched, as a fresh solver runs it."""
    deep, shallow, mass = _clump_at_two_depths(3000, seed=43)
    options = {"device": cuda_device, "order": 4, "theta": 0.6, "leaf_capacity": 8}
    launched = make_solver("gpu-fmm", **options)
    launched.replay = False
    expected = launched.accelerations(shallow, mass)
    gpu = make_solver("gpu-fmm", **options)
    replayed = []
    for _ in range(4):
        assert np.array_equal(gpu.accelerations(shallow, mass), expected)
        replayed.append(gpu.last_stats["graph"])
        assert gpu.last_stats["host_reads"] >= 1 and gpu.last_stats["kernel_s"] > 0
    assert replayed == [False, False, True, True], gpu.replay_unavailable
    for name, values in launched.last_lists().items():
        assert np.array_equal(values, gpu.last_lists()[name]), name
    acc = gpu.accelerations(deep, mass)  # the same arrays, other levels: the replay outgrows them
    assert gpu.last_stats["graph"] is False
    assert np.array_equal(acc, launched.accelerations(deep, mass))


def test_gpu_fmm_is_bitwise_repeatable(device):
    particles = ics.plummer(3000, seed=23)
    gpu = make_solver("gpu-fmm", device=device, order=5)
    first = gpu.accelerations(particles.pos, particles.mass, potential=True)
    second = gpu.accelerations(particles.pos, particles.mass, potential=True)
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])


@pytest.mark.parametrize("expansions", ["f32", "f64"])
def test_gpu_fmm_streamed_m2l_agrees_with_cpu_fmm(device, monkeypatch, expansions):
    """M2L reading the source's terms as it adds them (the form of the highest orders, here at
    every order) gives cpu-fmm's result, with float4 and double2 loads alike."""
    from orrery.engine.solvers import _fmm_code
    monkeypatch.setattr(_fmm_code, "STREAMED_FROM_ORDER", 1)
    assert _fmm_code.expansion_code(4).m2l_streamed and "SOURCE_QUAD" in _fmm_code.expansion_code(4).text
    particles = ics.hernquist(3000, seed=21)
    cpu, gpu = _pair(device, "f32", order=4, theta=0.6, expansions=expansions)
    acc_c = cpu.accelerations(particles.pos, particles.mass)
    acc_g = gpu.accelerations(particles.pos, particles.mass)
    assert np.abs(acc_g - acc_c).max() < AGREEMENT["f32"] * np.abs(acc_c).max()


# Slow on the CPU device: order 7's generated operators take ~11 s to compile there.
@pytest.mark.slow
def test_gpu_fmm_error_falls_with_the_order(device):
    particles = ics.plummer(2048, seed=24)
    ref = make_solver("reference", softening=SOFTENING).accelerations(particles.pos, particles.mass)
    errors = [rms_relative_error(make_solver("gpu-fmm", device=device, precision="f64", order=p,
                                             theta=0.5).accelerations(particles.pos, particles.mass), ref)
              for p in (1, 4, 7)]
    assert all(later < earlier for earlier, later in zip(errors, errors[1:])), errors


@pytest.mark.parametrize("name", ["clustered_hernquist", "thin_disk", "coincident", "two_clumps",
                                  "one", "two", "three"])
def test_gpu_fmm_hard_inputs_agree_with_cpu_fmm(device, fmm_hard_cases, name):
    pos, mass = fmm_hard_cases[name]
    cpu, gpu = _pair(device, "f32")
    acc_c, pot_c = cpu.accelerations(pos, mass, potential=True)
    acc_g, pot_g = gpu.accelerations(pos, mass, potential=True)
    assert np.all(np.isfinite(acc_g)) and np.all(np.isfinite(pot_g))
    scale = max(np.abs(acc_c).max(), np.finfo(np.float32).tiny)
    assert np.abs(acc_g - acc_c).max() <= AGREEMENT["f32"] * scale
    assert np.abs(pot_g - pot_c).max() <= AGREEMENT["f32"] * np.abs(pot_c).max()


def test_gpu_fmm_float32_expansions_keep_the_error(device):
    particles = ics.plummer(4096, seed=27)
    ref = make_solver("reference", softening=SOFTENING).accelerations(particles.pos, particles.mass)
    errors = {}
    for expansions in ("f64", "f32"):
        gpu = make_solver("gpu-fmm", device=device, order=5, theta=0.6, expansions=expansions)
        errors[expansions] = rms_relative_error(gpu.accelerations(particles.pos, particles.mass), ref)
        assert gpu.last_stats["expansion_bits"] == int(expansions[1:])
    # float32 rounding (~1e-7 relative per term) is far below the truncation error (~1e-4).
    assert errors["f32"] <= 1.02 * errors["f64"], errors
