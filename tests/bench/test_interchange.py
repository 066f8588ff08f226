"""``orrery bench interchange`` at tiny sizes: the three paths are timed for each N, each row's
ratio is its median over the resident one, and the options are checked as the CLI checks them."""

import json

import pytest

from orrery.app.cli import main
from orrery.bench import interchange
from orrery.engine import compute
from orrery.engine.errors import InvalidInputError


@pytest.mark.gpu
def test_bench_interchange_times_three_paths_per_n(device):
    rows = interchange.run(device=device, solver="gpu-direct", n=[64, 200], trials=2, warmup=1)
    spec = compute.open_device(device).info.spec
    paths = [(r["n"], r["path"]) for r in rows if r["table"] == "interchange"]
    assert paths == [(n, path) for n in (64, 200) for path in ("resident", "device", "host")]
    for n in (64, 200):
        timed = {r["path"]: r for r in rows if r["table"] == "interchange" and r["n"] == n}
        assert all(r["median_s"] > 0 and r["trials"] == 2 and r["device"] == spec
                   for r in timed.values())
        resident = timed["resident"]["median_s"]
        assert timed["resident"]["of_resident"] == 1.0
        ratios = next(r for r in rows if r["table"] == "ratios" and r["n"] == n)
        for path in ("device", "host"):
            assert timed[path]["of_resident"] == pytest.approx(timed[path]["median_s"] / resident)
            assert ratios[f"{path}_over_resident"] == timed[path]["of_resident"]
        assert (timed["device"]["goal"], timed["host"]["goal"]) == (1.05, 1.5)


@pytest.mark.gpu
def test_bench_interchange_from_the_command_line(device, tmp_path):
    out = tmp_path / "interchange.json"
    assert main(["bench", "interchange", "--device", device, "--n", "128", "--trials", "1",
                 "--warmup", "0", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["path"] for r in rows if r["table"] == "interchange"] == ["resident", "device", "host"]
    assert all(r["solver"] == "gpu-tree" for r in rows)


def test_bench_interchange_checks_its_options():
    with pytest.raises(InvalidInputError, match="solver"):
        interchange.run(solver="cpu-direct")
    with pytest.raises(InvalidInputError, match="no option"):
        interchange.run(trails=3)
