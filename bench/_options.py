"""Benchmarks as records: a name, a description and an options table, like the solvers'.

A benchmark module defines ``SPEC`` (a :class:`BenchmarkSpec`) and ``run(**options) -> rows``;
``run`` starts with ``args = SPEC.resolve(options)``, which checks every option against its
record and fills in the defaults, so the body reads ``args.n`` whether it was called from
Python or from ``orrery bench`` (whose flags ``bench/command.py`` generates from the same table).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from types import SimpleNamespace

from ..engine import ics
from ..engine.errors import InvalidInputError
from ..engine.options import DEVICE, SIMD, SOFTENING, THREADS, Option


@dataclass(frozen=True)
class Several(Option):
    """An option that takes a list of values (``--n 1024 4096``), each checked as ``Option``
    checks one; ``default`` is a tuple. ``allow_empty``: an empty list means something (``bench
    report --benchmarks`` with none: only the report's own timings)."""

    allow_empty: bool = False

    def coerce(self, value):
        if value is None:
            return None if self.default is None else tuple(self.default)
        values = value if isinstance(value, (list, tuple)) else [value]
        if not values and not self.allow_empty:
            raise InvalidInputError(f"{self.name} needs at least one value")
        return tuple(Option.coerce(self, item) for item in values)


# Options more than one benchmark takes.
IC = Option("ic", str, "plummer", "initial conditions", choices=tuple(sorted(ics.GENERATORS)))
SEED = Option("seed", int, 1, "seed of the initial conditions")
# Where and on what a solver benchmark runs: the solvers' own records, then the particles.
SOLVER_RUN = (THREADS, SIMD, DEVICE, SOFTENING, IC, SEED)


def several(option: Option, default: tuple | None, doc: str | None = None, *,
            allow_empty: bool = False) -> Several:
    """A list-valued copy of a single-valued option (its type, choices and range)."""
    values = {f.name: getattr(option, f.name) for f in fields(Option)}
    return Several(**{**values, "default": default, "doc": doc or option.doc},
                   allow_empty=allow_empty)


def flag(name: str) -> str:
    """The command-line spelling of an option: ``leaf_capacity`` -> ``--leaf-capacity``."""
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class BenchmarkSpec:
    """What ``orrery bench NAME`` and ``orrery.bench.run(NAME, ...)`` need to know."""

    name: str
    doc: str
    options: tuple[Option, ...]

    def option(self, name: str) -> Option:
        return next(o for o in self.options if o.name == name)

    def has(self, name: str) -> bool:
        return any(o.name == name for o in self.options)

    def resolve(self, kwargs: dict) -> SimpleNamespace:
        """Every option, checked, with defaults for those not given; unknown names are an error."""
        known = {o.name: o for o in self.options}
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            raise InvalidInputError(f"benchmark {self.name!r} has no option(s) {unknown}; "
                                    f"its options are {sorted(known)}")
        values = {}
        for name, option in known.items():
            try:
                values[name] = option.coerce(kwargs.get(name, option.default))
            except argparse.ArgumentTypeError as error:  # a converter shared with the CLI
                raise InvalidInputError(f"{name}: {error}") from None
        return SimpleNamespace(**values)

    def command(self, kwargs: dict) -> str:
        """The ``orrery bench`` command line that runs this benchmark with ``kwargs``."""
        parts = ["orrery bench", self.name]
        for name, value in kwargs.items():
            option = self.option(name)
            if option.type is bool:
                parts.append(flag(name) if value else "--no-" + flag(name)[2:])
            elif isinstance(option, Several):
                parts += [flag(name), *map(str, value)]
            else:
                parts += [flag(name), str(value)]
        return " ".join(parts)
