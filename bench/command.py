"""``orrery bench KIND``: one subcommand per benchmark, its flags generated from the benchmark's
options table (``SPEC.options``) the way the app's ``_solver_args`` does for solvers; rows go to
the terminal and, with ``--json``/``--csv``, to a file, and with ``--record`` into the results
store that ``orrery bench report`` makes docs/performance.md from (ADR 0210).

The benchmarks sit above the app, so the app's command line does not import this module: it is
registered under the ``orrery.commands`` entry-point group (pyproject.toml), which ``orrery``
reads for the subcommands of the layers above it (ADR 0250)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..app.command_line import option_value, output_file
from ..engine.errors import OutputFileError
from . import BENCHMARKS, benchmark_module, results
from ._options import Several, flag
from .harness import write_rows


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="run benchmarks",
                                   description="Benchmarks: medians of timed trials after warm-up, "
                                               "with interquartile ranges and measured ceilings.")
    kinds = parser.add_subparsers(dest="kind", metavar="KIND", required=True)
    for name in BENCHMARKS:
        spec = benchmark_module(name).SPEC
        sub = kinds.add_parser(name, help=spec.doc, description=spec.doc)
        for option in spec.options:
            _add_option(sub, option)
        sub.add_argument("--json", metavar="FILE", type=rows_file(".json"),
                         help="also write the rows as JSON (FILE.json)")
        sub.add_argument("--csv", metavar="FILE", type=rows_file(".csv"),
                         help="also write the rows as CSV (FILE.csv)")
        if name != "report":
            sub.add_argument("--record", metavar="STORE", nargs="?", const=str(results.STORE),
                             help="append the rows, with this command, the commit, the machine "
                                  "and the date, to the results store (default: "
                                  f"{results.STORE}, run from the checkout's root)")
        sub.set_defaults(handler=run)


def _add_option(parser: argparse.ArgumentParser, option) -> None:
    """One flag per option, each value checked by the option's record as it is parsed, so a
    bad value is a usage error with the same rule and message as a call from Python."""
    shown = option.default if not isinstance(option.default, tuple) else \
        " ".join(map(str, option.default))
    help_text = option.doc if option.default is None else f"{option.doc} (default: {shown})"
    metavar = "{" + ",".join(map(str, option.choices)) + "}" if option.choices else \
        option.name.upper()
    if option.type is bool:
        parser.add_argument(flag(option.name), dest=option.name, default=None,
                            action=argparse.BooleanOptionalAction, help=help_text)
    elif isinstance(option, Several):
        # Both ``--n 1 2`` and ``--n 1 --n 2`` give [1, 2].
        parser.add_argument(flag(option.name), dest=option.name, default=None,
                            type=option_value(option), nargs="*" if option.allow_empty else "+",
                            action="extend",
                            metavar=metavar,
                            help=help_text)
    else:
        parser.add_argument(flag(option.name), dest=option.name, default=None,
                            type=option_value(option), metavar=metavar, help=help_text)


def run(args) -> int:
    module = benchmark_module(args.kind)
    options = {o.name: getattr(args, o.name) for o in module.SPEC.options
               if getattr(args, o.name) is not None}
    # The store is read before the benchmark runs, so a wrong one costs no measuring.
    record = getattr(args, "record", None)
    catalogue = results.load_catalogue(Path(record)) if record else None
    rows = module.run(**options)
    if catalogue is not None:
        _record(args.kind, module.SPEC, options, rows, catalogue, Path(record))
    if args.json:
        _write(rows, args.json, meta={"benchmark": args.kind})
    if args.csv:
        _write(rows, args.csv)
    return 0


def rows_file(suffix: str):
    """argparse's ``type`` of --json and --csv: a file :func:`output_file` can write, named
    with ``suffix`` (``write_rows`` picks the format by it: ``--json rows.txt`` wrote CSV)."""
    def parse(text: str) -> str:
        text = output_file(text)
        if Path(text).suffix != suffix:
            raise argparse.ArgumentTypeError(f"must end in {suffix}, got {text!r}")
        return text
    return parse


def _write(rows: list[dict], path: str, **options) -> None:
    """``write_rows`` to a hidden name beside ``path``, renamed once complete: a disk that
    fills up leaves no half-written table, and says so in one line."""
    path = Path(path)
    partial = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        write_rows(rows, partial, **options)
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise OutputFileError(f"cannot write {path}: {error.strerror or error}") from None


def command_line(kind: str, spec, options: dict) -> str:
    """The ``orrery bench`` command that runs ``kind`` with ``options`` (those given)."""
    parts = ["orrery bench", kind]
    for option in spec.options:
        if option.name not in options:
            continue
        value = options[option.name]
        if option.type is bool:
            parts.append(flag(option.name) if value else "--no-" + flag(option.name)[2:])
        elif isinstance(option, Several):
            parts += [flag(option.name), *map(str, value)]
        elif isinstance(value, tuple):  # a picture size, parsed to (w, h): written as typed, WxH
            parts += [flag(option.name), "x".join(map(str, value))]
        else:
            parts += [flag(option.name), str(value)]
    return " ".join(parts)


def _record(kind: str, spec, options: dict, rows: list[dict], catalogue, store: Path) -> None:
    stored = results.rows_from_benchmark(
        kind, rows, catalogue, command=command_line(kind, spec, options),
        machine=results.machine(), commit=results.commit(), date=results.now(),
        options=vars(spec.resolve(options)))
    path = results.append_rows(stored, store)
    taken = sum(row["measurement"] is not None for row in stored)
    print(f"recorded {len(stored)} rows ({taken} of catalogued measurements) in {path}",
          file=sys.stderr)
