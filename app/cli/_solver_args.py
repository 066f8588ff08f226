"""Command-line flags generated from the solvers' options tables, so every solver option has
exactly one flag and its help text comes from the table."""

from __future__ import annotations

import argparse

from ...engine.solvers import solver_specs


def add_solver_arguments(parser: argparse.ArgumentParser, *, default_solver: str | None = "auto",
                         default_description: str | None = None) -> None:
    specs = solver_specs()
    parser.add_argument("--solver", default=default_solver, choices=sorted(specs),
                        help=f"force solver (default: {default_description or default_solver})")
    seen = {}
    for spec in specs.values():
        for option in spec.options:
            seen.setdefault(option.name, option)
    for option in seen.values():
        flag = "--" + option.name.replace("_", "-")
        if option.type is bool:
            parser.add_argument(flag, dest=option.name, default=None,
                                action=argparse.BooleanOptionalAction, help=option.doc)
        else:
            # Values are checked by the solver's options table, not by argparse: solvers share
            # flags but not always the allowed values (reference is f64 only).
            default = "" if option.default is None else f" (solver default: {option.default})"
            parser.add_argument(flag, dest=option.name, default=None, type=option.type,
                                help=option.doc + default)


def solver_options(args: argparse.Namespace) -> dict:
    """The solver options the user set on the command line; unset ones keep solver defaults,
    and a flag the chosen solver does not have is reported by ``make_solver``."""
    names = {option.name for spec in solver_specs().values() for option in spec.options}
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
