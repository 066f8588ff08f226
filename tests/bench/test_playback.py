"""``orrery bench playback`` at a tiny size: every stage is timed and the temporary recording
is removed."""

import json

from orrery.app.cli import main


def test_bench_playback_measures_every_stage_at_a_tiny_size(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert main(["bench", "playback", "--n", "64", "--frames", "6", "--trials", "1",
                 "--sim-n", "64", "--solver", "cpu-direct", "--dir", str(tmp_path),
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    stages = [(row["stage"], row["precision"]) for row in rows]
    for precision, name in (("f16", "float16"), ("f32", "float32")):
        assert ("write", precision) in stages
        assert ("read direct", name) in stages and ("Player.latest", name) in stages
    assert ("simulate cpu-direct", "f32") in stages
    writes = [row for row in rows if row["stage"] == "write"]
    assert len(writes) == 2 and all(0 < row["of_ceiling"] for row in writes)
    assert stages.count(("write ceiling", "raw")) == 2
    assert all(row["frames_per_s"] > 0 for row in rows)
    assert list(tmp_path.glob("orrery-playback-*")) == []  # the temporary recording is gone


def test_bench_playback_times_each_particle_order_and_the_prefix_reads(tmp_path):
    out = tmp_path / "rows.json"
    assert main(["bench", "playback", "--n", "64", "--frames", "4", "--trials", "1",
                 "--sim-n", "64", "--solver", "cpu-direct", "--precision", "f16",
                 "--order", "natural", "priority", "--prefix", "16", "--dir", str(tmp_path),
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    writes = {row["order"] for row in rows if row["stage"] == "write"}
    prefixes = [row for row in rows if row["stage"] == "read prefix"]
    assert writes == {"natural", "priority"}
    assert sorted(row["order"] for row in prefixes) == ["natural", "priority"]
    assert all(row["n"] == 16 and row["frames_per_s"] > 0 for row in prefixes)
