"""``orrery bench report``: docs/performance.md is what the results store generates (the check CI
runs), a figure is the median of the newest day's runs and never the best, goals are computed,
and ``orrery bench NAME --record`` appends rows a later report reads."""

import json
import os
import shutil
from pathlib import Path

import pytest

from orrery.app.cli import main
from orrery.bench import results
from orrery.bench.reporting.page import render

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "performance.md"

CATALOGUE = """
[[section]]
title = "Direct"

[[measurement]]
id = "rate"
section = "Direct"
what = "cpu-direct f32, N = 64"
unit = "G interactions/s"
machine = "test-machine"
bench = { name = "direct", where = { solver = "cpu-direct", precision = "f32", n = 64 }, column = "ginteractions_per_s", spread = "iqr_s", relative_to = "median_s" }

[[goal]]
id = "fast"
what = "fast enough"
conditions = [{ measurement = "rate", op = ">=", value = 1000.0 }]
"""


def row(value, date, *, command="orrery bench direct", commit=None, kind="test-machine"):
    return {"measurement": "rate", "value": value, "unit": "G interactions/s", "spread": None,
            "command": command, "commit": commit, "date": date, "source": "measured",
            "machine": {"kind": kind, "cpu": "a CPU", "cpus": 2}}


@pytest.fixture
def store(tmp_path):
    (tmp_path / "catalogue.toml").write_text(CATALOGUE)
    return tmp_path


def test_the_performance_page_is_what_the_results_store_generates(capsys):
    assert main(["bench", "report", "--check", "--store", str(STORE), "--out", str(PAGE)]) == 0, \
        capsys.readouterr().err


def test_a_hand_edited_figure_fails_the_check(tmp_path, capsys):
    page = tmp_path / "performance.md"
    page.write_text(PAGE.read_text().replace("| 59.98 fps |", "| 60.02 fps |", 1))
    assert page.read_text() != PAGE.read_text()
    assert main(["bench", "report", "--check", "--store", str(STORE), "--out", str(page)]) == 2
    err = capsys.readouterr().err
    assert "is not what" in err and "60.02 fps" in err


def test_report_writes_the_page_and_check_then_passes(store, tmp_path):
    results.append_rows([row(5.0, "2026-12-05T10:00:00+00:00")], store)
    page = tmp_path / "page.md"
    assert main(["bench", "report", "--store", str(store), "--out", str(page)]) == 0
    assert "| cpu-direct f32, N = 64 | 5.00 G interactions/s |" in page.read_text()
    assert main(["bench", "report", "--check", "--store", str(store), "--out", str(page)]) == 0


def test_the_figure_is_the_median_of_the_newest_days_runs_of_one_command_never_the_best():
    rows = [row(9.0, "2026-12-04T10:00:00+00:00"),  # an older day, faster: not taken
            row(2.0, "2026-12-05T08:00:00+00:00"),
            row(4.0, "2026-12-05T09:00:00+00:00"),
            row(3.0, "2026-12-05T09:30:00+00:00"),
            row(8.0, "2026-12-05T07:00:00+00:00", command="orrery bench direct --n 8"),
            row(7.0, "2026-12-05T11:00:00+00:00", kind="another-machine")]
    figure = results.current(rows, "rate", "test-machine")
    assert figure.value == 3.0
    assert figure.spread == {"range": [2.0, 4.0]}
    assert [r["value"] for r in figure.runs] == [2.0, 4.0, 3.0]


def test_runs_of_other_code_the_same_day_are_not_pooled():
    rows = [row(2.0, "2026-12-05T08:00:00+00:00", commit="aaa"),
            row(4.0, "2026-12-05T09:00:00+00:00", commit="bbb")]
    figure = results.current(rows, "rate", "test-machine")
    assert figure.value == 4.0 and len(figure.runs) == 1


def test_goals_are_evaluated_from_the_figures_not_typed(store):
    catalogue = results.load_catalogue(store)
    slow = render(catalogue, [row(5.0, "2026-12-05T10:00:00+00:00")])
    assert "| fast enough | 5.00 G interactions/s >= 1,000 G interactions/s | **not met** |" in slow
    fast = render(catalogue, [row(2000.0, "2026-12-05T10:00:00+00:00")])
    assert "| fast enough | 2,000 G interactions/s >= 1,000 G interactions/s | met |" in fast
    assert "| fast enough | no figure" in render(catalogue, [])


def test_a_recorded_bench_run_appends_its_rows_with_command_machine_commit_and_date(store):
    assert main(["bench", "direct", "--n", "64", "--precision", "f32", "--trials", "2",
                 "--warmup", "0", "--no-ceilings", "--record", str(store)]) == 0
    machine = results.machine()
    lines = (store / f"{machine['kind']}.jsonl").read_text().splitlines()
    stored = [json.loads(line) for line in lines]
    assert len(stored) == 1
    (only,) = stored
    assert only["measurement"] == "rate" and only["value"] > 0
    assert only["command"] == ("orrery bench direct --n 64 --precision f32 --trials 2 "
                               "--warmup 0 --no-ceilings")
    assert only["machine"]["cpu"] and only["machine"]["cpus"] >= 1
    assert only["date"].startswith("20") and only["source"] == "measured"
    assert only["spread"]["iqr"] >= 0 and only["row"]["n"] == 64
    assert "commit" in only


