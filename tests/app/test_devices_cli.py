"""`orrery devices` and `orrery --version` report the native build, the SIMD level in use and the
GPU stack that would serve each platform (with what to install)."""

from types import SimpleNamespace

import pytest

from orrery.app.cli import main
from orrery.app.cli.devices import INTEL, NVIDIA, Platform, gpu_stack_advice, this_platform
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


def _gpu(backend: str, name: str, kind: str = "gpu"):
    return SimpleNamespace(backend=backend, spec=f"{backend}:0", name=name, kind=kind)


def test_devices_says_which_gpu_stack_serves_this_platform(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    where = this_platform()
    assert f"GPU stack for {where.system} on {where.machine}:" in out


def test_macos_has_no_gpu_stack_today():
    for machine in ("aarch64", "x86_64"):
        (line,) = gpu_stack_advice(Platform("Darwin", machine, None), [])
        assert line.startswith("none on macOS today") and "pip install" not in line


def test_a_gpu_found_is_the_stack_that_serves():
    assert gpu_stack_advice(Platform("Linux", "x86_64", frozenset({NVIDIA})),
                            [_gpu("cuda", "NVIDIA H200")]) == ["CUDA serves this machine: cuda:0 (NVIDIA H200)"]


def test_an_nvidia_gpu_on_linux_arm64_is_served_by_the_cuda_extra_and_an_intel_one_by_nothing():
    nvidia, intel = gpu_stack_advice(Platform("Linux", "aarch64", frozenset({NVIDIA, INTEL})), [])
    assert "pip install 'orrery[cuda]'" in nvidia
    assert "orrery[sycl]" not in intel and "x86-64 only" in intel


def test_an_intel_gpu_on_x86_64_is_served_by_sycl():
    for system in ("Linux", "Windows"):
        (line,) = gpu_stack_advice(Platform(system, "x86_64", frozenset({INTEL})), [])
        assert line.startswith("Intel GPU: SYCL through dpctl") and "pip install 'orrery[sycl]'" in line


def test_where_the_system_does_not_say_every_maker_is_explained():
    lines = gpu_stack_advice(Platform("Windows", "x86_64", None), [])
    assert [line.split(" GPU")[0] for line in lines] == [NVIDIA, INTEL, "AMD"]
    assert all("does not say which GPU" in line for line in lines)


def test_without_a_gpu_the_cpu_solvers_serve_and_sycl_offers_a_trial_device():
    (line,) = gpu_stack_advice(Platform("Linux", "x86_64", frozenset()), [])
    assert line.startswith("no GPU seen: the CPU solvers serve") and "orrery[sycl]" in line
    (found,) = gpu_stack_advice(Platform("Linux", "x86_64", frozenset()), [_gpu("sycl", "OpenCL CPU", "cpu")])
    assert "the SYCL CPU device above runs the GPU kernels" in found
    assert gpu_stack_advice(Platform("Linux", "aarch64", frozenset()), []) == ["no GPU seen: the CPU solvers serve"]
