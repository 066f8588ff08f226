"""scripts/check_wheel.py, which CI runs on the built wheel: it finds every kernel, shader and
preset of the checkout in a wheel that has them, and names the one a wheel lacks."""

import importlib.util
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
    for target, folder, pattern in [("orrery/kernels", "native/kernels", "*.cl"),
                                    ("orrery/shaders", "shaders", "*.*"),
                                    ("orrery/assets/scenarios", "assets/scenarios", "*.toml")]:
        files = sorted((root / folder).glob(pattern))
        assert files, f"nothing matches {folder}/{pattern}"
        assert {f"{target}/{file.name}" for file in files} <= expected


def test_a_complete_wheel_passes_and_a_missing_kernel_is_named(tmp_path):
    check = _check_wheel()
    expected = check.expected_files()
    native = "orrery/_native.cpython-311-x86_64-linux-gnu.so"
    assert check.problems(_wheel(tmp_path / "whole.whl", expected | {native}), expected) == []
    lacking = _wheel(tmp_path / "lacking.whl", (expected - {"orrery/kernels/direct.cl"}))
    assert check.problems(lacking, expected) == [
        "missing: orrery/kernels/direct.cl",
        "missing: the native module orrery/_native.*.so (or .pyd)"]
