"""`orrery bench live` end to end at a tiny size: every mode, rates against the headless one."""

import ctypes.util
import json

import pytest

from orrery.app.cli import main


def test_bench_live_measures_the_runner_and_the_rendered_path_against_headless(tmp_path):
    if ctypes.util.find_library("EGL") is None:
        pytest.skip("libEGL is absent")
    out = tmp_path / "live.json"
    assert main(["bench", "live", "--n", "300", "--scenario", "plummer", "--seconds", "0.3",
                 "--warmup", "0.05", "--size", "64x48", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [row["mode"] for row in rows] == ["headless", "runner", "capped", "uncapped"]
    headless = rows[0]["steps_per_second"]
    for row in rows:
        assert row["steps_per_second"] > 0
        assert row["ratio"] == pytest.approx(row["steps_per_second"] / headless)
    for row in rows[1:]:
        assert 0 < row["published"] and row["render_fps"] > 0
    for row in rows[2:]:  # a CPU solver's frames come through the host
        assert row["upload"] == "host upload" and 0 < row["shown"] <= row["published"] + 1


def test_live_ratio_is_the_share_of_the_solvers_own_rate():
    from orrery.app.viewer._panel import live_ratio

    assert live_ratio({"steps_per_second": 90.0, "solver_seconds_per_step": 0.01}) == \
        pytest.approx(0.9)
    assert live_ratio({"steps_per_second": 0.0, "solver_seconds_per_step": 0.01}) is None
    assert live_ratio({}) is None


def test_bench_live_runs_a_flock_scenario_headless_and_through_the_runner():
    from orrery.bench import live

    rows = live.run(n=[500], solver=["cpu"], scenario="school", modes=["headless", "runner"],
                    seconds=0.3, warmup=0.05)
    assert [row["mode"] for row in rows] == ["headless", "runner"]
    assert all(row["steps_per_second"] > 0 for row in rows)
