"""Benchmarks: a layer above the engine and the app (it imports both; neither imports it).

Each module named in ``BENCHMARKS`` is one ``orrery bench NAME``: it defines ``SPEC`` (a
:class:`BenchmarkSpec`, the options table) and ``run(**options) -> list[dict]`` (rows, also
printed as a table). ``BENCHMARKS`` lists them in the order ``orrery bench --help`` shows them.

Adding a benchmark: write ``bench/NAME.py`` with ``SPEC = BenchmarkSpec("NAME", HELP,
options=(...))`` and ``def run(**options): args = SPEC.resolve(options); ...; return rows``,
name it in ``BENCHMARKS``, and add ``tests/bench/test_NAME.py`` calling ``run`` directly.

Porting a module written in the old pattern (``engine/bench/NAME.py`` with ``add_arguments``
and ``run(args)``): ``git mv`` it here; rewrite its relative imports (``from ..X`` of an engine
module -> ``from ..engine.X``, ``from .. import X`` -> ``from ..engine import X``, ``from ...app``
-> ``from ..app``, ``from ... import _native`` -> ``from .. import _native``); turn each
``add_argument`` into an ``Option`` (``nargs``/``append`` -> ``several(...)``, ``store_true`` ->
a bool option, ``--no-X`` -> a bool option ``X`` defaulting to True, shared flags -> the records
of ``engine/solvers/_options.py`` and ``bench/_options.py``); begin ``run(**options)`` with
``args = SPEC.resolve(options)`` and leave the body as it was; raise ``InvalidInputError``, not
``SystemExit``. ``bench/live.py`` was ported this way.
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
