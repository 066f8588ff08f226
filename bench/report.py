"""``orrery bench report``: write docs/performance.md from the results store (``docs/results/``:
rows that ``orrery bench NAME --record`` appends, and the catalogue of what the page shows and
its goals); ``--check`` writes nothing and fails while the page differs from what the store
generates (ADR 0210). It measures nothing: ``orrery bench suite`` runs every benchmark."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from ..app.command_line import output_file
from ..engine.errors import OrreryError, OutputFileError
from ..engine.input_files import read_small_text
from ..engine.options import Option
from ._options import BenchmarkSpec
from .reporting.page import render
from .results import STORE, current, evaluate, load_catalogue, load_rows

HELP = "write docs/performance.md from the results store docs/results/ (--check: compare only)"

SPEC = BenchmarkSpec("report", HELP, options=(
    Option("store", str, str(STORE), "the results store: catalogue.toml and *.jsonl rows"),
    Option("out", str, "docs/performance.md", "the page to write or check"),
    Option("check", bool, False, "write nothing; fail if the page differs from what the store "
                                 "generates"),
))


# The page is a few hundred rows of Markdown.
PAGE_BYTES = 16 << 20


class PageOutOfDate(OrreryError):
    """The performance page is not what the results store generates."""


def generate(store: Path | str = STORE) -> str:
    return render(load_catalogue(Path(store)), load_rows(Path(store)))


def run(**options) -> list[dict]:
    args = SPEC.resolve(options)
    store, out = Path(args.store), Path(args.out)
    if not args.check:
        try:
            output_file(args.out)
        except argparse.ArgumentTypeError as error:
            raise OutputFileError(f"--out {error}") from None
    catalogue, rows = load_catalogue(store), load_rows(store)
    text = render(catalogue, rows)
    if args.check:
        written = read_small_text(out, what="page", limit=PAGE_BYTES) if out.exists() else ""
        if written != text:
            diff = "".join(list(difflib.unified_diff(
                written.splitlines(True), text.splitlines(True), str(out),
                f"generated from {store}"))[:40])
            print(diff, file=sys.stderr)
            raise PageOutOfDate(f"{out} is not what {store} generates: run `orrery bench report` "
                                f"(edit the store or its catalogue, not the page)")
        print(f"{out} is what {store} generates", file=sys.stderr)
    else:
        _write(text, out)
        print(f"wrote {out} from {len(rows)} rows of {store}", file=sys.stderr)
    figures = {m.id: current(rows, m.id, m.machine) for m in catalogue.measurements}
    result = [{"measurement": m.id, "machine": m.machine, "unit": m.unit,
               "figure": None if figures[m.id] is None else figures[m.id].value,
               "runs": 0 if figures[m.id] is None else len(figures[m.id].runs)}
              for m in catalogue.measurements]
    result += [{"goal": g.id, "verdict": {True: "met", False: "not met", None: "no figure"}[
        evaluate(g, figures)]} for g in catalogue.goals]
    return result


def _write(text: str, path: Path) -> None:
    """``text`` to a hidden name beside ``path``, renamed once complete: a full disk leaves no
    half-written page."""
    partial = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        partial.write_text(text)
        partial.replace(path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise OutputFileError(f"cannot write {path}: {error.strerror or error}") from None
