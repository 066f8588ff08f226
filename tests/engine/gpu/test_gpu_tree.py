"""gpu-tree against cpu-tree's host build (node for node), the reference solver (accuracy), a
host per-body walk over the same nodes (interaction counts and sums), and on degenerate inputs;
the device key sort against NumPy's stable sort."""

import math

import numpy as np
import pytest

from orrery import _native
from orrery.engine import InvalidInputError, Simulation, ics, make_solver
from orrery.engine.accuracy import max_relative_error, rms_relative_error
from orrery.engine.compute import STEPS_IN_FLIGHT
from orrery.engine.solvers import _gpu
from orrery.engine.solvers._device_state import DeviceState
from orrery.engine.solvers._device_tree import MAX_BODIES, DeviceTreeBuilder
from orrery.engine.solvers.gpu_tree import GROUP_CAPACITY

from .call_log import counted, log_transfers, log_waits

SOFTENING = 0.01


def _reference(particles, potential=False):
    return make_solver("reference", softening=SOFTENING).accelerations(
        particles.pos, particles.mass, potential=potential)


def _clustered(n, seed):
    """Three Plummer clumps of very different sizes far apart, and a tight knot of 40 bodies at
    one point: deep, lopsided trees and keys with many duplicates."""
    rng = np.random.default_rng(seed)
    parts = [ics.plummer(n // 2, seed=seed).pos, 1e-3 * ics.plummer(n // 4, seed=seed + 1).pos + 5.0,
             0.1 * ics.plummer(n - n // 2 - n // 4 - 40, seed=seed + 2).pos - 3.0,
             np.full((40, 3), 0.25)]
    pos = np.concatenate(parts)
    return pos[rng.permutation(len(pos))], rng.uniform(0.5, 1.5, len(pos)) / len(pos)


@pytest.mark.parametrize("layout", ["plummer", "clustered"])
@pytest.mark.parametrize("leaf_capacity", [1, 16])
def test_device_build_equals_host_build_node_for_node(device, layout, leaf_capacity):
    if layout == "plummer":
        particles = ics.plummer(3000, seed=11)
        pos, mass = particles.pos, particles.mass
    else:
        pos, mass = _clustered(3000, seed=12)
    pos32, mass32 = pos.astype(np.float32), mass.astype(np.float32)
    solver = make_solver("gpu-tree", device=device, theta=0.6, leaf_capacity=leaf_capacity,
                         quadrupole=True, walk="group")
    solver.accelerations(pos32, mass32)
    tree = solver.last_tree()
    host = _native.build_tree_f32(pos32, mass32, leaf_capacity=leaf_capacity, quadrupole=True, theta=0.6)
    nodes, host_nodes = tree.node_records(np.float32), host["nodes"]
    assert tree.node_count == len(host_nodes) == solver.last_stats["nodes"]
    for field in ("skip", "first", "count"):
        assert np.array_equal(nodes[field], host_nodes[field]), field
    assert np.array_equal(tree.keys.download(), host["keys"])
    assert np.array_equal(tree.order.download(), host["order"])
    assert np.array_equal(tree.levels.download()[:tree.node_count], host["cell_level"])
    assert tree.occupied_levels == tuple(int(level) for level in np.unique(host["cell_level"]))
    # Sums in double on both sides; a fused multiply-add on the device may move the last bit.
    for field in ("com", "mass", "open2"):
        np.testing.assert_allclose(nodes[field], host_nodes[field], rtol=2e-7, atol=0)
    quadrupoles = tree.quadrupoles.download()[:6 * tree.node_count].reshape(-1, 6)
    scale = np.abs(host["quadrupoles"]).max()
    np.testing.assert_allclose(quadrupoles, host["quadrupoles"], rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("kind", ["random", "clustered"])
def test_device_key_sort_equals_numpy_stable_sort(context, kind):
    rng = np.random.default_rng(3)
    n = 20001
    if kind == "random":
        keys = rng.integers(0, 2**63, n, dtype=np.uint64)
    else:  # few distinct keys, many ties, all digits but a few constant
        keys = (rng.integers(0, 50, n, dtype=np.uint64) << np.uint64(40)) | np.uint64(7)
    arrays = [context.upload(keys), context.upload(np.arange(n, dtype=np.uint32)),
              context.empty(n, np.uint64), context.empty(n, np.uint32)]
    _, (sorted_keys, order) = context.key_sort().sort(*arrays, n)
    expected = np.argsort(keys, kind="stable")
    assert np.array_equal(order.download(), expected)
    assert np.array_equal(sorted_keys.download(), keys[expected])


@pytest.mark.parametrize("bits", [64, 26])
def test_device_key_sort_of_keys_alone(context, bits):
    keys = np.random.default_rng(4).integers(0, 2**bits - 1, 30001, dtype=np.uint64)
    n = 30000  # the last key stays out of the sort
    _, result = context.key_sort().sort_keys(context.upload(keys), context.empty(len(keys), np.uint64), n,
                                             bits)
    assert np.array_equal(result.download()[:n], np.sort(keys[:n]))


@pytest.mark.parametrize("key_bits", [18, 16, None])  # 3 radix passes, 2, all 4
def test_device_key_sort_of_32_bit_keys_over_their_significant_bits(context, key_bits):
    rng = np.random.default_rng(4)
    n = 20001
    keys = rng.integers(0, 2 ** (key_bits or 32), n, dtype=np.uint64).astype(np.uint32)
    keys[:500] = keys[0]  # ties keep their starting order
    arrays = [context.upload(keys), context.upload(np.arange(n, dtype=np.uint32)),
              context.empty(n, np.uint32), context.empty(n, np.uint32)]
    _, (sorted_keys, order) = context.key_sort().sort(*arrays, n, key_bits=key_bits)
    expected = np.argsort(keys, kind="stable")
    assert np.array_equal(order.download(), expected)
    assert np.array_equal(sorted_keys.download(), keys[expected])


def test_device_key_sort_refuses_bad_key_types_and_bit_counts(context):
    n = 16
    for key_type, key_bits, words in ((np.int32, None, "uint32 or uint64"),
                                      (np.uint32, 33, "1 .. 32"), (np.uint64, 0, "1 .. 64")):
        arrays = [context.empty(n, key_type), context.empty(n, np.uint32),
                  context.empty(n, key_type), context.empty(n, np.uint32)]
        with pytest.raises(InvalidInputError, match=words):
            context.key_sort().sort(*arrays, n, key_bits=key_bits)


@pytest.mark.parametrize("walk", ["group", "list"])
@pytest.mark.parametrize("quadrupole", [False, True])
def test_group_walk_counts_and_accuracy_equal_cpu_tree(device, quadrupole, walk):
    particles = ics.plummer(4096, seed=5)
    options = dict(precision="f32", softening=SOFTENING, theta=0.6, quadrupole=quadrupole)
    gpu = make_solver("gpu-tree", device=device, walk=walk, **options)
    cpu = make_solver("cpu-tree", **options)
    cpu.group_capacity = GROUP_CAPACITY  # cpu-tree's tuning knob: the same groups on both
    reference = _reference(particles)
    gpu_error = rms_relative_error(gpu.accelerations(particles.pos, particles.mass), reference)
    cpu_error = rms_relative_error(cpu.accelerations(particles.pos, particles.mass), reference)
    for counter in ("particle_particle", "particle_cell", "nodes"):
        assert gpu.last_stats[counter] == cpu.last_stats[counter], counter
    assert gpu_error <= 1.1 * cpu_error
    assert cpu_error <= (6e-4 if quadrupole else 2e-3)


def _host_walk(nodes, body, eps2):
    """Every body's own stackless walk over the host's node array, sums in float64: the
    reference for the per-body walks (accept when |com - x|^2 > open2; opened leaves are summed
    without the body itself)."""
    n, count = len(body), len(nodes)
    acc = np.zeros((n, 3))
    pp = pc = 0
    position = np.zeros(n, dtype=np.int64)
    targets = np.arange(n)
    while targets.size:
        i = position[targets]
        node = nodes[i]
        d = node["com"].astype(np.float64) - body[targets, :3]
        # The device decides in float32: decide in float32 here too.
        gap = node["com"] - body[targets, :3].astype(np.float32)
        accept = np.einsum("ij,ij->i", gap, gap) > node["open2"]
        leaf = ~accept & (node["skip"] == i + 1)
        r2 = np.einsum("ij,ij->i", d, d) + eps2
        acc[targets[accept]] += (node["mass"][accept] / r2[accept] ** 1.5)[:, None] * d[accept]
        pc += int(accept.sum())
        for t, k in zip(targets[leaf], i[leaf]):
            js = np.arange(nodes["first"][k], nodes["first"][k] + nodes["count"][k])
            js = js[js != t]
            dj = body[js, :3] - body[t, :3]
            acc[t] += (body[js, 3] / (np.einsum("ij,ij->i", dj, dj) + eps2) ** 1.5) @ dj
            pp += len(js)
        position[targets] = np.where(accept | leaf, node["skip"], i + 1)
        targets = targets[position[targets] < count]
    return acc, pp, pc


def test_per_body_walks_equal_a_host_walk_of_the_same_tree(device):
    particles = ics.plummer(1500, seed=8)
    results = {}
    for walk in ("coherent", "independent"):
        solver = make_solver("gpu-tree", device=device, theta=0.7, walk=walk, opening="body",
                             softening=SOFTENING)
        results[walk] = (solver.accelerations(particles.pos, particles.mass), dict(solver.last_stats))
    tree = solver.last_tree()
    nodes = tree.node_records(np.float32)
    body = tree.body.download().astype(np.float64)
    expected, pp, pc = _host_walk(nodes, body, SOFTENING ** 2)
    expected_caller_order = np.empty_like(expected)
    expected_caller_order[tree.order.download()] = expected
    for walk, (acc, stats) in results.items():
        assert (stats["particle_particle"], stats["particle_cell"]) == (pp, pc), walk
        assert max_relative_error(acc, expected_caller_order) <= 2e-5, walk
    # The same decisions in the same order: the same sums.
    assert np.allclose(results["coherent"][0], results["independent"][0], rtol=1e-6, atol=0)


@pytest.mark.parametrize("walk", ["coherent", "list"])
def test_walk_accuracy_and_potential_against_reference(device, walk):
    particles = ics.plummer(4096, seed=6)
    reference_acc, reference_pot = _reference(particles, potential=True)
    errors = {}
    for quadrupole in (False, True):
        solver = make_solver("gpu-tree", device=device, theta=0.4, quadrupole=quadrupole,
                             softening=SOFTENING, walk=walk)
        acc, pot = solver.accelerations(particles.pos, particles.mass, potential=True)
        errors[quadrupole] = rms_relative_error(acc, reference_acc)
        assert np.sqrt(np.mean((pot / reference_pot - 1) ** 2)) <= errors[quadrupole]
    assert errors[False] <= 1.5e-3
    assert errors[True] <= 0.5 * errors[False]


def test_theta_zero_is_direct_summation(device):
    particles = ics.plummer(700, seed=4)
    solver = make_solver("gpu-tree", device=device, precision="f64", theta=0.0, softening=SOFTENING)
    acc = solver.accelerations(particles.pos, particles.mass)
    assert max_relative_error(acc, _reference(particles)) <= 1e-12
    assert solver.last_stats["particle_cell"] == 0
    assert solver.last_stats["particle_particle"] == 700 * 699


@pytest.mark.parametrize("layout", ["clustered", "coincident"])
@pytest.mark.parametrize("quadrupole", [False, True])
def test_list_walk_equals_group_walk(device, layout, quadrupole):
    """The list walk makes the group walk's decisions in another order: the same counters, the
    same sums to rounding, bit for bit the same run to run. The clustered layout gives deep,
    lopsided trees (a deep stack); the coincident one a leaf of 700 bodies, more than a batch of
    targets and more than the source list holds."""
    if layout == "clustered":
        pos, mass = _clustered(5000, seed=21)
    else:
        pos = np.concatenate([ics.plummer(2000, seed=22).pos, np.full((700, 3), 0.1)])
        mass = np.full(len(pos), 1 / len(pos))
    options = dict(precision="f64", softening=SOFTENING, theta=0.4, quadrupole=quadrupole)
    group = make_solver("gpu-tree", device=device, walk="group", **options)
    expected_acc, expected_pot = group.accelerations(pos, mass, potential=True)
    listed = make_solver("gpu-tree", device=device, walk="list", **options)
    acc, pot = listed.accelerations(pos, mass, potential=True)
    for counter in ("particle_particle", "particle_cell"):
        assert listed.last_stats[counter] == group.last_stats[counter], counter
    assert max_relative_error(acc, expected_acc) <= 1e-12
    np.testing.assert_allclose(pot, expected_pot, rtol=1e-12, atol=0)
    again_acc, again_pot = listed.accelerations(pos, mass, potential=True)
    assert np.array_equal(acc, again_acc) and np.array_equal(pot, again_pot)


@pytest.mark.parametrize("case", ["single", "coincident", "line", "all-coincident"])
def test_degenerate_inputs(device, case):
    rng = np.random.default_rng(2)
    if case == "single":
        pos, mass = np.array([[0.3, -1.0, 2.0]]), np.array([1.0])
    elif case == "coincident":  # 200 bodies on one point inside a Plummer sphere
        pos = ics.plummer(600, seed=3).pos
        pos[rng.choice(600, 200, replace=False)] = pos[0]
        mass = np.full(600, 1 / 600)
    elif case == "line":
        pos = np.zeros((500, 3))
        pos[:, 0] = rng.uniform(-1, 1, 500)
        mass = np.full(500, 1 / 500)
    else:
        pos, mass = np.ones((70, 3)), np.full(70, 1 / 70)
    solver = make_solver("gpu-tree", device=device, precision="f64", theta=0.5, softening=0.05)
    acc, pot = solver.accelerations(pos, mass, potential=True)
    exact_acc, exact_pot = make_solver("reference", softening=0.05).accelerations(pos, mass,
                                                                                   potential=True)
    assert np.all(np.isfinite(acc)) and np.all(np.isfinite(pot))
    if case == "single":
        assert np.array_equal(acc, np.zeros((1, 3))) and np.array_equal(pot, np.zeros(1))
    elif case == "all-coincident":  # one leaf over capacity: summed pair by pair, no force
        assert solver.last_stats["nodes"] == 1
        assert np.allclose(acc, 0, atol=1e-12) and np.allclose(pot, exact_pot, rtol=1e-12)
    else:
        scale = np.abs(exact_acc).max()
        assert np.max(np.abs(acc - exact_acc)) <= 0.02 * scale
        np.testing.assert_allclose(pot, exact_pot, rtol=5e-3)


def test_body_count_past_32_bit_node_indices_is_refused(context):
    builder = DeviceTreeBuilder(context, np.float32, leaf_capacity=16, group_capacity=128,
                                quadrupole=False)
    with pytest.raises(InvalidInputError, match="at most"):
        builder.build(context.empty((1, 4), np.float32), MAX_BODIES + 1, theta=0.5)


def test_simulation_keeps_state_on_device_and_follows_cpu_tree(device):
    particles = ics.plummer(1024, seed=9)
    options = dict(precision="f64", softening=0.02, theta=0.5)
    gpu = Simulation(particles, make_solver("gpu-tree", device=device, walk="group", **options),
                     dt=2e-3)
    cpu_solver = make_solver("cpu-tree", **options)
    cpu_solver.group_capacity = GROUP_CAPACITY
    cpu = Simulation(particles, cpu_solver, dt=2e-3)
    assert isinstance(gpu._state, DeviceState)
    gpu.step(20)
    cpu.step(20)
    assert np.allclose(gpu.positions(), cpu.positions(), rtol=0, atol=1e-9)
    assert gpu.energy_error() == pytest.approx(cpu.energy_error(), abs=1e-9)
    stats = gpu.solver.last_stats
    assert stats["walk_s"] > 0 and stats["kernel_s"] <= stats["wall_s"]


@pytest.mark.parametrize("walk, opening", [("list", "group"), ("group", "group"),
                                           ("coherent", "group"), ("coherent", "body")])
def test_steps_queue_without_waiting_for_the_device(device, walk, opening, monkeypatch):
    """No count comes back to the host during a build (ADR 0162): a run of steps moves nothing
    through the host, and the tree it ends with is still the host build's."""
    monkeypatch.setattr(_gpu, "FINITE_CHECK_INTERVAL_S", math.inf)
    particles = ics.plummer(1500, seed=21)
    simulation = Simulation(particles, make_solver("gpu-tree", device=device, theta=0.6,
                                                   walk=walk, opening=opening), dt=1e-3)
    state = simulation._state
    state.graphs = False  # each step launched kernel by kernel (test_gpu_graphs replays them)
    moved = log_transfers(monkeypatch, type(state.body))
    simulation.step(1)
    waited, launched = log_waits(monkeypatch, state._in_flight._queued[-1]), []
    monkeypatch.setattr(simulation.solver, "launch_accelerations",
                        counted(simulation.solver.launch_accelerations, launched, "launch"))
    simulation.step(12)
    assert moved == []
    # The host waits only to keep STEPS_IN_FLIGHT evaluations queued, for the oldest one.
    assert len(launched) == 12 and len(waited) == 12
    assert len(state._in_flight) == STEPS_IN_FLIGHT
    tree = simulation.solver.last_tree()
    pos = simulation.positions().astype(np.float32)
    nodes = _native.build_tree_f32(pos, particles.mass.astype(np.float32))["nodes"]
    assert tree.node_count == len(nodes)
    assert np.array_equal(tree.groups.download()[:tree.group_count], _walk_groups(nodes))


def _walk_groups(nodes) -> list[int]:
    """cpu-tree's walk groups in depth-first order: the outermost nodes with at most
    GROUP_CAPACITY bodies, or leaves."""
    groups, i = [], 0
    while i < len(nodes):
        if nodes["count"][i] <= GROUP_CAPACITY or nodes["skip"][i] == i + 1:
            groups.append(i)
            i = int(nodes["skip"][i])
        else:
            i += 1
    return groups


def test_default_walk_is_the_list_walk_and_coherent_for_the_per_body_test(device):
    particles = ics.plummer(512, seed=13)
    for opening, walk in (("group", "list"), ("body", "coherent")):
        solver = make_solver("gpu-tree", device=device, opening=opening)
        solver.accelerations(particles.pos, particles.mass)
        assert solver.last_stats["walk"] == walk, opening
