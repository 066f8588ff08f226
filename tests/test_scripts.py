"""scripts/_env.sh, which every script uses to pick Orrery's environment: the active virtual
environment as it is, else the project's .venv, else a message pointing at setup.sh."""

import os
import shutil
import subprocess
import sys
from pathlib import Path


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
SHOW = 'source "$1/scripts/_env.sh"; use_orrery_env; echo "$VIRTUAL_ENV"; command -v python'


def _run(root: Path, python_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{python_dir}:/usr/bin:/bin"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(["bash", "-c", SHOW, "show", str(root)], env=env, capture_output=True,
                          text=True, timeout=30)


def _project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir(parents=True)
    shutil.copy(SCRIPTS / "_env.sh", tmp_path / "scripts")
    return tmp_path


def _plain_python(tmp_path: Path) -> Path:
    """A folder whose python3 is the interpreter this venv was made from (no venv)."""
    folder = tmp_path / "plain-bin"
    folder.mkdir()
    (folder / "python3").symlink_to(os.path.realpath(sys._base_executable))
    return folder


def test_an_active_virtual_environment_is_used_as_it_is(tmp_path):
    environment = tmp_path / "env"  # its own, so the test does not hang on how pytest was started
    subprocess.run([os.path.realpath(sys._base_executable), "-m", "venv", "--without-pip",
                    str(environment)], check=True, timeout=120)
    root = _project(tmp_path / "project")
    here = environment / "bin"
    result = _run(root, here)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["", str(here / "python")]
    assert not (root / ".venv").exists()


def test_without_one_the_project_venv_goes_first_on_path(tmp_path):
    root = _project(tmp_path)
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(os.path.realpath(sys._base_executable))
    result = _run(root, _plain_python(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [str(root / ".venv"), str(bin_dir / "python")]


def test_without_any_environment_it_points_at_setup(tmp_path):
    root = _project(tmp_path)
    result = _run(root, _plain_python(tmp_path))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"No Orrery environment: run 'bash scripts/setup.sh' first (it makes "
                             f"{root / '.venv'}).\n")
