"""`orrery bench live` end to end at a tiny size: every mode, rates against the headless one."""

import json
import shutil
from pathlib import Path

import pytest

from orrery.app.cli import main
from orrery.engine.errors import InvalidInputError

from ..display import xvfb_server

STORE = Path(__file__).resolve().parents[2] / "docs" / "results"


@pytest.mark.usefixtures("egl")
def test_bench_live_measures_the_runner_and_the_rendered_path_against_headless(tmp_path):
    from orrery.app.render._pacing import REDRAW_S

    out = tmp_path / "live.json"
    assert main(["bench", "live", "--n", "300", "--scenario", "plummer", "--seconds", "0.3",
                 "--warmup", "0.05", "--size", "64x48", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [row["mode"] for row in rows] == ["headless", "runner", "capped", "uncapped", "paced"]
    headless = rows[0]["steps_per_second"]
    for row in rows:
        assert row["steps_per_second"] > 0
        assert row["ratio"] == pytest.approx(row["steps_per_second"] / headless)
    for row in rows[1:]:
        assert 0 < row["published"] and row["render_fps"] > 0
    for row in rows[2:]:  # a CPU solver's frames come through the host
        assert row["upload"] == "host upload" and 0 < row["shown"] <= row["published"] + 1
        assert row["tiled"] is None  # the compute splat did not draw (no tile to count)
    # Paced, a frame is drawn only for a new step (or at the floor of one every REDRAW_S).
    paced = rows[4]
    assert paced["render_fps"] * 0.3 <= paced["shown"] + 0.3 / REDRAW_S + 2


def test_live_ratio_is_the_share_of_the_solvers_own_rate():
    from orrery.app.viewer._panel import live_ratio
    from orrery.engine.frames import FrameStats

    assert live_ratio(FrameStats(steps_per_second=90.0, solver_seconds_per_step=0.01)) == \
        pytest.approx(0.9)
    assert live_ratio(FrameStats(steps_per_second=0.0, solver_seconds_per_step=0.01)) is None
    assert live_ratio(FrameStats()) is None


def test_rounds_give_medians_and_the_range_of_each_rounds_ratio():
    from orrery.bench.live import _summary

    runs = [{"mode": "capped", "steps_per_second": rate, "ratio": ratio, "render_fps": 60.0,
             "published": 10, "shown": 9} for rate, ratio in ((80.0, 0.8), (95.0, 0.9), (60.0, 0.7))]
    row = _summary(runs)
    assert row["steps_per_second"] == 80.0 and row["ratio"] == 0.8
    assert (row["ratio_min"], row["ratio_max"]) == (0.7, 0.9)
    assert row["render_fps"] == 60.0 and row["shown"] == 9


def test_bench_live_rounds_run_every_mode_in_turn(tmp_path, capsys):
    out = tmp_path / "live.json"
    assert main(["bench", "live", "--n", "200", "--scenario", "plummer", "--seconds", "0.1",
                 "--warmup", "0", "--modes", "headless", "runner", "--rounds", "2",
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [row["mode"] for row in rows] == ["headless", "runner"]
    assert rows[0]["ratio"] == rows[0]["ratio_min"] == rows[0]["ratio_max"] == 1.0
    assert rows[1]["ratio_min"] <= rows[1]["ratio"] <= rows[1]["ratio_max"]
    assert capsys.readouterr().out.count(" runner ") >= 3  # two rounds, then the summary


def test_bench_live_runs_a_flock_scenario_headless_and_through_the_runner():
    from orrery.bench import live

    rows = live.run(n=[500], solver=["cpu"], scenario="school", modes=["headless", "runner"],
                    seconds=0.3, warmup=0.05)
    assert [row["mode"] for row in rows] == ["headless", "runner"]
    assert all(row["steps_per_second"] > 0 for row in rows)


@pytest.mark.usefixtures("egl")
def test_bench_live_records_a_flock_drawn_in_heading_colours(tmp_path):
    store = tmp_path / "results"
    store.mkdir()
    shutil.copy(STORE / "catalogue.toml", store)
    assert main(["bench", "live", "--n", "500", "--solver", "cpu", "--scenario", "murmuration",
                 "--modes", "headless", "paced", "--colour", "heading", "--seconds", "0.3",
                 "--warmup", "0.05", "--size", "64x48", "--record", str(store)]) == 0
    (rows_file,) = store.glob("*.jsonl")
    stored = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert [row["row"]["mode"] for row in stored] == ["headless", "paced"]
    for row in stored:
        assert row["command"] == (
            "orrery bench live --n 500 --solver cpu --scenario murmuration --modes headless "
            "paced --seconds 0.3 --warmup 0.05 --size 64x48 --colour heading")
        assert row["source"] == "measured" and row["benchmark"] == "live"
        assert row["machine"]["kind"] == rows_file.stem and row["date"].startswith("20")
        assert "commit" in row and len(row["load"]) == 3
        assert row["measurement"] is None  # 500 boids are no figure of the page's
        assert row["row"]["steps_per_second"] > 0
    assert stored[1]["row"]["render_fps"] > 0 and stored[1]["row"]["shown"] > 0


@pytest.mark.usefixtures("xvfb")
def test_bench_live_measures_the_viewer_in_a_real_window(tmp_path, monkeypatch):
    """--modes window runs orrery-viewer on the display and reads its rates from the viewer's
    own --stats records (what the other modes emulate offscreen); without a display it says
    how to get one."""
    from orrery.bench import live

    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(InvalidInputError, match="xvfb-run"):
        live.run(n=[300], scenario="plummer", modes=["window"], seconds=0.5, warmup=0.1)
    with xvfb_server("640x480") as display:
        monkeypatch.setenv("DISPLAY", display)
        rows = live.run(n=[300], scenario="plummer", modes=["headless", "window"], seconds=1.5,
                        warmup=0.5, size=(320, 240), colour="speed")
    window = rows[1]
    assert window["mode"] == "window" and window["steps_per_second"] > 0
    assert window["render_fps"] > 0 and window["shown"] >= 1
    assert window["upload"] == "host upload" and window["particles"].startswith("host splat")
    assert window["ratio"] == pytest.approx(window["steps_per_second"] / rows[0]["steps_per_second"])
