"""``orrery bench fmm`` end to end at a tiny size: the grid carries errors and every stage, and
the equal-error table picks, per target, the fastest setting that reached it."""

import json

import numpy as np
import pytest

from orrery.app.cli import main

from ..extras import package


def test_bench_fmm_tables(tmp_path, capsys):
    out = tmp_path / "fmm.json"
    assert main(["bench", "fmm", "--n", "1024", "--orders", "2", "5", "--thetas", "0.5", "--trials", "1",
                 "--error-targets", "64", "--versus", "cpu-tree", "--versus-thetas", "0.4", "0.7",
                 "--targets", "1e-1", "1e-9", "--json", str(out)]) == 0
    assert "fastest setting reaching each error target" in capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    grid = [r for r in rows if r["table"] == "grid"]
    assert [(r["order"], r["theta"]) for r in grid] == [(2, 0.5), (5, 0.5)]
    for row in grid:
        assert {"walk_s", "upward_s", "m2l_s", "p2p_s", "downward_s"} <= set(row)
        assert 0 < row["p90"] and 0 < row["rms"]
    assert grid[1]["rms"] < grid[0]["rms"]
    versus = [r for r in rows if r["table"] == "versus"]
    assert len(versus) == 4  # two thetas, with and without quadrupoles
    for row in (r for r in rows if r["table"] == "equal_error"):
        if row["target"] == 1e-9:
            assert row["cpu-fmm_setting"] == "none reached it"
        else:
            metrics = ("rms", "p90") if row["metric"] == "both" else (row["metric"],)
            fastest = min((r for r in grid if all(r[m] <= row["target"] for m in metrics)),
                          key=lambda r: r["median_s"])
            assert row["cpu-fmm_s"] == fastest["median_s"]
    assert sorted({row["metric"] for row in rows if row["table"] == "equal_error"}) == \
        ["both", "p90", "rms"]


def test_bench_fmm_is_a_keyword_function_that_checks_its_options():
    import pytest

    from orrery.bench import fmm
    from orrery.engine.errors import InvalidInputError

    rows = fmm.run(n=[512], orders=[3], thetas=[0.6], trials=1, error_targets=32)
    assert [(r["order"], r["theta"]) for r in rows if r["table"] == "grid"] == [(3, 0.6)]
    heavy = fmm.run(n=[512], orders=[3], thetas=[0.6], trials=1, error_targets=32, heavy_share=0.05)
    assert heavy[0]["m2l_per_particle"] > rows[0]["m2l_per_particle"]  # the solver took the share
    with pytest.raises(InvalidInputError, match="order option"):
        fmm.run(n=[512], solver="cpu-tree", trials=1)
    with pytest.raises(InvalidInputError, match="no option"):
        fmm.run(n=[512], order=[3])


def test_bench_fmm_peers_skip_with_the_reason_where_jzfmm_cannot_run(capsys, monkeypatch):
    from orrery.bench import _fmm_peers, fmm

    # as on a machine without it, also where jz-fmm is installed
    monkeypatch.setattr(_fmm_peers, "missing", lambda *names: "jzfmm is not installed")
    reason = _fmm_peers.jzfmm_peer(0.01)
    assert reason == "peer jz-fmm skipped: jzfmm is not installed"
    rows = fmm.run(n=[512], orders=[3], thetas=[0.6], trials=1, error_targets=32, peers=True)
    assert reason in capsys.readouterr().out
    assert not [r for r in rows if r["table"] in ("peer", "equal_error")]


