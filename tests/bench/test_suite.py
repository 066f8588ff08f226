"""``orrery bench suite``: writes the session's report with whatever benchmarks exist, says what
did not run and why, and writes it without matplotlib too."""

import sys
import types

import orrery.bench.reporting.session as session_module
from orrery.app.cli import main
from orrery.bench import BENCHMARKS, BenchmarkSpec
from orrery.engine.solvers import Option

from ..extras import package


def fake_benchmark(run, *, quick=True, peers=True, name="fake"):
    module = types.ModuleType(name)
    options = ((Option("quick", bool, False, "tiny sizes"),) if quick else ()) + \
        ((Option("peers", bool, False, "peer codes"),) if peers else ())
    module.SPEC = BenchmarkSpec(name, "a stand-in", options)

    def checked_run(**given):
        return run(vars(module.SPEC.resolve(given)))

    module.run = checked_run
    return module


def test_quick_report_with_the_benchmarks_of_this_build(tmp_path, capsys):
    package("matplotlib")
    assert main(["bench", "suite", "--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "index.md").read_text()
    others = [name for name in BENCHMARKS if name not in ("suite", "report")]
    if others:
        section = text.split("## Benchmarks run")[1].split("\n## ")[0]
        assert all(f"`orrery bench {name}" in section for name in others)
    else:
        assert "No benchmark modules are registered in this build" in text
    for heading in ("## Ceilings of this machine", "## Direct summation kernels",
                    "## Scaling with N and fitted exponents", "## Accuracy against cost",
                    "## GPU against CPU", "## Which solver wins at which size"):
        assert heading in text
    assert "| cpu-direct | 512 |" in text  # the largest quick size was timed
    assert "Canary change over the session" in text
    assert "Reproduce: `orrery bench suite --quick" in text
    for figure in ("solver-scaling.png", "accuracy-cost.png"):
        assert f"]({figure})" in text
        assert (tmp_path / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_calls_benchmarks_with_their_options_and_survives_failures(tmp_path, monkeypatch):
    seen = {}

    def tree_run(args):
        seen["tree"] = args
        return [{"solver": "cpu-tree", "n": n, "median_s": 1e-6 * n ** 1.25}
                for n in (1024, 4096, 16384)]

    def broken_run(args):
        raise RuntimeError("no device here")

    fakes = {"ceilings": fake_benchmark(lambda args: [{"probe": "fma f32", "gflops": 117.0}],
                                        name="ceilings"),
             "tree": fake_benchmark(tree_run, name="tree"),
             "slowpoke": fake_benchmark(lambda args: [], quick=False, name="slowpoke"),
             "broken": fake_benchmark(broken_run, peers=False, name="broken")}
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, f"orrery.bench.{name}", module)
    monkeypatch.setattr(session_module, "BENCHMARKS", ("suite", *fakes))
    monkeypatch.setattr(session_module, "PEER_PACKAGES", ("json",))  # any importable name
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed

    assert main(["bench", "suite", "--quick", "--out", str(tmp_path)]) == 0
    text = (tmp_path / "index.md").read_text()
    assert seen["tree"]["quick"] is True and seen["tree"]["peers"] is True
    assert "`orrery bench tree --quick --peers`" in text
    assert "| fma f32 | 117 |" in text
    assert "| cpu-tree | 1.25 |" in text  # exponent fitted to the tree benchmark's rows
    assert "`orrery bench slowpoke --peers` did not run: it has no --quick option" in text
    assert "failed: RuntimeError: no device here" in text
    assert "_No plot: matplotlib is not installed" in text
    assert not list(tmp_path.glob("*.png"))


def test_report_rejects_benchmarks_that_do_not_exist(tmp_path, capsys):
    assert main(["bench", "suite", "--quick", "--out", str(tmp_path),
                 "--benchmarks", "no-such-benchmark"]) == 2
    assert "no-such-benchmark" in capsys.readouterr().err
    assert not (tmp_path / "index.md").exists()
