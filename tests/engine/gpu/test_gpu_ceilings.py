"""The device ceiling probes run and report plausible, internally consistent rates."""

import math

from orrery.engine.tuning import ceilings


def test_ceilings_are_positive_rates_in_a_plausible_order(context):
    result = ceilings.measure(context, trials=1)
    assert result["device"] == context.info.spec and result["name"] == context.info.name
    precisions = ["f32", "f64"] if context.info.fp64 else ["f32"]
    for bits in precisions:
        for key in (f"fma_{bits}", f"rsqrt_estimate_{bits}", f"sqrt_div_{bits}"):
            assert math.isfinite(result[key]) and result[key] > 0, key
        # A multiply-add retires at least as fast as an exact square root and divide.
        assert result[f"fma_{bits}"] / 2 > result[f"sqrt_div_{bits}"]
    assert math.isfinite(result["read"]) and result["read"] > 0


def test_bench_ceilings_command_measures_the_device(device, capsys):
    from orrery.app.cli import main

    assert main(["bench", "ceilings", "--device", device]) == 0
    out = capsys.readouterr().out
    assert "sqrt_div" in out and "flop/s" in out and device in out


def test_bench_direct_on_a_device_reports_fractions_of_its_ceilings(device, tmp_path):
    import json

    from orrery.app.cli import main

    out = tmp_path / "direct.json"
    assert main(["bench", "direct", "--solver", "gpu-direct", "--device", device, "--n", "512",
                 "--trials", "2", "--warmup", "1", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert rows and all(0 < row["fma_fraction"] < 1 and row["kernel_s"] > 0 for row in rows)