def test_bench_fmm_peer_sweep_joins_the_equal_error_table(monkeypatch):
    """The peer machinery with a stand-in peer (cpu-direct: exact, so it meets every target). At
    theta 0.5 its interaction lists overflow below a factor of 100 and, with leaves of 64, its
    tree's nodes overflow (no list factor helps); order 9 fails otherwise. Each is a row, not a
    crash."""
    from orrery.bench import _fmm_peers, fmm
    from orrery.engine import make_solver

    prepared = []

    def prepare(pos, mass, setting):
        prepared.append(setting)
        if setting.order == 9:
            raise ValueError("no such order")
        solver, out = make_solver("cpu-direct", precision="f64"), {}

        def evaluate():
            if setting.theta == 0.5 and setting.leaf_size == 64:
                raise _fmm_peers.ListOverflow("Tree-node allocation too small: filled=9 size=8.; "
                                              "Increase alloc_fac_nodes, max_leaf_size or coarse_fac")
            if setting.theta == 0.5 and setting.ilist_factor < 100:
                raise _fmm_peers.ListOverflow("Interaction list allocation too small (120/64); "
                                              "Increase alloc_fac_ilist")
            out.update(acc=solver.accelerations(pos, mass))

        return evaluate, (lambda: np.asarray(out["acc"]))

    monkeypatch.setattr(fmm, "jzfmm_peer", lambda softening: _fmm_peers.FmmPeer("stand-in", prepare))
    rows = fmm.run(n=[512], orders=[3], thetas=[0.6], trials=1, error_targets=32, peers=True,
                   peer_orders=[4, 9], peer_thetas=[0.5, 0.8], peer_leaf_sizes=[32, 64],
                   peer_ilist_factors=[400, 64, 200], targets=[1e-2, 1e-9])
    knobs = ("order", "theta", "leaf_size", "coarse_factor", "ilist_factor")
    # the lists of theta 0.5 overflow at 64 once: the later order starts at the next factor;
    # the nodes' overflow ends its setting and leaves the next order to start at 64
    assert [tuple(getattr(s, k) for k in knobs) for s in prepared] == [
        (4, 0.5, 32, 4.0, 64.0), (4, 0.5, 32, 4.0, 200.0), (4, 0.5, 64, 4.0, 64.0),
        (4, 0.8, 32, 4.0, 64.0), (4, 0.8, 64, 4.0, 64.0),
        (9, 0.5, 32, 4.0, 200.0), (9, 0.5, 64, 4.0, 64.0), (9, 0.8, 32, 4.0, 64.0),
        (9, 0.8, 64, 4.0, 64.0)]
    peer = [r for r in rows if r["table"] == "peer"]
    assert [tuple(r[k] for k in knobs) for r in peer] == \
        [tuple(getattr(s, k) for k in knobs) for s in prepared]
    overflows = [r for r in peer if r.get("overflow")]
    assert [(r["theta"], r["leaf_size"], r["ilist_factor"]) for r in overflows] == \
        [(0.5, 32, 64.0), (0.5, 64, 64.0)]
    assert overflows[0]["note"].startswith("overflow: Interaction list allocation too small")
    assert overflows[1]["note"].startswith("overflow: Tree-node allocation too small")
    for row in overflows:
        assert np.isnan(row["median_s"]) and np.isnan(row["rms"]) and np.isnan(row["p90"])
    failed = [r for r in peer if r["order"] == 9]
    assert all(r["note"] == "ValueError: no such order" and np.isnan(r["rms"]) for r in failed)
    timed = [r for r in peer if r["order"] == 4 and not r.get("overflow")]
    assert len(timed) == 3 and all(r["p90"] < 1e-12 for r in timed)
    equal = [r for r in rows if r["table"] == "equal_error"]
    assert len(equal) == 6  # RMS, 90th percentile and both, two targets each
    for row in equal:
        fastest = min(timed, key=lambda r: r["median_s"])
        assert row["stand-in_s"] == fastest["median_s"]
        assert row["stand-in_setting"] == ", ".join(f"{k}={fastest[k]}" for k in knobs)
        if row["target"] == 1e-9:
            assert row["cpu-fmm_setting"] == "none reached it"
        else:
            assert row["stand-in_ratio"] == row["stand-in_s"] / row["cpu-fmm_s"]


def test_bench_fmm_peer_options_check_jzfmm_limits():
    from orrery.bench import fmm
    from orrery.engine.errors import InvalidInputError

    args = fmm.SPEC.resolve({"peer_leaf_sizes": ["128"], "peer_ilist_factors": [512]})
    assert args.peer_leaf_sizes == (128,) and args.peer_ilist_factors == (512.0,)
    assert args.peer_coarse_factors == (4.0,)  # jz-fmm's FMM default
    with pytest.raises(InvalidInputError, match="<= 128"):  # its leaf-leaf kernel's block
        fmm.SPEC.resolve({"peer_leaf_sizes": [256]})
    with pytest.raises(InvalidInputError, match="> 0"):
        fmm.SPEC.resolve({"peer_ilist_factors": [0]})
    with pytest.raises(InvalidInputError, match="> 1"):
        fmm.SPEC.resolve({"peer_coarse_factors": [1]})


