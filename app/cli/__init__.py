"""``orrery``: the command line. One module per subcommand, each with ``add_parser`` and a
handler that returns an exit code; ``main(argv)`` is what tests call."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..command_line import REPORTED, report, stop_on_signals
from ._mpi import ranks_agree

# Subcommand modules, in the order ``orrery --help`` lists them.
_COMMANDS = ("run", "devices", "bench", "calibrate", "info", "play", "render", "serve")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orrery", description="N-body simulation, benchmarks and recordings (headless).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
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
