"""The reference pages in docs/ cover the code's own tables, and every link between the docs resolves.

The tables are read from the code (error codes, exit codes, tool names, event types), so a code, tool or event added
without its documentation fails here. Each check runs on the real page and, beside it, on a page with a known gap, so
a parser that finds nothing cannot pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from intentloop.cli._exit import BUSY, ENVIRONMENT, NOT_FOUND, USAGE, exit_code_for
from intentloop.errors import CODES
from intentloop.model.events import EVENT_TYPES
from intentloop.service.args import TOOL_NAMES

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
REFERENCE_PAGES = ("TOOLS.md", "ERRORS.md", "EVENTS.md", "HOOKS.md", "BENCHMARK.md", "REDACTION.md")

_ROW_NAME = re.compile(r"^\| `([A-Za-z_]+)` \|", re.MULTILINE)
_HEADING = re.compile(r"^#+ (.*)$", re.MULTILINE)
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def row_names(text: str) -> set[str]:
    """The names in the first column of every table row that starts with a backticked name."""
    return set(_ROW_NAME.findall(text))


def section(text: str, heading: str) -> str:
    """The body of the section whose heading line is exactly ``heading``, up to the next heading of any level."""
    start = text.index(heading + "\n") + len(heading) + 1
    following = _HEADING.search(text, start)
    return text[start : following.start() if following else len(text)]


def exit_rows(text: str, heading: str = "## CLI exit codes") -> dict[int, set[str]]:
    """Exit code → error codes listed in its row of the CLI exit-code table under ``heading``."""
    rows: dict[int, set[str]] = {}
    for line in section(text, heading).splitlines():
        match = re.match(r"^\| (\d+) \|", line)
        if match:
            rows[int(match.group(1))] = set(re.findall(r"`([A-Z_]+)`", line))
    return rows


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {slug(heading) for heading in _HEADING.findall(page.read_text(encoding="utf-8"))}


def broken_links(page: Path) -> list[str]:
    """Relative links of ``page`` whose file or ``#anchor`` does not exist."""
    broken: list[str] = []
    for target in _LINK.findall(page.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        missing_anchor = bool(anchor) and linked.suffix == ".md" and linked.exists() and anchor not in _anchors(linked)
        if not linked.exists() or missing_anchor:
            broken.append(target)
    return broken


# ------------------------------------------------------------------------------------------------------ error codes
def test_errors_page_documents_exactly_the_codes_of_the_code() -> None:
    documented = row_names(_text("ERRORS.md"))
    assert documented == set(CODES)


def test_a_code_missing_from_the_page_is_noticed() -> None:
    gap = _text("ERRORS.md").replace("| `LOCK_TIMEOUT` |", "| LOCK_TIMEOUT |")
    assert set(CODES) - row_names(gap) == {"LOCK_TIMEOUT"}


def test_retryable_column_matches_the_code_table() -> None:
    retryable = set()
    for line in _text("ERRORS.md").splitlines():
        match = re.match(r"^\| `([A-Z_]+)` \| \*\*yes\*\* \|", line)
        if match:
            retryable.add(match.group(1))
    assert retryable == {code for code, flag in CODES.items() if flag}


@pytest.mark.parametrize(("page", "heading"), [("ERRORS.md", "## CLI exit codes"), ("CLI.md", "## Exit codes")])
def test_exit_code_table_matches_cli_exit(page: str, heading: str) -> None:
    rows = exit_rows(_text(page), heading)
    for exit_code in (USAGE, ENVIRONMENT, BUSY, NOT_FOUND):
        assert rows[exit_code] == {code for code in CODES if exit_code_for(code) == exit_code}, (page, exit_code)
    assert rows[USAGE] and rows[ENVIRONMENT] and rows[BUSY] and rows[NOT_FOUND]


def test_an_exit_code_row_that_drifts_is_noticed() -> None:
    drifted = _text("ERRORS.md").replace("`LOCK_COMPROMISED`, `LOCK_RELEASE_TIMEOUT`, ", "")
    assert exit_rows(drifted)[BUSY] != {code for code in CODES if exit_code_for(code) == BUSY}


# ------------------------------------------------------------------------------------------------------ tools, events
def tool_headings(text: str) -> list[str]:
    return re.findall(r"^### (intent_\w+)$", text, re.MULTILINE)


def test_tools_page_has_one_section_per_tool_in_published_order() -> None:
    assert tuple(tool_headings(_text("TOOLS.md"))) == TOOL_NAMES


def test_a_tool_missing_from_the_tools_page_is_noticed() -> None:
    gap = _text("TOOLS.md").replace("### intent_export\n", "### Export\n")
    assert "intent_export" not in tool_headings(gap)
    assert tuple(tool_headings(gap)) != TOOL_NAMES


def test_events_page_lists_exactly_the_event_types() -> None:
    table = section(_text("EVENTS.md"), "## Event types")
    assert row_names(table) == set(EVENT_TYPES)


def test_an_event_type_missing_from_the_events_page_is_noticed() -> None:
    table = section(_text("EVENTS.md"), "## Event types").replace("| `mode_set` |", "| mode_set |")
    assert set(EVENT_TYPES) - row_names(table) == {"mode_set"}


# ------------------------------------------------------------------------------------------------------ links, paths
@pytest.mark.parametrize("page", sorted([*DOCS.glob("*.md"), REPO / "README.md"]), ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_and_a_broken_anchor_are_noticed(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Real heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n[ok](other.md#real-heading) [self](#title) [gone](missing.md) [bad](other.md#no-such)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["missing.md", "other.md#no-such"]


@pytest.mark.parametrize("name", REFERENCE_PAGES)
def test_reference_pages_name_no_path_outside_the_repository(name: str) -> None:
    text = _text(name)
    assert "../" not in text
    assert "§" not in text  # no section citations of papers kept outside the repository
    for path in re.findall(r"`((?:intentloop|hooks|cli|recovery|tests|skills)/[\w/.\-]+\.\w+)`", text):
        assert (REPO / path).exists(), path


_MAP_ROW = re.compile(r"^\| `(intentloop(?:\.\w+)?)`[^|]*\| (.*) \|$", re.MULTILINE)


def module_map(text: str) -> dict[str, set[str]]:
    """Package → the module file names its row of ARCHITECTURE.md's module map names."""
    body = section(text, "## Module map")
    return {package: set(re.findall(r"`(\w+\.(?:py|json))`", cells)) for package, cells in _MAP_ROW.findall(body)}


def _modules() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "intentloop").rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py") or "__pycache__" in path.parts:
            continue
        package = ".".join(path.relative_to(REPO).parent.parts)
        found.setdefault(package, set()).add(path.name)
    return found


def test_the_module_map_names_every_module_in_its_package() -> None:
    mapped = module_map(_text("ARCHITECTURE.md"))
    modules = _modules()
    assert set(mapped) == set(modules)
    for package, names in modules.items():
        assert names <= mapped[package], (package, sorted(names - mapped[package]))
        assert {n for n in mapped[package] if n.endswith(".py")} <= names, (package, "names a module that is gone")
    gap = _text("ARCHITECTURE.md").replace("`_sessions.py`", "`_gone.py`")  # a page with a known gap
    assert "_sessions.py" not in module_map(gap)["intentloop.store"]


# ------------------------------------------------------------------------------------------------------ storage layout
_LAYOUT_ENTRY = re.compile(r"^( {0,2})(R/\S+|[a-z][\w.<>-]*(?:/\S*)?)(?: \(\+ \.1\))?(?:\s{2,}|$)")


def layout_entries(text: str, heading: str) -> set[str]:
    """The files and folders of the first storage-layout block (``R/projects/<project_id>/`` …) after ``heading``: a
    top-level entry as written, an entry inside one as ``parent + its first path component`` (``quarantine/``)."""
    body = text[text.index(heading + "\n") :]
    block = next(b for b in re.findall(r"```\n(.*?)```", body, re.S) if b.startswith("R/projects/"))
    entries: set[str] = set()
    parent = ""
    for line in block.splitlines():
        match = _LAYOUT_ENTRY.match(line)
        if match is None:
            continue  # a continuation line of a description
        indent, name = match.groups()
        if not indent:
            parent = name
            entries.add(name)
        else:
            head, slash, _rest = name.partition("/")
            entries.add(parent + head + slash)
    return entries


def test_the_readmes_storage_layout_is_the_reference_layout() -> None:
    readme = layout_entries((REPO / "README.md").read_text(encoding="utf-8"), "## Storage layout and guarantees")
    # sharing's own files are listed in docs/STORAGE.md (and docs/SYNC.md); the README names their folder
    reference = {
        e
        for e in layout_entries(_text("STORAGE.md"), "## Where data lives")
        if e == "R/share/" or not e.startswith("R/share/")
    }
    assert "R/projects/<project_id>/injected-context.json" in reference and "R/keys/ed25519.key" in reference
    assert readme == reference


def test_a_file_the_readmes_layout_leaves_out_is_noticed() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    gap = re.sub(r"\n  head\.sig [^\n]*", "", text, count=1)
    entries = layout_entries(gap, "## Storage layout and guarantees")
    assert "R/projects/<project_id>/head.sig" not in entries and "R/projects/<project_id>/ledger.jsonl" in entries
