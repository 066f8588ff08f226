"""Checks a built wheel against the checkout: every file git tracks under a folder that
pyproject.toml's [tool.scikit-build.wheel.packages] maps into the package (the Python packages,
the GPU kernels and shaders in the ``kernels/`` and ``shaders/`` folders beside the Python that
uses them, the presets and colour maps of assets/) is in the wheel at its mapped path, with the
native extension module and its type stub beside them; no kernel or shader lies outside the mapped
folders; and the wheel is no larger than MAX_MEGABYTES. Prints the wheel's size and what is
missing.

    python scripts/check_wheel.py dist/orrery-*.whl
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
# The x86-64 wheel repaired by auditwheel measured 1.8 MB (2026-12-06); twice that leaves room
# for growth and still catches a build folder or a recording swept in.
MAX_MEGABYTES = 3.6
# The folders that hold GPU kernels and shaders, wherever they sit in the packages.
DEVICE_SOURCE_FOLDERS = ("kernels", "shaders")


def _mapping(root: Path) -> dict[str, str]:
    config = tomllib.loads((root / "pyproject.toml").read_text())
    return config["tool"]["scikit-build"]["wheel"]["packages"]


def _tracked(root: Path, *paths: str) -> list[str]:
    return subprocess.run(["git", "ls-files", "--", *paths], cwd=root, check=True,
                          capture_output=True, text=True).stdout.split()


def expected_files(root: Path = ROOT) -> set[str]:
    """The paths inside the wheel that the checkout's tracked files map to."""
    expected = set()
    for target, source in _mapping(root).items():
        for path in _tracked(root, source):
            expected.add(str(PurePosixPath(target) / PurePosixPath(path).relative_to(source)))
    expected.add("orrery/_native.pyi")
    return expected


def unmapped_device_sources(root: Path = ROOT) -> list[str]:
    """Tracked kernel and shader files that no package folder maps into the wheel (a kernel
    folder put beside code outside the packages would otherwise go missing unnoticed)."""
    sources = [PurePosixPath(source) for source in _mapping(root).values()]
    return [path for path in _tracked(root)
            if set(PurePosixPath(path).parent.parts) & set(DEVICE_SOURCE_FOLDERS)
            and not any(PurePosixPath(path).is_relative_to(source) for source in sources)]


def problems(wheel: Path, expected: set[str]) -> list[str]:
    """What is wrong with ``wheel``: each expected file missing, no native module, or too large."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    found = []
    found += [f"missing: {path}" for path in sorted(expected - names)]
    if not any(PurePosixPath(name).parent == PurePosixPath("orrery") and
               PurePosixPath(name).name.startswith("_native.") and name.endswith((".so", ".pyd"))
               for name in names):
        found.append("missing: the native module orrery/_native.*.so (or .pyd)")
    megabytes = wheel.stat().st_size / 1e6
    if megabytes > MAX_MEGABYTES:
        found.append(f"too large: {megabytes:.1f} MB, more than {MAX_MEGABYTES} MB")
    return found


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    wheel = Path(args[0])
    expected = expected_files()
    found = [f"not mapped into the wheel: {path}" for path in unmapped_device_sources()]
    found += problems(wheel, expected)
    print(f"{wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB, {len(expected)} files checked, "
          f"{len(found)} problems")
    for problem in found:
        print(f"  {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
