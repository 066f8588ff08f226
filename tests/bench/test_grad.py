"""``orrery bench grad`` end to end at tiny sizes: rows carry the ratio, reversibility and, with
--check, an error against central differences."""

import json

import pytest

from orrery.app.cli import main
from orrery.bench import grad
from orrery.engine import make_solver
from orrery.engine.errors import InvalidInputError


def test_bench_grad_rows(tmp_path, capsys):
    out = tmp_path / "grad.json"
    # Five trials: a median of two is their mean, and one trial slowed by other work on the
    # machine made the forward run's (0.4 ms here) look longer than the gradient's.
    assert main(["bench", "grad", "--n", "64", "--steps", "3", "--trials", "5", "--warmup", "0",
                 "--check", "--check-samples", "2", "--softening", "0.05", "--threads", "1",
                 "--json", str(out)]) == 0
    assert "grad_over_forward" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())["rows"]
    assert row["solver"] == "cpu-direct" and row["precision"] == "f64" and row["n"] == 64
    assert row["reversible"] is True
    assert row["fd_error"] < 1e-6
    assert row["gradient_s"] > row["forward_s"] > 0
    assert row["grad_over_forward"] == pytest.approx(row["gradient_s"] / row["forward_s"])
    # The backward pass keeps a few arrays of the state besides the forward run's.
    assert 1 <= row["memory_over_forward"] < 3


def test_bench_grad_runs_the_reference_as_a_function():
    (row,) = grad.run(n=[32], steps=2, trials=1, warmup=0, solver="reference")
    assert row["reversible"] and "fd_error" not in row


def test_bench_grad_refuses_solvers_without_a_vjp():
    with pytest.raises(InvalidInputError, match="no force VJP for solver 'auto'"):
        grad.run(n=[32], steps=1, trials=1, warmup=0, solver="auto")


def test_bench_grad_sweeps_an_fmms_orders_against_the_direct_gradient():
    rows = grad.run(n=[512], steps=2, trials=1, warmup=0, solver="cpu-fmm", theta=0.6,
                    order=[2, 6], against_direct=True, softening=0.05)
    assert [(r["order"], r["theta"]) for r in rows] == [(2, 0.6), (6, 0.6)]
    assert all(r["reversible"] for r in rows)
    # The expansions' error, and with it the gradient's, falls with the order.
    assert 1e-6 < rows[1]["direct_error"] < rows[0]["direct_error"] / 4 < 1e-2
    (direct,) = grad.run(n=[64], steps=2, trials=1, warmup=0, against_direct=True)
    assert direct["direct_error"] == 0 and "order" not in direct


def test_bench_grad_with_accuracy_names_the_setting_the_table_chose():
    (row,) = grad.run(n=[512], steps=1, trials=1, warmup=0, solver="cpu-fmm", accuracy=1e-3,
                      softening=0.05)
    chosen = make_solver("cpu-fmm", accuracy=1e-3).evaluation_setting(512)
    assert row["accuracy"] == 1e-3
    assert (row["theta"], row["order"], row.get("heavy_share", 0.0)) == (
        chosen["theta"], chosen["order"], chosen["heavy_share"])
