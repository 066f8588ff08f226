"""Every relative link in the docs resolves, and every ADR the repository cites exists.

Checked:

1. Each relative link of README.md, CHANGELOG.md and every Markdown file under docs/ (inline
   ``[text](target)``, images, reference definitions ``[id]: target``) names a file or folder
   that exists; where it has an anchor (``page.md#anchor``, ``#anchor``) the page has a heading
   with that GitHub slug or an ``<a id="...">``. Links inside code (fenced blocks, backticks) are
   examples, not links, and are skipped, as are URLs with a scheme.
2. Source files, docs and tests cite ADRs as ``docs/adr/NNNN`` (with or without the rest of the
   file name), ``ADR NNNN``, ``ADR-NNNN`` or ``ADR 0189-0192``: each cited number is an ADR's,
   and a cited file name is that ADR's file. ``docs/fmm-tuning-log.md#NNNN`` names an entry of
   the log.
3. docs/adr holds one file per number, each with a status line, and its README lists them all.
4. The pages that state the present (README.md and docs/, but not the ADRs and the FMM tuning
   log, which are history) name only repository paths that exist: a path such as
   ``engine/runner.py`` or ``native/kernels/`` in the text, or ``module.attribute``, and a
   source file named alone in backticks (such as ``_scene.py``) is some file of the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ADR_DIR = ROOT / "docs" / "adr"

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")

# Folders whose text files may cite ADRs; build outputs and stored results are not read.
CITING_FOLDERS = ("engine", "app", "bench", "native", "python", "scripts", "tests", "docs")
CITING_SUFFIXES = {".py", ".pyi", ".cpp", ".hpp", ".h", ".cl", ".cu", ".glsl", ".vert", ".frag",
                   ".comp", ".geom", ".sh", ".md", ".toml", ".txt", ".cfg", ".js", ".html", ".css"}
ADR_PATH = re.compile(r"docs/adr/(\d{4})([A-Za-z0-9._-]*)")
ADR_NAMED = re.compile(r"\bADRs?[- ](\d{4})(?:\s*(?:-|–|to)\s*(\d{4}))?")
LOG_ENTRY = re.compile(r"docs/fmm-tuning-log\.md#([A-Za-z0-9_-]+)")
TOP_FOLDERS = ("docs", "engine", "app", "bench", "native", "python", "assets", "scripts", "tests")
REPO_PATH = re.compile(r"(?<![\w/.-])((?:%s)/[\w./<>*-]*[\w>*]/?)" % "|".join(TOP_FOLDERS))
SOURCE_NAME = re.compile(r"`([\w.-]+\.(?:py|pyi|cpp|hpp|h|cl|glsl|vert|frag|js))`")
# A placeholder in a path (docs/results/<kind>.jsonl, bench/NAME.py) names no file.
PLACEHOLDER = re.compile(r"[<*]|NAME")


def markdown_files(root: Path = ROOT) -> list[Path]:
    files = [root / name for name in ("README.md", "CHANGELOG.md") if (root / name).is_file()]
    return files + sorted((root / "docs").rglob("*.md"))


def prose_lines(text: str):
    """(line number, line) outside fenced code blocks, with code spans blanked."""
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, CODE_SPAN.sub("", line)


def links(text: str):
    """(line number, target) of every link in Markdown ``text``."""
    for number, line in prose_lines(text):
        for match in INLINE_LINK.finditer(line):
            yield number, match.group(1)
        definition = REFERENCE_DEFINITION.match(line)
        if definition:
            yield number, definition.group(1)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: links reduced to their text, lower case, punctuation
    other than '-' and '_' dropped, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page offers: its headings' slugs (repeats numbered as GitHub numbers them)
    and its explicit ``<a id>`` / ``<a name>`` anchors."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading:
            slug = github_slug(heading.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(files: list[Path], root: Path = ROOT) -> list[str]:
    """'file:line: target (why)' for every relative link in ``files`` that does not resolve."""
    problems = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for number, target in links(text):
            if SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            where = f"{path.relative_to(root)}:{number}: {target}"
            destination = (path.parent / file_part).resolve() if file_part else path
            if not destination.exists():
                problems.append(f"{where} (no such file)")
                continue
            if anchor and destination.suffix == ".md" and destination.is_file():
                if anchor not in anchors(destination.read_text(encoding="utf-8")):
                    problems.append(f"{where} (no such anchor)")
    return problems


def adr_files(adr_dir: Path = ADR_DIR) -> dict[str, list[Path]]:
    """ADR number -> its files (more than one is a collision)."""
    numbered: dict[str, list[Path]] = {}
    for path in sorted(adr_dir.glob("[0-9][0-9][0-9][0-9]-*.md")):
        numbered.setdefault(path.name[:4], []).append(path)
    return numbered


def citing_files(root: Path = ROOT):
    for folder in CITING_FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            # This file's own examples cite missing ADRs on purpose.
            if (path.is_file() and path.suffix in CITING_SUFFIXES and "__pycache__" not in path.parts
                    and path != Path(__file__).resolve()):
                yield path
    yield from (root / name for name in ("README.md", "CHANGELOG.md") if (root / name).is_file())


def broken_adr_citations(files, root: Path = ROOT) -> list[str]:
    """'file:line: citation (why)' for every ADR or tuning-log citation that names nothing."""
    numbered = adr_files(root / "docs" / "adr")
    log = root / "docs" / "fmm-tuning-log.md"
    log_anchors = anchors(log.read_text(encoding="utf-8")) if log.is_file() else set()
    problems = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            where = f"{path.relative_to(root)}:{number}"
            for match in ADR_PATH.finditer(line):
                adr, rest = match.group(1), match.group(2).rstrip(".")
                if adr not in numbered:
                    problems.append(f"{where}: {match.group(0)} (no ADR {adr})")
                elif rest.startswith("-") and not any(
                        p.name == adr + rest or p.stem == adr + rest for p in numbered[adr]):
                    problems.append(f"{where}: {match.group(0)} (ADR {adr} is {numbered[adr][0].name})")
            for match in ADR_NAMED.finditer(line):
                for adr in filter(None, match.groups()):
                    if adr not in numbered:
                        problems.append(f"{where}: {match.group(0)} (no ADR {adr})")
            for match in LOG_ENTRY.finditer(line):
                if match.group(1) not in log_anchors:
                    problems.append(f"{where}: {match.group(0)} (no such entry)")
    return problems


def present_tense_pages(root: Path = ROOT) -> list[Path]:
    return [p for p in markdown_files(root)
            if "adr" not in p.relative_to(root).parts and p.name != "fmm-tuning-log.md"
            and p.name != "CHANGELOG.md" and "report" not in p.relative_to(root).parts]


def missing_paths(files: list[Path], root: Path = ROOT) -> list[str]:
    """'file:line: path' for every repository path a page names that exists neither from the
    repository's root nor from the page's folder. ``module.attribute`` counts as its module,
    and an ADR's number (``docs/adr/0090``) as its file."""
    problems = []
    file_names = {path.name for folder in TOP_FOLDERS if (root / folder).is_dir()
                  for path in (root / folder).rglob("*") if "__pycache__" not in path.parts}
    for page in files:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            for match in SOURCE_NAME.finditer(line):
                if match.group(1) not in file_names:
                    problems.append(f"{page.relative_to(root)}:{number}: {match.group(1)}")
            for match in REPO_PATH.finditer(line):
                path = match.group(1)
                if PLACEHOLDER.search(path):
                    continue
                candidates = [root / path, page.parent / path]
                if not any(c.exists() or c.with_suffix(".py").exists()
                           or (c.suffix and c.with_suffix("").with_suffix(".py").exists())
                           or any(c.parent.glob(c.name + "-*")) for c in candidates):
                    problems.append(f"{page.relative_to(root)}:{number}: {path}")
    return problems


