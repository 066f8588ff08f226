"""The viewer, `orrery play` and the headless renderer with a package missing or a GL library
that does not load: one line saying what to install or fix, before anything runs."""

import sys

import pytest

from orrery.app.cli import main as orrery
from orrery.app.viewer import main as viewer
from orrery.app.viewer._main import VIEWER_PACKAGES


@pytest.mark.parametrize("package", VIEWER_PACKAGES)
def test_the_viewer_names_a_missing_package_before_it_starts(monkeypatch, capsys, tmp_path, package):
    monkeypatch.setitem(sys.modules, package, None)
    screenshot = tmp_path / "last.png"
    assert viewer(["--frames", "1", "--screenshot", str(screenshot)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("orrery-viewer: error: ") and err.count("\n") == 1
    assert "is not installed, though orrery depends on it: reinstall orrery" in err
    assert not screenshot.exists()


def test_help_needs_no_viewer_package(monkeypatch, capsys):
    for package in VIEWER_PACKAGES:
        monkeypatch.setitem(sys.modules, package, None)
    with pytest.raises(SystemExit) as exit_info:
        viewer(["--help"])
    assert exit_info.value.code == 0 and "--play" in capsys.readouterr().out


@pytest.mark.parametrize("variable", ["ORRERY_LIBEGL", "ORRERY_LIBGL"])
def test_a_gl_library_that_does_not_load_is_one_line(monkeypatch, capsys, tmp_path, variable):
    bogus = tmp_path / "libnothing.so.1"
    monkeypatch.setenv(variable, str(bogus))
    assert orrery(["bench", "render", "--n", "16", "--trials", "1", "--warmup", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"={bogus} (--libgl/--libegl or ORRERY_LIBGL/ORRERY_LIBEGL)" in err
    assert err.startswith("orrery bench: error: no headless OpenGL 3.3 context through EGL")


def test_a_movie_without_pyav_names_the_video_extra(monkeypatch, tmp_path):
    from orrery.app.export import VideoWriter
    from orrery.engine._optional import MissingPackageError

    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(MissingPackageError) as caught:
        VideoWriter(tmp_path / "movie.mp4", size=(16, 16), fps=10)
    assert str(caught.value) == "PyAV is not installed (pip install 'orrery[video]')"
    assert not (tmp_path / "movie.mp4").exists()
