"""Device memory as the compute layer counts it (``Context.memory``): the accounting against
the arrays actually allocated, the solvers' model of the arrays N alone sizes against the
count, and runs that cannot fit refused before anything is allocated."""

import gc
from dataclasses import replace

import pytest

from orrery.bench import tree as tree_bench
from orrery.engine import InvalidInputError, ics, make_solver
from orrery.engine.compute import DeviceArray, open_device

N = 4096
SOLVERS = ["gpu-direct", "gpu-tree", "gpu-fmm"]


def _solver(name, device):
    return make_solver(name, precision="f32", softening=0.01, device=device)


def _live_arrays() -> dict[int, DeviceArray]:
    # By the type, not isinstance: that reads __class__ of every object, and some libraries'
    # deprecated objects warn on it (torch.distributed.reduce_op, on the GPU machine).
    return {id(array): array for array in gc.get_objects()
            if issubclass(type(array), DeviceArray)}


@pytest.mark.parametrize("name", SOLVERS)
def test_the_count_of_live_bytes_is_the_bytes_of_the_arrays_a_run_allocated(device, name):
    solver = _solver(name, device)
    before = _live_arrays()
    with solver.context.memory.measure() as usage:
        state = solver.bind(ics.plummer(N, seed=3))
        state.compute_accelerations()
        state.synchronize()
    allocated = [array for key, array in _live_arrays().items() if key not in before]
    assert usage.live == sum(array.nbytes for array in allocated)
    assert usage.peak >= usage.live > 0
    assert sum(usage.peak_by_name.values()) == usage.peak
    held = usage.live
    del state, allocated
    gc.collect()
    kept = [array for key, array in _live_arrays().items() if key not in before]  # the solver's
    assert usage.live == sum(array.nbytes for array in kept) < held


@pytest.mark.parametrize("name", SOLVERS)
def test_the_model_gives_each_array_that_n_alone_sizes_byte_for_byte(device, name):
    solver = _solver(name, device)
    usage = solver.measure_memory(ics.plummer(N, seed=4))
    model = solver.device_bytes(N)
    assert {array: usage.peak_by_name.get(array) for array in model} == model
    assert sum(model.values()) <= usage.peak
    if name != "gpu-fmm":  # the FMM's node plan and lists follow the tree's shape
        assert usage.peak - sum(model.values()) < 0.01 * usage.peak


def test_gpu_fmms_nodes_and_lists_are_sized_by_its_tree_and_held_once(device):
    solver = _solver("gpu-fmm", device)
    usage = solver.measure_memory(ics.plummer(N, seed=6))
    tree, stats = solver.last_tree(), solver.last_stats
    # The node plan's slots (the first tree's nodes and a quarter), not the 2n - 1 nodes a
    # tree of n bodies can have.
    slots = tree.node_count + tree.node_count // 4
    assert usage.peak_by_name["tree.nodes"] == tree.nodes.nbytes == slots * tree.nodes.nbytes // tree.nodes.shape[0]
    assert tree.nodes.shape[0] < (2 * N - 1) // 10
    # Each list once, sized by the count pass (a quarter and 64 to spare), its sources written
    # over its pairs: no second array of either in the peak.
    for name, entries in (("m2l", stats["m2l_interactions"]), ("p2p", stats["p2p_pairs"])):
        pairs = entries // 2
        assert usage.peak_by_name[f"lists.{name}"] == 8 * (pairs + pairs // 4 + 64), name
    assert not [name for name in usage.peak_by_name if "source" in name or "unsorted" in name]


def test_gpu_fmms_body_arrays_are_the_state_its_key_ordered_bodies_and_the_trees(device):
    """What N alone sizes in a gpu-fmm run: the state (bodies, velocities, accelerations), the
    bodies in key order, and the tree's keys, order and node starts. No key-ordered copy of the
    accelerations (p2p and l2p write in the caller's order) and no walk groups (gpu-tree's):
    ADR 0339."""
    solver = _solver("gpu-fmm", device)
    usage = solver.measure_memory(ics.plummer(N, seed=8))
    model = solver.device_bytes(N)  # equal to the count array for array (the test above)
    assert set(model) == {"bodies.state", "velocities.state", "accelerations.state", "bodies.key_order",
                          "tree.keys", "tree.order", "tree.node_starts"}
    assert not {"tree.groups", "tree.group_starts", "accelerations.key_order"} & set(usage.peak_by_name)


def test_gpu_fmm_evaluations_within_its_plans_allocate_nothing(device):
    solver = _solver("gpu-fmm", device)
    state = solver.bind(ics.plummer(N, seed=7))
    state.compute_accelerations()
    state.synchronize()
    with solver.context.memory.measure() as usage:
        for _ in range(3):
            state.compute_accelerations()
        state.synchronize()
    assert usage.peak == 0


def test_a_run_that_cannot_fit_is_refused_before_anything_is_allocated(device, monkeypatch):
    solver = _solver("gpu-fmm", device)
    small = replace(solver.context.info, global_memory_bytes=1 << 20)
    monkeypatch.setattr(solver.context, "info", small)
    held = solver.context.memory.total.live
    with solver.context.memory.measure() as usage:
        with pytest.raises(InvalidInputError, match=r"4096 bodies need at least .* GiB of device "
                                                    r"memory .* has 0.000977 GiB"):
            solver.bind(ics.plummer(N, seed=5))
    assert usage.peak == 0
    assert solver.context.memory.total.live == held


def test_an_array_past_the_devices_memory_is_refused_with_its_size(device):
    context = open_device(device)
    with context.memory.measure() as usage:
        with pytest.raises(InvalidInputError, match=r"device array tree.nodes needs 1\.64e\+04 GiB"):
            context.empty((1 << 42, 1), "float32", "tree.nodes")
    assert usage.peak == 0


def test_an_array_of_no_known_kind_is_refused(device):
    with pytest.raises(ValueError, match="not of a known kind"):
        open_device(device).empty(4, "float32", "caches.frames")


def test_bench_tree_memory_rows_carry_bytes_per_particle_and_their_breakdown(device):
    rows = tree_bench.run(solver="gpu-tree", device=device, precision="f32", n=[N], memory=True,
                          trials=1, warmup=0, direct_max_n=0)
    (row,) = [row for row in rows if row["table"] == "memory"]
    kinds = {key: value for key, value in row.items() if key.endswith("_bytes_per_particle")
             and key not in ("bytes_per_particle", "model_bytes_per_particle")}
    assert row["bytes_per_particle"] == pytest.approx(sum(kinds.values()))
    assert row["bytes_per_particle"] == pytest.approx(sum(row["arrays"].values()))
    assert row["bytes_per_particle"] * N == row["peak_bytes"]
    # The state: positions and masses, velocities and accelerations as float32 rows of four.
    assert row["arrays"]["velocities.state"] == 16
    assert row["device"] == open_device(device).info.spec


def test_bench_memory_refuses_a_solver_without_device_arrays():
    with pytest.raises(InvalidInputError, match="--memory counts a GPU solver's device arrays"):
        tree_bench.run(solver="cpu-tree", n=[64], memory=True, trials=1, warmup=0, direct_max_n=0)
