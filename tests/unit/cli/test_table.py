"""The CLI's own tables and panels: widths, wrapping within the terminal's width, nothing lost, controls escaped, colour
only where asked, and read commands that draw them without importing rich."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from intentloop.cli._output import Output, key_value_table
from intentloop.cli._table import Cell, Panel, Table, _width_of, color_enabled

STATEMENT = "Keep the public API stable across every minor release, and say so in the changelog when it moves"


def _claims_table() -> Table:
    table = Table(title="Active claims (2)")
    table.add_column("claim", no_wrap=True)
    table.add_column("statement")
    table.add_column("count", justify="right")
    table.add_row("a1b2c3d4", STATEMENT, "7")
    table.add_row("e5f6a7b8", "Short one", "1234")
    return table


def _words(lines: list[str], skip: int) -> list[str]:
    return " ".join(lines[skip:]).split()


def test_unbounded_rows_are_one_line_each_with_columns_aligned() -> None:
    lines = _claims_table().render(None, color=False)
    assert lines[0] == "Active claims (2)"
    assert lines[2].strip() and set(lines[2].strip()) == {"─"}
    first, second = lines[3], lines[4]
    assert STATEMENT in first and len(lines) == 5  # never folded without a width
    assert first.index(STATEMENT) == second.index("Short one")  # left-justified column starts line up
    assert first.endswith(" 7") and second.endswith("1234") and len(first) == len(second)  # right-justified ends too


@pytest.mark.parametrize("width", [40, 50, 72])
def test_a_width_is_respected_and_every_word_is_kept_in_order(width: int) -> None:
    lines = _claims_table().render(width, color=False)
    assert max(_width_of(line) for line in lines) <= width
    assert len(lines) > 5  # control: the statement did wrap
    assert all(line.startswith(" a1b2c3d4 ") or not line.startswith(" a1") for line in lines)  # the id stays whole
    statement_words = [w for w in _words(lines, 3) if w not in {"a1b2c3d4", "7", "e5f6a7b8", "1234", "Short", "one"}]
    assert statement_words == STATEMENT.split()  # wrapped at spaces: no word cut while words fit


def test_a_word_longer_than_its_column_is_folded_not_cut() -> None:
    table = Table()
    table.add_column("id", no_wrap=True)
    table.add_column("path")
    long = "/srv/" + "deep/" * 30 + "file.log"
    table.add_row("x", long)
    lines = table.render(30, color=False)
    assert max(len(line) for line in lines) <= 30
    pieces = [line[len(" x ") :].strip() for line in lines[2:]]  # the header and its rule come first
    assert "".join(pieces) == long


def test_a_no_wrap_column_keeps_its_width_when_the_table_must_narrow() -> None:
    table = Table()
    table.add_column("since", no_wrap=True)
    table.add_column("text")
    table.add_row("2026-12-03T11:56:38.000Z", STATEMENT)
    lines = table.render(50, color=False)
    assert "2026-12-03T11:56:38.000Z" in lines[2]
    assert max(len(line) for line in lines) <= 50


def test_terminal_controls_and_bidi_overrides_are_escaped_in_every_part() -> None:
    table = Table(title="t\x1b[2J")
    table.add_column("h\x07")
    table.add_row("clip \x1b]52;c;ZXZpbA==\x07 rtl \u202e done")
    panel = Panel("body \x9b31m", title="p\u2066")
    text = "\n".join([*table.render(None, color=False), *panel.render(None, color=False)])
    assert "\\u001b]52" in text and "\\u202e" in text and "\\u009b" in text and "\\u2066" in text
    assert not any(ord(ch) < 32 and ch != "\n" for ch in text)
    assert "\u202e" not in text and "\x9b" not in text
    assert "clip" in text and "done" in text  # control: the text itself is printed


def test_wide_characters_count_two_cells() -> None:
    table = Table()
    table.add_column("a")
    table.add_column("b", no_wrap=True)
    table.add_row("界" * 30, "x")
    lines = table.render(24, color=False)
    assert max(_width_of(line) for line in lines) <= 24
    assert "".join(line.split()[0] for line in lines if "界" in line) == "界" * 30
    assert _width_of("界a\u0301") == 3  # a combining mark takes no cell


def test_colour_only_when_asked() -> None:
    table = Table(title="t")
    table.add_column("state")
    table.add_row(Cell("damaged", style="bold red"))
    assert not any("\x1b" in line for line in table.render(None, color=False))
    coloured = table.render(None, color=True)
    assert any("\x1b[1;31mdamaged\x1b[0m" in line for line in coloured)


def test_colour_is_off_for_a_pipe_and_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    read, write = os.pipe()
    try:
        assert color_enabled(write) is False
    finally:
        os.close(read)
        os.close(write)
    try:
        leader, follower = os.openpty()
    except OSError:  # pragma: no cover - every CI machine has ptys; say so if one does not
        pytest.fail("no pseudo-terminal available to check colour on a terminal")
    try:
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setenv("TERM", "xterm")
        assert color_enabled(follower) is True  # control: a terminal gets colour
        monkeypatch.setenv("NO_COLOR", "1")
        assert color_enabled(follower) is False
    finally:
        os.close(leader)
        os.close(follower)


def test_a_row_of_the_wrong_length_is_refused() -> None:
    table = Table()
    table.add_column("a")
    table.add_row("one")  # control
    with pytest.raises(ValueError, match="2 cells"):
        table.add_row("one", "two")


def test_a_panel_frames_its_text_within_the_width() -> None:
    lines = Panel("first line\n" + "word " * 30, title="ctx").render(40, color=False)
    assert lines[0].startswith("╭─ ctx ") and lines[-1].startswith("╰")
    assert len({len(line) for line in lines}) == 1 and len(lines[0]) <= 40
    assert " ".join(line.strip("│ ") for line in lines[1:-1]).split() == ["first", "line", *["word"] * 30]


def test_output_draws_tables_in_columns_width(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "44")
    Output("status", json_mode=False).show(key_value_table("About", [("statement", STATEMENT)]))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "About" and max(len(line) for line in lines) <= 44
    monkeypatch.delenv("COLUMNS")
    Output("status", json_mode=False).show(key_value_table("About", [("statement", STATEMENT)]))
    assert STATEMENT in capsys.readouterr().out  # control: piped without COLUMNS, never folded
    Output("status", json_mode=True).show(key_value_table("About", [("statement", STATEMENT)]))
    assert capsys.readouterr().out == ""  # JSON mode prints no table


_PROBE = (
    "import atexit, sys\n"
    "report = sys.argv[1]\n"
    "atexit.register(lambda: open(report, 'w').write(' '.join(m for m in ('rich',) if m in sys.modules)))\n"
    "if sys.argv[2] == 'preload':\n"
    "    import rich.table\n"
    "sys.argv = ['intentloop', 'status']\n"
    "from intentloop.cli.entry import main\n"
    "main()\n"
)


@pytest.mark.parametrize("preload", [False, True])
def test_a_read_command_draws_its_tables_without_importing_rich(tmp_path: Path, preload: bool) -> None:
    report = tmp_path / "report.txt"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(report), "preload" if preload else "-"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"INTENT_LOOP_CATALOG": "off", "PATH": "/usr/bin:/bin", "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")},
    )
    assert done.returncode == 0, done.stderr
    assert "intentloop status" in done.stdout and "data root" in done.stdout  # the table was drawn
    assert report.read_text() == ("rich" if preload else "")  # preload: the probe does see rich when it is there
