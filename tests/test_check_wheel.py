"""scripts/check_wheel.py, which CI runs on the built wheel: it finds every kernel, shader and
preset of the checkout in a wheel that has them, and names the one a wheel lacks."""

import importlib.util
import subprocess
import zipfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "check_wheel.py"


def _check_wheel():
    spec = importlib.util.spec_from_file_location("check_wheel", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel(path: Path, names) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, "")
    return path


def test_the_expected_files_include_every_kernel_shader_and_preset():
    expected = _check_wheel().expected_files()
    root = SCRIPT.parents[1]
    for target, folder, pattern in [("orrery/engine/compute/kernels", "engine/compute/kernels", "*.*"),
                                    ("orrery/engine/solvers/kernels", "engine/solvers/kernels", "*.cl"),
                                    ("orrery/engine/tuning/kernels", "engine/tuning/kernels", "*.cl"),
                                    ("orrery/engine/flock/kernels", "engine/flock/kernels", "*.cl"),
                                    ("orrery/engine/kernels", "engine/kernels", "*.cl"),
                                    ("orrery/app/render/kernels", "app/render/kernels", "*.cl"),
                                    ("orrery/app/render/shaders", "app/render/shaders", "*.*"),
                                    ("orrery/assets/scenarios", "assets/scenarios", "*.toml")]:
        files = sorted((root / folder).glob(pattern))
        assert files, f"nothing matches {folder}/{pattern}"
        assert {f"{target}/{file.name}" for file in files} <= expected


def test_every_kernel_and_shader_of_the_checkout_is_mapped_into_the_wheel():
    assert _check_wheel().unmapped_device_sources() == []


def test_a_kernel_folder_outside_the_packages_is_named(tmp_path):
    check = _check_wheel()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.scikit-build.wheel.packages]\n"orrery/engine" = "engine"\n')
    for path in ("engine/solvers/kernels/direct.cl", "native/kernels/stray.cl", "native/core.cpp"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    assert check.unmapped_device_sources(tmp_path) == ["native/kernels/stray.cl"]


def test_a_complete_wheel_passes_and_a_missing_kernel_is_named(tmp_path):
    check = _check_wheel()
    expected = check.expected_files()
    native = "orrery/_native.cpython-311-x86_64-linux-gnu.so"
    assert check.problems(_wheel(tmp_path / "whole.whl", expected | {native}), expected) == []
    direct = "orrery/engine/solvers/kernels/direct.cl"
    lacking = _wheel(tmp_path / "lacking.whl", (expected - {direct}))
    assert check.problems(lacking, expected) == [
        f"missing: {direct}",
        "missing: the native module orrery/_native.*.so (or .pyd)"]