def test_every_stored_row_says_what_where_when_and_how():
    catalogue = results.load_catalogue(STORE)
    ids = {m.id for m in catalogue.measurements}
    for stored in results.load_rows(STORE):
        assert stored["machine"]["kind"] and stored["command"] and stored["date"]
        assert stored["source"]
        if stored["measurement"] is not None:
            assert stored["measurement"] in ids
            assert isinstance(stored["value"], (int, float))


def test_every_catalogued_measurement_has_a_figure():
    catalogue = results.load_catalogue(STORE)
    rows = results.load_rows(STORE)
    missing = [m.id for m in catalogue.measurements
               if results.current(rows, m.id, m.machine) is None]
    assert not missing


def test_a_store_copied_elsewhere_generates_the_same_page(tmp_path):
    shutil.copytree(STORE, tmp_path / "results")
    from orrery.bench.report import generate

    assert generate(tmp_path / "results") == PAGE.read_text()


def test_the_catalogue_maps_benchmark_rows_by_their_columns_and_the_runs_options():
    catalogue = results.load_catalogue(STORE)
    context = dict(command="orrery bench ...", machine={"kind": "nvidia-h200"}, commit=None,
                   date="2026-12-05T10:00:00+00:00")
    live = {"solver": "gpu-tree", "n": 1000000, "mode": "capped", "ratio": 0.95,
            "ratio_min": 0.94, "ratio_max": 0.96, "render_fps": 59.9, "steps_per_second": 200.0}
    stored = {r["measurement"]: r for r in results.rows_from_benchmark("live", [live], catalogue,
                                                                       **context)}
    assert set(stored) == {"live-1m-capped-share", "live-1m-capped-fps"}
    assert stored["live-1m-capped-share"]["value"] == pytest.approx(95.0)
    assert stored["live-1m-capped-share"]["spread"] == {"range": [pytest.approx(94.0),
                                                                  pytest.approx(96.0)]}
    tree = {"table": "scaling", "solver": "gpu-tree", "n": 1048576, "median_s": 0.006,
            "iqr_s": 0.0001, "walk_tera_per_s": 1.2}
    host_call = results.rows_from_benchmark("tree", [tree], catalogue, **context,
                                            options={"resident": False, "device": "cuda:0"})
    assert [r["measurement"] for r in host_call] == [None]  # kept, but not the resident figure
    resident = results.rows_from_benchmark("tree", [tree], catalogue, **context,
                                           options={"resident": True, "device": "cuda:0"})
    assert {r["measurement"]: r["value"] for r in resident} == {
        "gpu-tree-1m": pytest.approx(6.0), "gpu-tree-1m-walk-rate": 1.2}


def test_the_two_core_machines_boids_and_viewer_figures_are_bench_lives_runs():
    from orrery.bench import live

    catalogue = results.load_catalogue(STORE)
    context = dict(command="orrery bench live ...", machine={"kind": "amd-epyc-2cpu-avx512"},
                   commit=None, date="2026-12-07T10:00:00+00:00")

    def taken(scenario, solver, n, colour, *rows):
        options = vars(live.SPEC.resolve({"scenario": scenario, "solver": [solver], "n": [n],
                                          "colour": colour}))
        stored = results.rows_from_benchmark("live", [{"solver": solver, "n": n, **row}
                                                      for row in rows], catalogue,
                                             **context, options=options)
        return {r["measurement"]: r["value"] for r in stored if r["measurement"]}

    headless = {"mode": "headless", "steps_per_second": 80.0, "render_fps": None}
    paced = {"mode": "paced", "steps_per_second": 60.0, "render_fps": 35.0}
    assert taken("murmuration", "cpu", 100000, "heading", headless, paced) == {
        "murmuration-100k-steps": 80.0, "murmuration-100k-viewer-fps": 35.0}
    # the viewer's figure is the flock drawn in heading colours, as the page says
    assert taken("murmuration", "cpu", 100000, "population", paced) == {}
    assert taken("galaxy-collision", "cpu-tree", 30000, "population", headless, paced) == {
        "collision-30k-viewer-steps": 60.0}
    assert taken("plummer", "cpu-tree", 30000, "population", paced) == {}


