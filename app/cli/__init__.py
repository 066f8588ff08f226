"""``orrery``: the command line. One module per subcommand, each with ``add_parser`` and a
handler that returns an exit code; ``main(argv)`` is what tests call.

The app's own subcommands are its modules here; those of the layers above it (``orrery bench``,
from the benchmarks) register under the ``orrery.commands`` entry-point group, so that the app
imports none of them (ADR 0250)."""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib.metadata import entry_points
from typing import Protocol

from ..command_line import REPORTED, report, stop_on_signals
from ._mpi import ranks_agree

# Subcommand modules, in the order ``orrery --help`` lists them (the registered ones follow).
_COMMANDS = ("run", "devices", "calibrate", "fit_satellite", "info", "play", "render", "serve")
# Where a layer above the app registers a subcommand: ``NAME = "module"`` in pyproject.toml.
COMMAND_GROUP = "orrery.commands"


class Subcommand(Protocol):
    """A subcommand: adds its parser, whose defaults name the ``handler`` that runs it and
    returns an exit code."""

    def add_parser(self, subparsers: argparse._SubParsersAction) -> None: ...


def subcommands() -> list[Subcommand]:
    """The app's subcommands, then the registered ones by name."""
    registered = sorted(entry_points(group=COMMAND_GROUP), key=lambda entry: entry.name)
    return [importlib.import_module(f"{__name__}.{name}") for name in _COMMANDS] + \
        [entry.load() for entry in registered]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orrery", description="N-body simulation, benchmarks and recordings (headless).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for subcommand in subcommands():
        subcommand.add_parser(subparsers)
    return parser


class _VersionAction(argparse.Action):
    """``--version``: asks the native module only when given, so an environment it refuses
    (a bad ``ORRERY_SIMD``) stops only the commands that use it."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the version and how the native module was built, then exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from ... import __version__

        print(_version_text(__version__))
        parser.exit()


def _version_text(version: str) -> str:
    from ...engine.cpu_features import build_info

    info = build_info()
    return (f"orrery {version}\nnative: {info['compiler']}, {info['build_type']}, {info['flags']}; "
            f"SIMD built {', '.join(info['simd_compiled'])}, CPU {info['simd_cpu']}")


def main(argv: list[str] | None = None) -> int:
    prog = "orrery"
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit:
            ranks_agree(argv, parsed=False)  # the other ranks of an MPI run must not wait for it
            raise
        prog = f"orrery {args.command}"
        if not ranks_agree(argv, parsed=True):
            return 2
        with stop_on_signals():
            return int(args.handler(args) or 0)
    except REPORTED as error:
        return report(prog, error)
