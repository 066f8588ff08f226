"""``orrery bench render`` called as a function, headless through EGL: static frames, the bare
draw and replay through the viewer's path."""

import pytest

from ..extras import package

pytestmark = pytest.mark.usefixtures("egl")  # tests/conftest.py: skip or fail

from orrery.bench import render  # noqa: E402


def test_render_benchmark_reports_frame_and_bare_times(capsys):
    rows = render.run(n=[500], size="64x48", trials=2, warmup=1, target=["rgba32f", "rgba16f"])
    assert [(row["n"], row["target"]) for row in rows] == [(500, "rgba32f"), (500, "rgba16f")]
    for row in rows:
        assert row["frame_ms"] > 0 and row["bare_ms"] > 0 and row["with_upload_ms"] > 0
        assert row["ratio_to_bare"] == pytest.approx(row["frame_ms"] / row["bare_ms"])
    assert "ratio_to_bare" in capsys.readouterr().out


def test_render_benchmark_times_density_images():
    rows = render.run(n=[500], size="64x48", trials=2, warmup=1, mode="density", neighbours=8)
    assert rows[0]["mode"] == "density" and rows[0]["frame_ms"] > 0
    assert rows[0]["draw_ms"] > 0 and rows[0]["present_ms"] > 0  # GL time queries
    assert rows[0]["particles"] is not None


def test_render_benchmark_times_the_density_splats_stages_on_a_compute_device(capsys):
    package("dpctl")
    rows = render.run(n=[500], size="64x48", trials=2, warmup=1, mode="density",
                      splat="sycl:cpu")
    row = rows[0]
    assert row["particles"].startswith("compute density pyramid"), row["particles"]
    for stage in ("extent_ms", "deposit_ms", "reconstruct_ms", "copy_ms", "present_ms"):
        assert row[stage] > 0, stage
    assert row["extent_ms"] + row["deposit_ms"] + row["reconstruct_ms"] < row["frame_ms"]
    assert "reconstruct_ms" in capsys.readouterr().out


def test_render_benchmark_replays_a_new_recording_frame_every_frame(tmp_path, capsys):
    rows = render.run(n=[300], size="64x48", trials=2, warmup=1, replay=True, frames=4,
                      dir=str(tmp_path))
    static, *replays = rows
    assert static["source"] == "static"
    assert [(row["source"], row["vertex_format"]) for row in replays] == [
        ("replay float16", "3f2"), ("replay float32", "3f4")]
    for row in replays:
        assert row["timed_frames"] == row["new_frames"] == 8  # two passes, every frame new
        assert row["frame_ms"] > 0 and row["draw_ms"] > 0 and row["upload_ms"] > 0
        assert row["render_ms"] == static["frame_ms"] and row["bare_ms"] == static["bare_ms"]
        assert row["ratio_to_render"] == pytest.approx(row["frame_ms"] / row["render_ms"])
    assert list(tmp_path.iterdir()) == []  # the temporary recordings are gone
    assert "ratio_to_render" in capsys.readouterr().out
