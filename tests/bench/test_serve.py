"""`orrery bench serve` end to end at a tiny size: a real server, clients that decode, the rates
and latencies measured, the baselines in the same run."""

import json

import pytest

from orrery.app.cli import main


@pytest.mark.slow
@pytest.mark.usefixtures("egl")
def test_bench_serve_measures_delivered_pictures_latency_and_steps_against_headless(tmp_path):
    out = tmp_path / "serve.json"
    assert main(["bench", "serve", "--n", "400", "--scenario", "plummer", "--solver",
                 "cpu-direct", "--clients", "1", "2", "--seconds", "2", "--warmup", "1",
                 "--size", "160x96", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [row["clients"] for row in rows] == [1, 2]
    for row in rows:
        assert row["delivered_fps"] > 1 and row["steps_per_second"] > 0
        assert row["ratio"] == pytest.approx(row["steps_per_second"] /
                                             row["headless_steps_per_second"])
        assert row["viewer_steps_per_second"] > 0
        assert row["mbit_per_s"] > 0 and row["encode_ms"] > 0
        assert row["draw_ms"] > 0 and row["upload_ms"] > 0
        assert 0 < row["frame_latency_p50_ms"] <= row["frame_latency_p95_ms"]
        assert 0 < row["input_latency_p50_ms"] <= row["input_latency_p95_ms"]
        assert row["codec"] == "h264"


@pytest.mark.slow
@pytest.mark.usefixtures("egl")
def test_bench_serve_python_client_can_ask_for_jpeg_pictures(tmp_path):
    out = tmp_path / "serve.json"
    assert main(["bench", "serve", "--n", "400", "--scenario", "plummer", "--solver",
                 "cpu-direct", "--codec", "jpeg", "--seconds", "2", "--warmup", "1",
                 "--size", "160x96", "--no-baselines", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["codec"] == "jpeg" and row["delivered_fps"] > 1 and row["encode_ms"] > 0


@pytest.mark.slow
@pytest.mark.usefixtures("egl", "chromium")
def test_bench_serve_reads_what_a_chromium_page_decoded(tmp_path):
    out = tmp_path / "serve.json"
    assert main(["bench", "serve", "--n", "400", "--scenario", "plummer", "--solver",
                 "cpu-direct", "--client", "chromium", "--seconds", "3", "--warmup", "2",
                 "--size", "320x192", "--no-baselines", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["delivered_fps"] > 1 and row["steps_per_second"] > 0
    assert row["input_latency_p95_ms"] is not None and row["frame_latency_p50_ms"] > 0
    assert row["ratio"] is None  # no baselines asked for
    assert row["codec"] == "h264"  # a page on localhost is a secure context: WebCodecs


def test_a_recorded_command_gives_the_picture_size_as_it_is_typed():
    from orrery.bench.command import command_line
    from orrery.bench import serve

    command = command_line("serve", serve.SPEC, {"n": (10000000,), "size": (1920, 1080)})
    assert command == "orrery bench serve --n 10000000 --size 1920x1080"
