import ctypes.util
import importlib
import os
import shutil
from importlib import resources
from pathlib import Path

import pytest

from orrery.engine import ics

# What must come from the environment's orrery when CI tests the installed wheel.
_PACKAGE_PARTS = ("orrery", "orrery.engine", "orrery.app", "orrery._native")
# (package, folder): the compute layer's kernels, the renderer's shaders, the presets.
_PACKAGE_DATA = (("orrery.engine.compute", "kernels"), ("orrery.app.render", "shaders"),
                 ("orrery", "assets"))


def _package_files() -> dict[str, Path]:
    files = {name: Path(importlib.import_module(name).__file__) for name in _PACKAGE_PARTS}
    files.update({f"{package}/{folder}": Path(str(resources.files(package) / folder))
                  for package, folder in _PACKAGE_DATA})
    return {name: path.resolve() for name, path in files.items()}


def pytest_report_header(config):
    return f"orrery under test: {Path(importlib.import_module('orrery').__file__).parent}"


def pytest_configure(config):
    """With ORRERY_TEST_INSTALLED=1 (CI, testing the built wheel) every part of the package must
    come from the installed environment, never from this checkout."""
    if not os.environ.get("ORRERY_TEST_INSTALLED"):
        return
    checkout = config.rootpath.resolve()
    wrong = {name: path for name, path in _package_files().items()
             if path.is_relative_to(checkout) or not path.exists()}
    if wrong:
        raise pytest.UsageError("ORRERY_TEST_INSTALLED is set but these parts of orrery are missing "
                                f"or come from the checkout {checkout}: {wrong}")


@pytest.fixture(scope="session")
def plummer_2048():
    return ics.plummer(2048, seed=7)


# What some tests need from the machine besides Python packages (scripts/setup.sh installs all
# of it), and the one rule for an absence: skip, naming what to install, except where
# ORRERY_REQUIRE_SYSTEM names it (comma-separated; CI names every one), which fails instead, so
# that a broken install cannot turn the rendering and window tests into silent skips.
SYSTEM_NEEDS = {
    "egl": ("libEGL", lambda: ctypes.util.find_library("EGL") is not None,
            "apt: libegl1 libegl-mesa0 libgl1-mesa-dri"),
    "xvfb": ("Xvfb", lambda: shutil.which("Xvfb") is not None, "apt: xvfb xauth"),
    "xdotool": ("xdotool", lambda: shutil.which("xdotool") is not None, "apt: xdotool"),
    "chromium": ("Chromium and chromedriver",
                 lambda: bool(shutil.which("chromium") and shutil.which("chromedriver")),
                 "apt: chromium chromium-driver"),
}


def _need(name: str) -> None:
    what, present, install = SYSTEM_NEEDS[name]
    if present():
        return
    message = f"{what} is absent ({install})"
    if name in os.environ.get("ORRERY_REQUIRE_SYSTEM", "").split(","):
        pytest.fail(f"{message}, and ORRERY_REQUIRE_SYSTEM requires it", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def egl():
    """libEGL, for headless GL contexts."""
    _need("egl")


@pytest.fixture(scope="session")
def xvfb():
    """The Xvfb server, for the viewer's real window."""
    _need("xvfb")


@pytest.fixture(scope="session")
def xdotool():
    """xdotool, to click in that window."""
    _need("xdotool")


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium and its driver, for the served client's page."""
    _need("chromium")