def test_every_relative_link_in_the_docs_resolves():
    assert broken_links(markdown_files()) == []


def test_every_repository_path_the_pages_name_exists():
    assert missing_paths(present_tense_pages()) == []


def test_every_cited_adr_exists():
    assert broken_adr_citations(citing_files()) == []


def test_each_adr_number_is_used_once():
    assert {n: [p.name for p in ps] for n, ps in adr_files().items() if len(ps) > 1} == {}


def test_every_adr_states_its_status():
    missing = [p.name for ps in adr_files().values() for p in ps
               if not re.search(r"^Status: \S", p.read_text(encoding="utf-8"), re.MULTILINE)]
    assert missing == []


def test_the_adr_index_lists_every_adr():
    index = (ADR_DIR / "README.md").read_text(encoding="utf-8")
    listed = {target for _, target in links(index)}
    assert [p.name for ps in adr_files().values() for p in ps if p.name not in listed] == []


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "docs" / "adr").mkdir(parents=True)
    (tmp_path / "docs" / "adr" / "0001-a-decision.md").write_text("# 0001: a decision\n\nStatus: accepted\n")
    (tmp_path / "docs" / "page.md").write_text("# A page\n\n## Two words\n\n<a id=\"0165\"></a>\n")
    return tmp_path


@pytest.mark.parametrize("line, broken", [
    ("[ok](page.md)", False),
    ("[ok](page.md#two-words)", False),
    ("[ok](page.md#0165)", False),
    ("[ok](adr/)", False),
    ("[ok](adr/0001-a-decision.md)", False),
    ("[ok](https://example.org/missing.md)", False),
    ("`[example](missing.md)` in a code span", False),
    ("[missing](missing.md)", True),
    ("![missing image](missing.png)", True),
    ("[missing anchor](page.md#three-words)", True),
    ("[missing](adr/0002-another.md)", True),
    ("[ref]: ../nowhere.md", True),
])
def test_the_link_check_fails_on_a_broken_link(tree, line, broken):
    doc = tree / "docs" / "doc.md"
    doc.write_text(f"# Doc\n\n{line}\n")
    assert bool(broken_links([doc], root=tree)) == broken


