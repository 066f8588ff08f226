"""The layers import downwards only: the engine imports neither the app nor the benchmarks, and
the app does not import the benchmarks (``orrery bench`` registers itself: ADR 0250). In native/,
the C++ core includes nothing of Python: its bindings are apart, in native/python/ (ADR 0315)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Source folder -> the package it installs as (pyproject's wheel.packages).
PACKAGES = {"engine": "orrery.engine", "app": "orrery.app", "bench": "orrery.bench"}


def imported_modules(path: Path, package: str):
    """Absolute names of every module ``path`` (part of ``package``) imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                yield node.module or ""
                continue
            base = package.split(".")
            base = base[:len(base) - node.level + 1]
            yield ".".join(base + ([node.module] if node.module else []))


def modules_of(folder: str):
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT / folder).with_suffix("")
        parts = list(relative.parts)
        # A relative import resolves against the containing package, __init__ or not.
        yield path, ".".join([PACKAGES[folder], *parts[:-1]])


@pytest.mark.parametrize("folder, forbidden", [
    ("engine", ("orrery.app", "orrery.bench")),
    ("app", ("orrery.bench",)),
])
def test_a_layer_never_imports_the_layers_above_it(folder, forbidden):
    offences = []
    for path, package in modules_of(folder):
        for name in imported_modules(path, package):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                offences.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offences == []


def test_the_import_resolver_sees_relative_imports():
    calibrate = ROOT / "app/cli/calibrate.py"
    names = set(imported_modules(calibrate, "orrery.app.cli"))
    assert {"orrery.engine.tuning.solver_timing", "orrery.app.command_line"} <= names


def test_orrery_bench_is_a_subcommand_the_app_finds_without_importing_it():
    from orrery.app.cli import build_parser

    args = build_parser().parse_args(["bench", "ceilings"])
    assert args.handler.__module__ == "orrery.bench.command"


@pytest.mark.parametrize("folder", ["engine", "app", "bench"])
def test_only_the_compute_layer_imports_a_gpu_api(folder):
    offences = []
    for path, package in modules_of(folder):
        if package.startswith("orrery.engine.compute"):
            continue
        for name in imported_modules(path, package):
            if name.split(".")[0] in ("cupy", "dpctl"):
                offences.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offences == []


def test_recording_stores_and_reads_runs_and_builds_none():
    """The recording package imports no solver, nor the live path that builds runs: continuing a
    recorded run is ``engine/live/resume.py``, beside the runner."""
    builders = ("orrery.engine.solvers", "orrery.engine.live", "orrery.engine.simulation",
                "orrery.engine.runner", "orrery.engine.resume")
    offences = []
    for path, package in modules_of("engine"):
        if not package.startswith("orrery.engine.recording"):
            continue
        for name in imported_modules(path, package):
            if any(name == b or name.startswith(b + ".") for b in builders):
                offences.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offences == []
    assert any(package == "orrery.engine.recording" for _, package in modules_of("engine"))


def test_the_benchmarks_use_only_the_apps_public_modules():
    """bench may import the app (the renderer, the served stream, the command line's argument
    types) but only through names a module of the app makes public: no ``_private`` module,
    imported as one or named in a ``from ... import``."""
    offences = []
    for path, package in modules_of("bench"):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node, name in zip(_import_nodes(tree), imported_modules(path, package)):
            if not (name == "orrery.app" or name.startswith("orrery.app.")):
                continue
            names = [name] if isinstance(node, ast.Import) else \
                [f"{name}.{alias.name}" for alias in node.names]
            for full in names:
                if any(part.startswith("_") for part in full.split(".")[2:]):
                    offences.append(f"{path.relative_to(ROOT)} imports {full}")
    assert offences == []


def _import_nodes(tree):
    """The import statements of ``tree`` in the order ``imported_modules`` walks them, once per
    module each names."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (node for _ in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node


# An include of pybind11, of Python's C API or of a binding header (native/python/).
PYTHON_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](pybind11/|Python\.h|python/)', re.MULTILINE)


def test_the_native_core_includes_no_python():
    core = sorted((ROOT / "native").glob("*.[ch]pp"))
    assert core, "no native core files found"
    offences = [str(path.relative_to(ROOT)) for path in core if PYTHON_INCLUDE.search(path.read_text())]
    assert offences == []


def test_the_native_core_check_sees_a_binding():
    assert PYTHON_INCLUDE.search((ROOT / "native/python/module.cpp").read_text())
    assert PYTHON_INCLUDE.search((ROOT / "native/python/tree.cpp").read_text())
