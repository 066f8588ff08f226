"""`orrery bench direct` and `orrery bench ceilings` end to end at tiny sizes."""

import json
import sys

import pytest

from orrery.app.cli import main
from orrery.bench import ceilings, direct
from orrery.engine.cpu_features import available_simd_levels
from orrery.engine.errors import InvalidInputError

from ..extras import package


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
        # AVX2 has an f32 1/sqrt estimate but no f64 one: the column is there only when measured
        assert ("rsqrt_fraction" in row) == ceilings.probe_available(
            "rsqrt_estimate", row["precision"], available_simd_levels()[-1])


def test_bench_direct_skips_missing_peers_with_a_reason(monkeypatch, capsys):
    for package in ("pytreegrav", "rebound"):
        monkeypatch.setitem(sys.modules, package, None)
    assert main(["bench", "direct", "--n", "16", "--precision", "f64", "--trials", "1",
                 "--warmup", "0", "--no-ceilings", "--peers"]) == 0
    out = capsys.readouterr().out
    assert "peer pytreegrav skipped: pytreegrav is not installed (pip install 'orrery[bench]')" in out
    assert "peer rebound skipped: rebound is not installed (pip install 'orrery[bench]')" in out


def test_bench_direct_times_the_peers_beside_ours(tmp_path):
    package("pytreegrav")
    package("rebound")
    out = tmp_path / "peers.json"
    assert main(["bench", "direct", "--n", "128", "--precision", "f64", "--trials", "1",
                 "--warmup", "1", "--no-ceilings", "--peers", "--json", str(out)]) == 0
    rows = {r["solver"]: r for r in json.loads(out.read_text())["rows"]}
    ours = rows["cpu-direct"]
    for name in ("pytreegrav-bruteforce", "rebound-basic"):
        assert ours[f"x_{name}"] == pytest.approx(
            ours["ginteractions_per_s"] / rows[name]["ginteractions_per_s"])


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


def test_bench_direct_sweeps_a_grid_of_solver_options_with_typed_values():
    rows = direct.run(n=[64], precision=["f32"], sweep=["threads=1,2"], trials=1, warmup=0,
                      ceilings=False, simd="scalar")
    assert [row["threads"] for row in rows] == [1, 2]
    with pytest.raises(InvalidInputError, match="no option 'tile_size'"):
        direct.run(n=[64], sweep=["tile_size=64"], ceilings=False)
    with pytest.raises(InvalidInputError, match="NAME=V1"):
        direct.run(n=[64], sweep=["threads"], ceilings=False)


def test_bench_direct_times_resident_states_and_another_solver_in_the_same_run():
    rows = direct.run(n=[48], precision=["f64"], resident=True, versus=["reference"], trials=1,
                      warmup=0, ceilings=False)
    ours = {row["mode"]: row for row in rows if row["solver"] == "cpu-direct"}
    theirs = {row["mode"]: row for row in rows if row["solver"] == "reference"}
    assert set(ours) == set(theirs) == {"host", "resident"}
    for mode, row in ours.items():
        assert row["x_reference"] == pytest.approx(
            row["ginteractions_per_s"] / theirs[mode]["ginteractions_per_s"])


@pytest.mark.gpu
def test_bench_direct_on_a_device_sweeps_the_launch_and_times_each_configuration(device):
    rows = direct.run(solver="gpu-direct", device=device, n=[256], precision=["f32"],
                      sweep=["tile_size=64,128"], resident=True, versus=["cpu-direct"],
                      trials=1, warmup=1, ceilings=False)
    ours = [row for row in rows if row["solver"] == "gpu-direct"]
    assert [(row["tile_size"], row["mode"]) for row in ours] == [
        (64, "host"), (64, "resident"), (128, "host"), (128, "resident")]
    assert all(row["kernel_s"] > 0 and row["x_cpu-direct"] > 0 for row in ours)


def test_a_bad_bench_flag_is_a_usage_error_with_its_records_message(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "direct", "--n", "1"])
    assert exit_info.value.code == 2
    assert "argument --n: n must be >= 2, got 1" in capsys.readouterr().err
    with pytest.raises(InvalidInputError, match="n must be >= 2"):
        direct.run(n=[1])
