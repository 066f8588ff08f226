"""The results store: every recorded figure is one JSON line in ``docs/results/<kind>.jsonl``,
one file per machine kind, appended to and never rewritten (ADR 0210).

A row holds one figure of one measurement (``measurement``: an id of ``catalogue.toml``, or
null for a benchmark row no measurement takes), its ``value`` and ``unit``, its ``spread`` where
known (``{"iqr": x}``, or ``{"range": [low, high]}`` over rounds), ``trials``, ``threads``, the
``command`` that measured it, the ``commit``, the ``date`` (UTC, ISO 8601), the ``machine`` (kind,
CPU model, CPU count, SIMD level, GPU, driver) and its ``source``: ``measured`` for a row
``orrery bench ... --record`` appended, else where it was copied from.

The page's figure for a measurement (:func:`current`) follows one rule, never the best run:
1. Take the measurement's rows on its machine kind.
2. Take the newest row's day (UTC), command and commit; keep the rows of that day with that
   command and commit (a row copied from the old page has no commit where the code measured
   was not recorded).
3. The figure is their median; its spread is the one run's spread, or the range of the runs.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from statistics import median

from ..engine import portable
from ..engine.errors import InvalidInputError
from ..engine.input_files import read_small_text

STORE = Path("docs/results")
CATALOGUE = "catalogue.toml"
# A catalogue is a page's worth of TOML; a machine kind's rows grow by a few hundred a year.
CATALOGUE_BYTES = 1 << 20
ROWS_BYTES = 64 << 20
_OPERATORS = (">=", "<=", ">", "<")


# -- the machine a run is on --------------------------------------------------------------------

def _gpu() -> tuple[str | None, str | None]:
    """The first NVIDIA GPU's name and driver version as nvidia-smi states them, else None."""
    if not shutil.which("nvidia-smi"):
        return None, None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError):
        return None, None
    if not out:
        return None, None
    name, _, driver = out[0].partition(",")
    return name.strip(), driver.strip() or None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def machine() -> dict:
    """This machine as a results row records it; ``kind`` names the store file."""
    from ..engine.cpu_features import build_info

    cpu, cpus = portable.cpu_model(), os.cpu_count() or 1
    simd = build_info()["simd_cpu"]
    gpu, driver = _gpu()
    kind = os.environ.get("ORRERY_MACHINE_KIND") or (
        _slug(gpu) if gpu else f"{_slug(cpu)}-{cpus}cpu-{simd}")
    return {"kind": kind, "cpu": cpu, "cpus": cpus, "simd": simd, "gpu": gpu, "driver": driver}


