"""``orrery bench KIND``: benchmarks with the harness's protocol; rows go to the terminal and,
with ``--json``/``--csv``, to a file."""

from __future__ import annotations

import importlib

from ...engine.bench import BENCHMARKS
from ...engine.bench.harness import write_rows


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="run benchmarks",
                                   description="Benchmarks: medians of timed trials after warm-up, "
                                               "with interquartile ranges and measured ceilings.")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    for name in BENCHMARKS:
        module = importlib.import_module(f"orrery.engine.bench.{name}")
        sub = kinds.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
        sub.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
        sub.set_defaults(handler=run, bench_module=module)


def run(args) -> int:
    rows = args.bench_module.run(args)
    if args.json:
        write_rows(rows, args.json, meta={"benchmark": args.kind})
    if args.csv:
        write_rows(rows, args.csv)
    return 0
