"""``orrery bench tree`` end to end at tiny sizes: every table is produced, rows carry the stage
breakdown, and missing peers are skipped with a message."""

import json
import sys

import pytest

from orrery.app.cli import main
from orrery.bench import tree
from orrery.engine.errors import InvalidInputError


def test_bench_tree_tables(tmp_path, capsys):
    out = tmp_path / "tree.json"
    assert main(["bench", "tree", "--n", "512", "1024", "--trials", "1", "--warmup", "1",
                 "--error-targets", "64", "--accuracy", "--accuracy-n", "1024", "--leaf-sweep", "4", "16",
                 "--group-sweep", "32", "64", "--sweep-n", "1024", "--scaling-error",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "accuracy vs cost" in printed and "leaf capacity sweep" in printed
    rows = json.loads(out.read_text())["rows"]
    scaling = [r for r in rows if r["table"] == "scaling"]
    assert [r["n"] for r in scaling] == [512, 1024]
    for row in scaling:
        assert row["direct_source"] == "measured" and row["direct_s"] > 0
        assert {"sort_s", "build_s", "moments_s", "walk_s"} <= set(row)
        assert row["interactions_per_particle"] > 0
        # Errors of the default theta (0.5) against exact sums: RMS and 90th percentile.
        assert 1e-5 < row["rms_error"] < 3e-3 and 1e-5 < row["p90_error"] < 5e-3
    assert "p90_error" in printed
    summary = next(r for r in rows if r["table"] == "summary")
    assert "time_exponent" in summary and "crossover_n" in summary
    accuracy = [r for r in rows if r["table"] == "accuracy"]
    assert len(accuracy) == 6
    for row in accuracy:
        if row["theta"] == row["theta"]:  # reached: the error found meets the target
            assert row["rms_error"] <= row["target_error"] and row["p90_error"] > 0
    sweep = [(r["leaf_capacity"], r["group_capacity"]) for r in rows if r["table"] == "leaf_sweep"]
    assert sweep == [(4, 32), (4, 64), (16, 32), (16, 64)]


def test_bench_tree_skips_missing_peers(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "pytreegrav", None)
    monkeypatch.setitem(sys.modules, "rebound", None)
    assert main(["bench", "tree", "--n", "256", "--trials", "1", "--peers"]) == 0
    printed = capsys.readouterr().out
    assert "peer pytreegrav skipped: pytreegrav is not installed (pip install 'orrery[bench]')" in printed
    assert "peer rebound skipped: rebound is not installed (pip install 'orrery[bench]')" in printed


def test_bench_tree_rejects_solvers_without_theta(capsys):
    with pytest.raises(InvalidInputError, match="theta"):
        tree.run(n=[256], solver="cpu-direct")
    assert main(["bench", "tree", "--n", "256", "--solver", "cpu-direct"]) == 2
    assert "theta option" in capsys.readouterr().err


def test_bench_tree_runs_as_a_function_and_checks_its_options():
    rows = tree.run(n=[256, 512], trials=1, warmup=0, direct_max_n=0, scaling_error=True,
                    error_targets=32)
    scaling = [r for r in rows if r["table"] == "scaling"]
    assert [r["n"] for r in scaling] == [256, 512]
    assert all(0 < r["rms_error"] < 1e-2 for r in scaling)  # theta 0.5: about 5e-4
    with pytest.raises(InvalidInputError, match="theta"):
        tree.run(n=[256], theta=5.0)
    with pytest.raises(InvalidInputError, match="no option"):
        tree.run(n=[256], theat=0.5)


@pytest.mark.gpu
def test_bench_tree_on_a_device_times_resident_walks_against_gpu_direct(device):
    rows = tree.run(solver="gpu-tree", device=device, n=[256, 512], walk=["coherent", "list"],
                    resident=True, direct_solver="gpu-direct", trials=1, warmup=1,
                    accuracy=True, accuracy_n=512, error_goal=[1e-2], error_targets=32)
    scaling = [(r["walk"], r["n"]) for r in rows if r["table"] == "scaling"]
    assert scaling == [("coherent", 256), ("coherent", 512), ("list", 256), ("list", 512)]
    for row in (r for r in rows if r["table"] == "scaling"):
        assert row["direct_source"] == "measured" and row["walk_s"] > 0 and row["sort_s"] > 0
        assert row["walk_tera_per_s"] == pytest.approx(
            row["interactions_per_particle"] * row["n"] / row["walk_s"] / 1e12)
    accuracy = [r for r in rows if r["table"] == "accuracy"]
    assert [(r["walk"], r["quadrupole"]) for r in accuracy] == [
        ("coherent", False), ("coherent", True), ("list", False), ("list", True)]
    assert all(r["rms_error"] <= 1e-2 for r in accuracy)
