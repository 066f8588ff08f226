"""`orrery devices` and `orrery --version` report the native build and the SIMD level in use."""

import pytest

from orrery.app.cli import main
from orrery.engine.cpu_features import available_simd_levels, build_info


def test_devices_prints_simd_level_and_threads(capsys, monkeypatch):
    monkeypatch.setenv("ORRERY_SIMD", "scalar")
    assert main(["devices"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"CPU: {build_info()['threads']} threads, SIMD scalar")
    assert "ORRERY_SIMD=scalar" in first


def test_devices_defaults_to_the_widest_level(capsys, monkeypatch):
    monkeypatch.delenv("ORRERY_SIMD", raising=False)
    assert main(["devices"]) == 0
    assert f"SIMD {available_simd_levels()[-1]} " in capsys.readouterr().out


def test_version_includes_build_info(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("orrery ") and "-ffp-contract=off" in out and "SIMD built scalar" in out
