"""``orrery devices``' compute-device section, with and without a GPU stack."""

import sys

from orrery.app.cli import main
from orrery.engine import compute


def test_devices_lists_each_backend_or_its_missing_package(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "Compute devices:" in out
    listing = compute.list_devices()
    for info in listing.devices:
        assert f"{info.spec}: {info.name}" in out
    for reason in listing.missing.values():
        assert reason in out


def test_without_any_gpu_stack_the_cpu_solvers_still_run(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dpctl", None)
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "no GPU compute stack" in out and "dpctl is not installed" in out
    gpu_direct_line = next(line for line in out.splitlines() if "gpu-direct" in line)
    assert "unavailable: no GPU compute device" in gpu_direct_line
    assert main(["run", "--n", "64", "--steps", "2", "--solver", "gpu-direct", "--quiet"]) == 2
    assert "CuPy is not installed" in capsys.readouterr().err
    assert main(["run", "--n", "64", "--steps", "2", "--solver", "cpu-direct", "--quiet"]) == 0