@pytest.mark.parametrize("line, broken", [
    ("see docs/adr/0001", False),
    ("see docs/adr/0001-a-decision.md", False),
    ("see ADR-0001, ADR 0001", False),
    ("see docs/adr/0002", True),
    ("see docs/adr/0001-another-name.md", True),
    ("see ADR 0001-0003", True),
    ("see ADR-0165", True),
    ("see docs/fmm-tuning-log.md#0165", True),
])
def test_the_adr_check_fails_on_a_missing_adr(tree, line, broken):
    source = tree / "engine" / "module.py"
    source.parent.mkdir()
    source.write_text(f"# {line}\n")
    assert bool(broken_adr_citations([source], root=tree)) == broken


@pytest.mark.parametrize("line, missing", [
    ("the runner (`engine/runner.py`) and `engine/recording/`", False),
    ("`engine/recording/_player.Player` plays it", False),
    ("one row a run in docs/results/<kind>.jsonl, bench/NAME.py", False),
    ("docs/page.md, relative to the root", False),
    ("the limits of docs/adr/0001", False),
    ("the limits of docs/adr/0002", True),
    ("`engine/recording/_resume.py`", True),
    ("native/kernels/gone.cl", True),
    ("the solver thread (`runner.py`), its player (`_player.py`)", False),
    ("errors become exit codes in `_errors.py`", True),
])
def test_the_path_check_fails_on_a_path_that_is_gone(tree, line, missing):
    (tree / "engine" / "recording").mkdir(parents=True)
    (tree / "engine" / "runner.py").write_text("")
    (tree / "engine" / "recording" / "_player.py").write_text("")
    page = tree / "docs" / "guide.md"
    page.write_text(f"# Guide\n\n{line}\n")
    assert bool(missing_paths([page], root=tree)) == missing
