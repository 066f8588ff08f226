"""Benchmarks: a layer above the engine and the app (it imports both; neither imports it).

Each module named in ``BENCHMARKS`` is one ``orrery bench NAME``: it defines ``SPEC`` (a
:class:`BenchmarkSpec`, the options table) and ``run(**options) -> list[dict]`` (rows, also
printed as a table). ``BENCHMARKS`` lists them in the order ``orrery bench --help`` shows them;
``command.py`` makes them that command's subcommands, and joins the app's command line through
the ``orrery.commands`` entry-point group, since the app may not import the benchmarks (ADR 0250).

Adding a benchmark: write ``bench/NAME.py`` with ``SPEC = BenchmarkSpec("NAME", HELP,
options=(...))`` and ``def run(**options): args = SPEC.resolve(options); ...; return rows``,
name it in ``BENCHMARKS``, and add ``tests/bench/test_NAME.py`` calling ``run`` directly.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..engine.errors import InvalidInputError
from ._options import BenchmarkSpec, Several

BENCHMARKS: tuple[str, ...] = ("ceilings", "direct", "tree", "fmm", "accuracy", "interchange", "render", "movie",
                               "live",
                               "serve", "playback", "boids", "suite", "grad", "report")


def benchmark_module(name: str) -> ModuleType:
    """The module of benchmark ``name`` (imported on first use: some load GL or a GPU API)."""
    if name not in BENCHMARKS:
        raise InvalidInputError(f"no benchmark {name!r}; choose from {list(BENCHMARKS)}")
    return importlib.import_module(f"{__name__}.{name}")


def run(name: str, **options) -> list[dict]:
    """Run benchmark ``name`` with keyword options (those of its ``SPEC``); returns its rows."""
    return benchmark_module(name).run(**options)


__all__ = ["BENCHMARKS", "BenchmarkSpec", "Several", "benchmark_module", "run"]
