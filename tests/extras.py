"""Packages from Orrery's extras that some tests import, and the one rule for an absence (the rule
tests/conftest.py applies to system packages): skip, naming the extra that installs it, except
where ``ORRERY_REQUIRE_EXTRAS`` names that extra (comma-separated; CI names every extra it
installs), which fails instead, so that a broken install cannot turn a feature's tests into
silent skips. Use :func:`package` where ``pytest.importorskip`` would go, at module level too."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

from orrery.engine._optional import PACKAGES

# The extra that installs each module: engine/_optional.py's table, plus what only tests import,
# and the CPU peers under the lighter extra CI installs (bench-cpu: no JAX).
EXTRAS = {**{module: extra for module, (_, extra) in PACKAGES.items() if extra},
          "hdf5plugin": "compression", "matplotlib": "test",
          "pytreegrav": "bench-cpu", "rebound": "bench-cpu", "numba": "bench-cpu"}


def required_extras() -> set[str]:
    return {name for name in os.environ.get("ORRERY_REQUIRE_EXTRAS", "").split(",") if name}


def package(module: str) -> ModuleType:
    """``module`` imported, or this test (or module) skipped, or failed where it is required."""
    extra = EXTRAS[module]
    try:
        return importlib.import_module(module)
    except ImportError as error:
        message = f"{module} is not importable ({error}): pip install 'orrery[{extra}]'"
        if extra in required_extras():
            pytest.fail(f"{message}, and ORRERY_REQUIRE_EXTRAS requires the {extra} extra",
                        pytrace=False)
        pytest.skip(message, allow_module_level=True)