def test_bench_fmm_peer_flags_reach_the_sweep(monkeypatch):
    from orrery.bench import _fmm_peers, fmm

    seen = []
    monkeypatch.setattr(fmm, "_peer_sweep", lambda peer, args, *rest: seen.append(args) or [])
    monkeypatch.setattr(fmm, "jzfmm_peer", lambda softening: _fmm_peers.FmmPeer("stand-in", None))
    assert main(["bench", "fmm", "--n", "256", "--orders", "2", "--thetas", "0.5", "--trials", "1",
                 "--error-targets", "16", "--peers", "--peer-orders", "6", "7",
                 "--peer-thetas", "0.9", "--peer-leaf-sizes", "32", "96",
                 "--peer-coarse-factors", "4", "6", "--peer-ilist-factors", "64", "512"]) == 0
    (args,) = seen
    assert (args.peer_orders, args.peer_thetas, args.peer_leaf_sizes, args.peer_coarse_factors,
            args.peer_ilist_factors) == ((6, 7), (0.9,), (32, 96), (4.0, 6.0), (64.0, 512.0))


def test_jzfmm_overflow_is_read_from_its_runtime_error():
    """jztree's allocation checks raise from a host callback; JAX hands Python its own runtime
    error whose text carries the check's message and hint."""
    raise_if = package("jztree").jax_ext.raise_if
    import jax
    import jax.numpy as jnp

    from orrery.bench._fmm_peers import overflow

    @jax.jit
    def fill(x):  # as jzfmm's _fmm_node_to_node checks its new interaction list
        nfilled = jnp.sum(x > 0)
        return x + raise_if(nfilled > 3, "Interaction list allocation too small ({nfil}/{size})\n"
                            "Hint: Increase alloc_fac_ilist", nfil=nfilled, size=3)

    with pytest.raises(RuntimeError) as raised:
        fill(jnp.ones(8)).block_until_ready()
    found = overflow(raised.value)
    assert str(found) == "Interaction list allocation too small (8/3); Increase alloc_fac_ilist"
    assert found.ilist
    nodes = overflow(RuntimeError("INTERNAL: ...\nTree-node allocation too small: filled=9 "
                                  "size=8.\nHint: Increase alloc_fac_nodes, max_leaf_size or "
                                  "coarse_fac\n Trace"))
    assert not nodes.ilist and "Tree-node allocation too small" in str(nodes)
    assert overflow(RuntimeError("INTERNAL: out of memory")) is None


def test_jzfmm_config_takes_the_swept_knobs_and_keeps_its_other_defaults():
    jzfmm = package("jzfmm")
    from dataclasses import replace

    from orrery.bench._fmm_peers import PeerSetting, fmm_config

    config = fmm_config(PeerSetting(order=7, theta=0.6, leaf_size=64, coarse_factor=6.0,
                                    ilist_factor=256.0), softening=0.01)
    defaults = jzfmm.FMMConfig()
    assert config == replace(defaults, p=7, opening=jzfmm.OpeningByAngle(theta=0.6),
                             kernel=jzfmm.PlummerKernel(softening=0.01), alloc_fac_ilist=256.0,
                             tree=replace(defaults.tree, max_leaf_size=64, coarse_fac=6.0))
    assert not config.tree.mass_centered and config.tree.alloc_fac_nodes == 1.2


# Slow on the CPU device (~20 s on a busy machine): the device ceilings' probes and three programs.
@pytest.mark.slow
def test_bench_fmm_gpu_rates_and_device_stages(device):
    from orrery.bench import fmm
    from orrery.engine.errors import InvalidInputError

    rows = fmm.run(n=[2048], solver="gpu-fmm", device=device, orders=[3], thetas=[0.6], trials=1, warmup=1,
                   error_targets=32, resident=True, rates=True, direct_n=1024, expansions="f32")
    (row,) = [r for r in rows if r["table"] == "grid"]
    stages = ("box", "keys", "sort", "build", "upward", "walk", "lists", "m2l", "downward", "p2p", "l2p")
    assert all(row[f"{stage}_s"] > 0 for stage in stages)
    assert row["kernel_s"] == pytest.approx(sum(row[f"{stage}_s"] for stage in stages))
    assert row["m2l_gflops"] > 0 and 0 < row["m2l_fma_fraction"]
    assert row["p2p_gpairs"] > 0 and 0 < row["p2p_direct_fraction"]
    assert 0 < row["rms"] < 0.05
    with pytest.raises(InvalidInputError, match="GPU solver"):
        fmm.run(n=[512], orders=[3], thetas=[0.6], trials=1, rates=True)