def commit() -> str | None:
    """The checkout's commit (``-dirty`` with uncommitted changes), or None outside a checkout.
    Changes to the results store itself do not count: the first of several ``--record`` runs
    writes it, and the runs after it measure the same code."""
    def git(*arguments) -> str:
        return subprocess.run(["git", *arguments], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short=10", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                      f":(exclude){STORE.as_posix()}")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}-dirty" if changed else head or None


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# -- the catalogue: what the page shows and the goals -------------------------------------------

@dataclass(frozen=True)
class Measurement:
    id: str
    section: str
    what: str
    unit: str
    machine: str  # the machine kind whose rows give the page's figure
    digits: int = 3  # significant digits shown
    note: str = ""
    bench: dict | None = None  # how a recorded benchmark row becomes this measurement's row


@dataclass(frozen=True)
class Condition:
    measurement: str
    op: str
    value: float

    def holds(self, figure: float) -> bool:
        return {">=": figure >= self.value, "<=": figure <= self.value,
                ">": figure > self.value, "<": figure < self.value}[self.op]


@dataclass(frozen=True)
class Goal:
    id: str
    what: str
    conditions: tuple[Condition, ...]
    note: str = ""


@dataclass(frozen=True)
class Catalogue:
    sections: tuple[tuple[str, str], ...]  # (title, prose)
    measurements: tuple[Measurement, ...]
    goals: tuple[Goal, ...]

    def measurement(self, id: str) -> Measurement:
        return next(m for m in self.measurements if m.id == id)


def load_catalogue(store: Path = STORE) -> Catalogue:
    """The catalogue of ``store``; :class:`InvalidInputError` naming the file and the entry
    for anything that is not one."""
    path = Path(store) / CATALOGUE
    if not path.exists():
        raise InvalidInputError(f"no results store at {store} ({path} is missing): run from the "
                                f"checkout's root or name the store")
    text = read_small_text(path, what="results catalogue", limit=CATALOGUE_BYTES)
    try:
        return _catalogue(tomllib.loads(text))
    except tomllib.TOMLDecodeError as error:  # its text says the line and column
        raise InvalidInputError(f"results catalogue {path} is not valid TOML: {error}") from None
    except RecursionError:
        raise InvalidInputError(f"results catalogue {path} nests tables or arrays too deeply") \
            from None
    except ValueError as error:
        raise InvalidInputError(f"results catalogue {path}: {error}") from None


def _catalogue(data: dict) -> Catalogue:
    measurements = []
    for number, entry in enumerate(_tables(data, "measurement"), 1):
        what = f"measurement {number}"
        unknown = set(entry) - {field.name for field in fields(Measurement)}
        if unknown:
            raise ValueError(f"{what} has unknown fields {sorted(unknown)}")
        bench = entry.get("bench")
        if bench is not None:
            bench = _table(bench, f"{what}'s bench")
            _text(bench, "name", f"{what}'s bench")
            _text(bench, "column", f"{what}'s bench")
            _table(bench.get("where", {}), f"{what}'s bench where")
        digits = entry.get("digits", 3)
        if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 17:
            raise ValueError(f"{what}'s digits must be a whole number 1 to 17, got {digits!r:.40}")
        measurements.append(Measurement(
            *(_text(entry, name, what) for name in ("id", "section", "what", "unit", "machine")),
            digits=digits, note=_text(entry, "note", what, ""), bench=bench))
    ids = {m.id for m in measurements}
    if len(ids) != len(measurements):
        raise ValueError("a measurement id appears twice in the catalogue")
    goals = []
    for number, goal in enumerate(_tables(data, "goal"), 1):
        what = f"goal {number}"
        conditions = []
        for condition in _tables(goal, "conditions", what):
            if condition.get("op") not in _OPERATORS:
                raise ValueError(f"{what}: a condition's op must be one of "
                                 f"{', '.join(_OPERATORS)}, got {condition.get('op')!r:.40}")
            conditions.append(Condition(_text(condition, "measurement", what), condition["op"],
                                        _finite(condition.get("value"), f"{what}'s value")))
        unknown = [c.measurement for c in conditions if c.measurement not in ids]
        if unknown:
            raise ValueError(f"goal {goal.get('id')!r:.40} names unknown measurements {unknown}")
        goals.append(Goal(_text(goal, "id", what), _text(goal, "what", what), tuple(conditions),
                          _text(goal, "note", what, "")))
    sections = tuple((_text(s, "title", "a section"), _text(s, "prose", "a section", ""))
                     for s in _tables(data, "section"))
    missing = {m.section for m in measurements} - {title for title, _ in sections}
    if missing:
        raise ValueError(f"measurements name sections the catalogue lacks: {sorted(missing)}")
    return Catalogue(sections, tuple(measurements), tuple(goals))


def _table(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a table: {value!r:.40}")
    return value


def _tables(table: dict, name: str, what: str = "the catalogue") -> list[dict]:
    """``table[name]``: an array of tables (none if absent)."""
    value = table.get(name, [])
    if not isinstance(value, list):
        raise ValueError(f"{what}'s {name} is not an array of tables: {value!r:.40}")
    return [_table(entry, f"{what}'s {name} {number}") for number, entry in enumerate(value, 1)]


def _text(table: dict, name: str, what: str, default: str | None = None) -> str:
    value = table.get(name, default)
    if not isinstance(value, str):
        raise ValueError(f"{what} needs {name} as a string, got {value!r:.40}")
    return value


def _finite(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise ValueError(f"{what} is not a finite number: {value!r:.40}")
    return float(value)


# -- rows ---------------------------------------------------------------------------------------

def load_rows(store: Path = STORE) -> list[dict]:
    """Every row of ``store``; :class:`InvalidInputError` naming the file and line of one that
    the page could not use."""
    rows = []
    for path in sorted(Path(store).glob("*.jsonl")):
        text = read_small_text(path, what="results file", limit=ROWS_BYTES)
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    _check_row(row)
                except (ValueError, RecursionError) as error:  # JSONDecodeError is a ValueError
                    raise InvalidInputError(f"{path}:{number}: not a results row "
                                            f"({error})") from None
                rows.append(row)
    return rows


def _check_row(row) -> None:
    """ValueError saying what a row lacks that :func:`current` and the page read."""
    machine = _table(_table(row, "the row").get("machine"), "its machine")
    _text(machine, "kind", "its machine")
    if row.get("measurement") is None:
        return  # a benchmark row no measurement takes, kept as measured
    _text(row, "measurement", "the row")
    _finite(row.get("value"), "its value")
    _text(row, "command", "the row")
    try:
        datetime.fromisoformat(_text(row, "date", "the row"))
    except ValueError:
        raise ValueError(f"its date is not ISO 8601: {row['date']!r:.40}") from None
    if row.get("commit") is not None:
        _text(row, "commit", "the row")
    spread = row.get("spread")
    if spread is not None:
        spread = _table(spread, "its spread")
        if "iqr" in spread:
            _finite(spread["iqr"], "its spread's iqr")
        else:
            ends = spread.get("range")
            if not isinstance(ends, list) or len(ends) != 2:
                raise ValueError(f"its spread is neither an iqr nor a range: {spread!r:.40}")
            for end in ends:
                _finite(end, "its spread's range")


def append_rows(rows: list[dict], store: Path = STORE) -> Path | None:
    """Append ``rows`` (all of one machine kind) to that kind's file; returns its path."""
    if not rows:
        return None
    kinds = {row["machine"]["kind"] for row in rows}
    if len(kinds) != 1:
        raise ValueError(f"rows of several machine kinds at once: {sorted(kinds)}")
    path = Path(store) / f"{kinds.pop()}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        for row in rows:
            handle.write(json.dumps(row, sort_keys=True, default=_plain) + "\n")
    return path


def _plain(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (tuple, set)):
        return list(value)
    return str(value)


def _matches(where: dict, row: dict) -> bool:
    return all(row.get(key) == value for key, value in where.items())


def _same(value, wanted) -> bool:
    return list(value) == list(wanted) if isinstance(value, (list, tuple)) else value == wanted


def rows_from_benchmark(benchmark: str, bench_rows: list[dict], catalogue: Catalogue, *,
                        command: str, machine: dict, commit: str | None, date: str,
                        options: dict | None = None) -> list[dict]:
    """Store rows for one ``orrery bench`` run: one per (benchmark row, catalogue measurement
    that takes it: the row's columns equal the mapping's ``where``, the run's resolved options
    its ``options``), and each benchmark row no measurement takes kept as it is
    (``measurement`` null), so that nothing the run measured is lost."""
    options = options or {}
    common = {"command": command, "machine": machine, "commit": commit, "date": date,
              "source": "measured", "benchmark": benchmark,
              "load": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}
    stored = []
    for raw in bench_rows:
        taken = False
        for m in catalogue.measurements:
            how = m.bench
            if not how or how["name"] != benchmark or not _matches(how.get("where", {}), raw):
                continue
            if not all(name in options and _same(options[name], wanted)
                       for name, wanted in how.get("options", {}).items()):
                continue
            value = raw.get(how["column"])
            # None or not finite (a crossover that was not found, say): no figure, and the row
            # is kept unmapped, since a non-finite value would make load_rows refuse the store
            if value is None or not math.isfinite(float(value)):
                continue
            scale = how.get("scale", 1.0)
            spread = raw.get(how["spread"]) if how.get("spread") else None
            if spread is not None and how.get("relative_to"):  # a rate's IQR from its time's
                spread = float(value) * float(spread) / float(raw[how["relative_to"]])
            spread = None if spread is None else {"iqr": float(spread) * scale}
            if how.get("range") and all(raw.get(c) is not None for c in how["range"]):
                spread = {"range": [float(raw[c]) * scale for c in how["range"]]}
            stored.append({**common, "measurement": m.id, "value": float(value) * scale,
                           "unit": m.unit, "spread": spread,
                           "trials": raw.get("trials"), "threads": raw.get("threads"),
                           "row": raw})
            taken = True
        if not taken:
            stored.append({**common, "measurement": None, "row": raw})
    return stored


@dataclass(frozen=True)
class Figure:
    """A measurement's figure on the page (see the module docstring for the rule)."""

    value: float
    spread: dict | None
    runs: tuple[dict, ...]  # the rows it is the median of, oldest first

    @property
    def newest(self) -> dict:
        return self.runs[-1]


def current(rows: list[dict], measurement: str, kind: str) -> Figure | None:
    mine = sorted((r for r in rows if r.get("measurement") == measurement
                   and r["machine"]["kind"] == kind), key=lambda r: r["date"])
    if not mine:
        return None
    newest = mine[-1]
    day, command, code = newest["date"][:10], newest["command"], newest.get("commit")
    runs = tuple(r for r in mine if r["date"][:10] == day and r["command"] == command
                 and r.get("commit") == code)
    values = [r["value"] for r in runs]
    if len(runs) == 1:
        spread = newest.get("spread")
    else:
        spread = {"range": [min(values), max(values)]}
    return Figure(float(median(values)), spread, runs)


def evaluate(goal: Goal, figures: dict[str, Figure | None]) -> bool | None:
    """Met (True), not met (False), or None where a figure is missing."""
    verdicts = []
    for condition in goal.conditions:
        figure = figures.get(condition.measurement)
        if figure is None:
            return None
        verdicts.append(condition.holds(figure.value))
    return all(verdicts)
