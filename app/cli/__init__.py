"""``orrery``: the command line. One module per subcommand, each with ``add_parser`` and a
handler that returns an exit code; ``main(argv)`` is what tests call."""

from __future__ import annotations

import argparse
import importlib
import sys

from ...engine.errors import OrreryError

# Subcommand modules, in the order ``orrery --help`` lists them.
_COMMANDS = ("run", "devices", "bench", "calibrate", "info", "play", "render")


def build_parser() -> argparse.ArgumentParser:
    from ... import __version__

    parser = argparse.ArgumentParser(
        prog="orrery", description="N-body simulation, benchmarks and recordings (headless).",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version_text(__version__))
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
    return parser


def _version_text(version: str) -> str:
    from ...engine.cpu_features import build_info

    info = build_info()
    return (f"orrery {version}\nnative: {info['compiler']}, {info['build_type']}, {info['flags']}; "
            f"SIMD built {', '.join(info['simd_compiled'])}, CPU {info['simd_cpu']}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except OrreryError as error:
        print(f"orrery {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"orrery {args.command}: interrupted", file=sys.stderr)
        return 130
