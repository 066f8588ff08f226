"""`orrery bench direct` and `orrery bench ceilings` end to end at tiny sizes."""

import json
import sys

import pytest

from orrery.app.cli import main
from orrery.engine.cpu_features import available_simd_levels


def test_bench_ceilings_writes_every_probe(tmp_path, capsys):
    out = tmp_path / "ceilings.json"
    assert main(["bench", "ceilings", "--trial-seconds", "0.002", "--trials", "1",
                 "--read-mib", "8", "--threads", "1", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    probes = {(r["probe"], r["precision"]) for r in rows}
    assert {("fma", "f32"), ("fma", "f64"), ("sqrt_div", "f32"), ("sqrt_div", "f64"),
            ("read", "f64")} <= probes
    assert all(r["rate"] > 0 and r["threads"] == 1 for r in rows)
    assert "flop/s" in capsys.readouterr().out


def test_bench_ceilings_on_a_missing_device_says_so(capsys):
    assert main(["bench", "ceilings", "--device", "sycl:42"]) == 2
    assert "sycl" in capsys.readouterr().err


def test_bench_direct_reports_rates_and_fractions(tmp_path):
    out = tmp_path / "direct.json"
    assert main(["bench", "direct", "--n", "64", "--n", "33", "--precision", "f32",
                 "--precision", "f64", "--trials", "2", "--warmup", "1", "--simd", "scalar",
                 "--ceiling-seconds", "0.002", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["n"], r["precision"]) for r in rows] == [(64, "f32"), (64, "f64"), (33, "f32"), (33, "f64")]
    for row in rows:
        assert row["impl"] == "scalar" and row["trials"] == 2
        assert row["gflops"] == pytest.approx(20 * row["ginteractions_per_s"])
        assert row["ginteractions_per_s"] == pytest.approx(
            row["n"] * (row["n"] - 1) / row["median_s"] / 1e9)
        # judged against the machine's ceilings (widest level), not the scalar path's own
        assert row["fma_fraction"] > 0 and row["sqrt_div_fraction"] > 0
        assert ("rsqrt_fraction" in row) == (available_simd_levels()[-1] != "scalar")


def test_bench_direct_skips_missing_peers_with_a_reason(monkeypatch, capsys):
    for package in ("pytreegrav", "rebound"):
        monkeypatch.setitem(sys.modules, package, None)
    assert main(["bench", "direct", "--n", "16", "--precision", "f64", "--trials", "1",
                 "--warmup", "0", "--no-ceilings", "--peers"]) == 0
    out = capsys.readouterr().out
    assert "peer pytreegrav skipped: pytreegrav is not installed (pip install 'orrery[bench]')" in out
    assert "peer rebound skipped: rebound is not installed (pip install 'orrery[bench]')" in out


def test_bench_direct_times_pytreegrav_beside_ours(tmp_path):
    pytest.importorskip("pytreegrav", reason="optional peer (the 'bench' extra)")
    out = tmp_path / "peers.json"
    assert main(["bench", "direct", "--n", "128", "--precision", "f64", "--trials", "1",
                 "--warmup", "1", "--no-ceilings", "--peers", "--json", str(out)]) == 0
    rows = {r["solver"]: r for r in json.loads(out.read_text())["rows"]}
    ours, peer = rows["cpu-direct"], rows["pytreegrav-bruteforce"]
    assert ours["x_pytreegrav-bruteforce"] == pytest.approx(
        ours["ginteractions_per_s"] / peer["ginteractions_per_s"])


def test_bench_direct_rejects_unknown_solver(capsys):
    assert main(["bench", "direct", "--solver", "warp-drive", "--n", "8", "--no-ceilings",
                 "--trials", "1"]) == 2
    assert "unknown solver" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["direct", "ceilings"])
def test_bench_kinds_have_help(kind, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", kind, "--help"])
    assert exit_info.value.code == 0
    assert "usage" in capsys.readouterr().out
