"""``orrery bench boids``: rows with the time per step, the phases and the sort's share."""

from orrery.bench import boids


def test_bench_boids_rows_have_the_time_per_step_and_the_sort_share():
    rows = boids.run(n=[3000], trials=2, warmup=0, steps=1, search=["naive", "coherent-grid"])
    assert [(row["search"], row["cell_width"]) for row in rows] == [
        ("naive", 1), ("coherent-grid", 1), ("coherent-grid", 2)]
    for row in rows:
        assert row["ms_per_step"] > 0 and row["trials"] == 2
        assert row["rules_ms"] > 0 and 0 <= row["sort_share"] < 1
    assert rows[1]["sort_ms"] > 0 and rows[0]["sort_ms"] == 0
