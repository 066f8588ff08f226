"""``orrery bench render`` called as a function, headless through EGL: static frames, the bare
draw and replay through the viewer's path."""

import ctypes.util

import pytest

pytest.importorskip("moderngl", reason="the viewer extra (moderngl) is not installed")
if ctypes.util.find_library("EGL") is None:
    pytest.skip("libEGL is absent (apt: libegl1 libegl-mesa0 libgl1-mesa-dri)",
                allow_module_level=True)

from orrery.bench import render  # noqa: E402


def test_render_benchmark_reports_frame_and_bare_times(capsys):
    rows = render.run(n=[500], size="64x48", trials=2, warmup=1, target=["rgba32f", "rgba16f"])
    assert [(row["n"], row["target"]) for row in rows] == [(500, "rgba32f"), (500, "rgba16f")]
    for row in rows:
        assert row["frame_ms"] > 0 and row["bare_ms"] > 0 and row["with_upload_ms"] > 0
        assert row["ratio_to_bare"] == pytest.approx(row["frame_ms"] / row["bare_ms"])
    assert "ratio_to_bare" in capsys.readouterr().out


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