def test_bench_fmm_launches_split_each_stage_by_kernel(device):
    from orrery.bench import fmm
    from orrery.engine.errors import InvalidInputError
    from orrery import _native
    from orrery.engine import ics
    from orrery.engine.solvers._device_tree import MORTON_LEVELS
    from orrery.engine.solvers._fmm import FMM_LEAF_CAPACITY

    rows = fmm.run(n=[2048], solver="gpu-fmm", device=device, orders=[3], thetas=[0.6], trials=1, warmup=1,
                   error_targets=32, resident=True, launches=True, expansions="f32")
    (grid,) = [r for r in rows if r["table"] == "grid"]
    launches = [r for r in rows if r["table"] == "launches"]
    kernels = {(r["stage"], r["kernel"]) for r in launches}
    assert {("upward", "upward_leaves"), ("upward", "upward"), ("walk", "walk_step"), ("lists", "list_sort"),
            ("m2l", "m2l"), ("downward", "l2l"), ("p2p", "p2p"), ("l2p", "l2p_bodies")} <= kernels
    # the last timed evaluation's stages, kernel by kernel
    for stage in ("upward", "walk", "lists", "m2l", "downward", "p2p"):
        own = [r for r in launches if r["stage"] == stage]
        assert sum(r["total_s"] for r in own) == pytest.approx(grid[f"{stage}_s"], rel=1e-9)
        assert all(0 < r["longest_s"] <= r["total_s"] for r in own)
    # one launch a cell level that holds nodes (the bench's bodies: Plummer, seed 1): upward below
    # the deepest level, whose nodes are leaves; l2l below the root's
    particles = ics.make("plummer", 2048, seed=1)
    tree = _native.build_tree_f32(particles.pos.astype(np.float32), particles.mass.astype(np.float32),
                                  leaf_capacity=FMM_LEAF_CAPACITY.default)
    levels = set(tree["cell_level"].tolist())
    count = {r["kernel"]: r["launches"] for r in launches}
    assert count["upward"] == len([level for level in levels if level < MORTON_LEVELS]) < MORTON_LEVELS
    assert count["l2l"] == len([level for level in levels if level > 0])
    with pytest.raises(InvalidInputError, match="GPU solver"):
        fmm.run(n=[512], orders=[3], thetas=[0.6], trials=1, launches=True)


def test_bench_fmm_reports_the_error_of_the_evaluations_it_timed(device):
    """The RMS beside a resident time is that of the state's own last timed evaluation (on CUDA
    replayed from a graph, which must equal the same evaluation launched kernel by kernel)."""
    from orrery.bench import fmm
    from orrery.engine import ics, make_solver
    from orrery.engine.accuracy import sampled_exact

    rows = fmm.run(n=[2048], solver="gpu-fmm", device=device, orders=[3], thetas=[0.6], trials=2,
                   warmup=1, error_targets=64, resident=True, expansions="f32")
    (row,) = [r for r in rows if r["table"] == "grid"]
    particles = ics.make("plummer", 2048, seed=1)
    state = make_solver("gpu-fmm", device=device, order=3, theta=0.6, expansions="f32").bind(particles)
    state.compute_accelerations()
    targets = np.sort(np.random.default_rng(0).choice(2048, size=64, replace=False))
    exact = sampled_exact(particles.pos, particles.mass, targets, 0.01)
    acc = state.accelerations()[targets].astype(np.float64)
    errors = np.linalg.norm(acc - exact, axis=1) / np.linalg.norm(exact, axis=1)
    assert row["rms"] == pytest.approx(float(np.sqrt(np.mean(errors ** 2))), rel=1e-12)
    if device.startswith("cuda"):
        assert row["replay_equals_launched"] is True
    else:  # the OpenCL CPU device has no graphs: nothing is replayed
        assert "replay_equals_launched" not in row
