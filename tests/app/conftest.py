"""The GPU tests' ``device`` fixture (one test, every backend; see tests/engine/gpu/conftest.py),
shared with the app's tests (movies splatted on a compute device) rather than written twice."""

import importlib.util
from pathlib import Path

_path = Path(__file__).resolve().parents[1] / "engine" / "gpu" / "conftest.py"
_spec = importlib.util.spec_from_file_location("orrery_tests_gpu_device_fixture_app", _path)
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
device = _module.device
