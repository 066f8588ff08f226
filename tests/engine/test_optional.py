"""Optional imports: a missing package is one line naming the extra that installs it."""

import sys

import pytest

from orrery.engine import OrreryError
from orrery.engine._optional import PACKAGES, MissingPackageError, missing, require


def test_an_installed_package_is_returned():
    import PIL

    assert require("PIL") is PIL
    assert missing("PIL", "moderngl") is None


@pytest.mark.parametrize("package, line", [
    ("dpctl", "dpctl is not installed (pip install 'orrery[sycl]')"),
    ("cupy", "CuPy is not installed (pip install 'orrery[cuda]')"),
    ("matplotlib", "matplotlib is not installed (pip install 'orrery[bench]')"),
    ("pynbody", "pynbody is not installed (pip install 'orrery[formats]')"),
    ("av", "PyAV is not installed (pip install 'orrery[video]')"),
    ("mpi4py", "mpi4py is not installed (pip install 'orrery[mpi]')"),
    ("cuda", "cuda-python is not installed (pip install 'orrery[cuda]')"),
    ("imgui_bundle", "imgui-bundle is not installed, though orrery depends on it: reinstall "
                     "orrery from its checkout (bash scripts/setup.sh, or pip install .)"),
])
def test_a_missing_package_names_its_extra(monkeypatch, package, line):
    monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(MissingPackageError) as caught:
        require(f"{package}.sub")
    assert str(caught.value) == line
    assert isinstance(caught.value, OrreryError) and isinstance(caught.value, ImportError)
    assert missing("PIL", package) == line


def test_a_package_that_is_installed_but_broken_says_so(monkeypatch, tmp_path):
    fake = tmp_path / "rebound"
    fake.mkdir()
    (fake / "__init__.py").write_text("import librebound_shared_object_that_is_gone\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "rebound", raising=False)
    assert missing("rebound") == ("rebound is installed but cannot be imported (No module named "
                                  "'librebound_shared_object_that_is_gone')")


def test_every_extra_named_exists_in_the_package_metadata():
    from importlib.metadata import metadata

    extras = set(metadata("orrery").get_all("Provides-Extra"))
    assert {extra for _, extra in PACKAGES.values() if extra} <= extras


def test_without_pynbody_nothing_looks_like_a_snapshot(monkeypatch, tmp_path):
    from orrery.engine import snapshots

    path = tmp_path / "run.hdf5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n")
    monkeypatch.setitem(sys.modules, "pynbody", None)
    assert not snapshots.looks_like_snapshot(str(path))
    with pytest.raises(MissingPackageError, match=r"pip install 'orrery\[formats\]'"):
        snapshots.open_raw(str(path))