def test_the_two_core_machines_crossover_is_bench_trees_interpolated_one_at_theta_half():
    from orrery.bench import tree

    catalogue = results.load_catalogue(STORE)
    context = dict(command="orrery bench tree ...", machine={"kind": "amd-epyc-2cpu-avx512"},
                   commit=None, date="2026-12-07T10:00:00+00:00")
    found = {"table": "summary", "solver": "cpu-tree", "crossover_n": 4100.0,
             "crossover_note": "interpolated, both measured"}
    # a bound, not a crossover: no figure
    bound = {**found, "crossover_n": 1024.0,
             "crossover_note": "tree already faster at the smallest N measured (1024)"}

    def taken(options, row):
        stored = results.rows_from_benchmark("tree", [row], catalogue, **context,
                                             options=vars(tree.SPEC.resolve(options)))
        return [(r["measurement"], r.get("value")) for r in stored]

    assert taken({"theta": 0.5}, found) == [("crossover-cpu-tree-dev", 4100.0)]
    assert taken({"theta": 0.5}, bound) == [(None, None)]
    assert taken({"theta": 0.7}, found) == [(None, None)]
    assert taken({"theta": 0.5, "precision": "f64"}, found) == [(None, None)]
    # no crossover found (NaN): no figure, and the row stays out of the measurement, where its
    # value would make the store unreadable
    assert taken({"theta": 0.5}, {**found, "crossover_n": float("nan")}) == [(None, None)]


def test_a_missing_store_is_refused_before_the_benchmark_runs(tmp_path, capsys, monkeypatch):
    from orrery.bench import direct

    monkeypatch.setattr(direct, "run", lambda **options: pytest.fail("the benchmark ran"))
    assert main(["bench", "direct", "--n", "64", "--record", str(tmp_path / "nowhere")]) == 2
    assert "no results store at" in capsys.readouterr().err
    assert main(["bench", "report", "--store", str(tmp_path / "nowhere")]) == 2


GOOD_ROW = json.dumps(row(5.0, "2026-12-05T10:00:00+00:00"))


@pytest.mark.parametrize("catalogue, rows, message", [
    (b"\xff\xfe not text", "", "catalogue.toml is not UTF-8 text"),
    ("x = " + "[" * 100_000, "", "nests tables or arrays too deeply"),
    (CATALOGUE.replace("value = 1000.0", "value = nan"), "", "goal 1's value is not a finite"),
    (CATALOGUE.replace('op = ">="', 'op = "~"'), "", "a condition's op must be one of"),
    (CATALOGUE.replace("id = \"rate\"", "id = 3", 1), "", "needs id as a string, got 3"),
    (CATALOGUE, GOOD_ROW + "\n{", "test-machine.jsonl:2: not a results row"),
    (CATALOGUE, GOOD_ROW.replace("5.0", "NaN"),
     ":1: not a results row (its value is not a finite"),
    (CATALOGUE, GOOD_ROW.replace('"2026-12-05T10:00:00+00:00"', '"yesterday"'),
     "its date is not ISO 8601"),
    (CATALOGUE, GOOD_ROW.replace('"kind": "test-machine"', '"kind": 7'),
     "its machine needs kind as a string"),
    (CATALOGUE, "[1, 2]", "the row is not a table"),
])
def test_a_store_the_page_cannot_use_is_refused_naming_the_file_and_entry(
        tmp_path, capsys, catalogue, rows, message):
    file = tmp_path / "catalogue.toml"
    file.write_bytes(catalogue if isinstance(catalogue, bytes) else catalogue.encode())
    (tmp_path / "test-machine.jsonl").write_text(rows)
    page = tmp_path / "performance.md"
    assert main(["bench", "report", "--store", str(tmp_path), "--out", str(page)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and str(tmp_path) in err, err
    assert not page.exists()


def test_report_writes_no_page_into_a_fifo_or_a_missing_folder(store, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for out in (fifo, tmp_path / "missing" / "performance.md"):
        assert main(["bench", "report", "--store", str(store), "--out", str(out)]) == 2
    assert main(["bench", "report", "--check", "--store", str(store), "--out", str(fifo)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"orrery bench: error: --out must name a regular file, not a device, FIFO or socket: "
        f"{str(fifo)!r}",
        f"orrery bench: error: --out the folder {str(tmp_path / 'missing')!r} does not exist",
        f"orrery bench: error: page {fifo} is a FIFO (named pipe), not a file"]


def test_runs_recorded_one_after_another_carry_the_same_commit(tmp_path, monkeypatch):
    """The first --record writes the store; the runs after it measure the same code, so a
    changed store does not make their commit -dirty (they would not be pooled otherwise)."""
    import subprocess

    def git(*arguments):
        subprocess.run(["git", *arguments], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "kind.jsonl").write_text("")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    monkeypatch.chdir(tmp_path)
    clean = results.commit()
    assert clean and not clean.endswith("-dirty")
    (tmp_path / "docs" / "results" / "kind.jsonl").write_text("{}\n")
    assert results.commit() == clean
    (tmp_path / "code.py").write_text("x = 2\n")
    assert results.commit() == clean + "-dirty"
