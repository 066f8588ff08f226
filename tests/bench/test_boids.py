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


def test_bench_boids_on_a_device_says_where_the_time_goes(device):
    rows = boids.run(n=[3000], device=[device], search=["scattered-grid", "coherent-grid"],
                     cell_width=[1], trials=2, warmup=1, steps=1)
    steps = [row for row in rows if row["table"] == "boids"]
    phases = [row for row in rows if row["table"] == "boids-phases"]
    assert [row["search"] for row in steps] == ["scattered-grid", "coherent-grid"]
    # after its first step the coherent search's rule kernel writes the next keys (and the
    # gather the cell table): no keys phase of its own
    assert {row["phase"] for row in phases if row["search"] == "coherent-grid"} == {
        "sort", "gather", "rules"}
    assert {row["phase"] for row in phases if row["search"] == "scattered-grid"} == {
        "keys+table", "sort", "rules"}
    for step in steps:
        mine = [row for row in phases if row["search"] == step["search"]]
        assert abs(sum(row["share"] for row in mine) - 1) < 1e-9
        assert abs(sum(row["ms"] for row in mine) + step["gap_ms"] - step["ms_per_step"]) < 1e-6
        for row in mine:
            # at least the boids' own rows in and out (32 bytes each way) per rule step
            assert row["mb"] > 0 and row["gb_per_s"] > 0 and row["of_read_ceiling"] > 0
        rules = next(row for row in mine if row["phase"] == "rules")
        assert rules["mb"] * 1e6 >= 3000 * 64
