"""tests/extras.py: a missing extra skips a test, naming the extra, except where
ORRERY_REQUIRE_EXTRAS names it, where it fails."""

import sys
import tomllib
from pathlib import Path

import pytest

from .extras import EXTRAS, package


def test_a_missing_extra_skips_naming_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)  # as if not installed
    monkeypatch.delenv("ORRERY_REQUIRE_EXTRAS", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"pip install 'orrery\[video\]'"):
        package("av")


def test_a_missing_extra_that_is_required_fails(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynbody", None)
    monkeypatch.setenv("ORRERY_REQUIRE_EXTRAS", "video,formats")
    with pytest.raises(pytest.fail.Exception, match="ORRERY_REQUIRE_EXTRAS requires the formats extra"):
        package("pynbody")


def test_every_extra_named_is_one_pyproject_declares():
    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    extras = set(declared["project"]["optional-dependencies"])
    assert set(EXTRAS.values()) <= extras
