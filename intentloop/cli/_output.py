"""How every command speaks: one JSON object on stdout with ``--json``, plain tables otherwise (``cli/_table.py``),
errors with a remedy. Progress is ``cli/_progress.py``'s one line on stderr, on a terminal only.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from intentloop import SCHEMA_VERSION
from intentloop.cli._exit import OK, exit_code_for, remedy_for
from intentloop.cli._progress import Tick, phase
from intentloop.cli._table import Cell, Renderable, Table, color_enabled, styled
from intentloop.errors import IntentLoopError
from intentloop.model.printable import escape_controls


class Output:
    """The output channel of one command run.

    Args:
        command: the command's name as typed (``"verify"``, ``"recover export"``), echoed in JSON output.
        json_mode: print one machine-readable JSON object instead of tables.
    """

    def __init__(self, command: str, *, json_mode: bool) -> None:
        self.command = command
        self.json_mode = json_mode
        self._layout: tuple[int | None, bool] | None = None

    # -- JSON ------------------------------------------------------------------------------------------------------

    def json_object(self, fields: dict[str, Any], *, exit_code: int, error: IntentLoopError | None = None) -> None:
        """Print the command's one JSON object: ``ok``, ``command``, ``exit_code``, the fields, and ``error``."""
        head: dict[str, Any] = {
            "ok": exit_code == OK,
            "command": self.command,
            "exit_code": exit_code,
            "schema_version": SCHEMA_VERSION,
        }
        body = {**head, **fields}
        if error is not None:
            body["error"] = error_dict(error, self.command)
        sys.stdout.write(json.dumps(body, ensure_ascii=False, indent=2, sort_keys=False) + "\n")
        sys.stdout.flush()

    # -- humans ----------------------------------------------------------------------------------------------------

    def _width_and_color(self) -> tuple[int | None, bool]:
        if self._layout is None:
            self._layout = (_width(), color_enabled(_fileno(sys.stdout)))
        return self._layout

    def show(self, *renderables: Renderable) -> None:
        """Print tables and panels on stdout, laid out in the terminal's width (``COLUMNS``; piped: unbounded);
        nothing in JSON mode."""
        if self.json_mode:
            return
        width, color = self._width_and_color()
        for renderable in renderables:
            sys.stdout.write("".join(line + "\n" for line in renderable.render(width, color=color)))
        sys.stdout.flush()

    def line(self, text: str, *, style: str = "") -> None:
        """Print a line of text (its terminal controls escaped, never wrapped) on stdout; nothing in JSON mode."""
        if not self.json_mode:
            sys.stdout.write(styled(escape_controls(text, keep_newlines=True), style, color=self._width_and_color()[1]))
            sys.stdout.write("\n")
            sys.stdout.flush()

    def guard(self, body: Callable[[], int]) -> int:
        """Run a command body; an :class:`IntentLoopError` it raises is reported here and becomes the exit code."""
        try:
            return body()
        except IntentLoopError as exc:
            return self.failure(exc)

    def failure(self, error: IntentLoopError, *, fields: dict[str, Any] | None = None) -> int:
        """Report ``error`` (JSON on stdout, or code and remedy on stderr) and return its exit code."""
        code = exit_code_for(error.code)
        if self.json_mode:
            self.json_object(fields or {}, exit_code=code, error=error)
        else:
            print_error(error, self.command)
        return code

    @contextmanager
    def progress(self, label: str, total: int | None = None) -> Iterator[Tick]:
        """Name the phase the command is in (``cli/_progress.py`` shows it on a terminal once the command has run for
        half a second); the returned tick counts its steps toward ``total``."""
        with phase(label, total) as tick:
            yield tick


def error_dict(error: IntentLoopError, command: str | None = None) -> dict[str, Any]:
    """``{code, message, retryable, remedy}``: the MCP envelope's error plus the CLI's remedy (for ``command``)."""
    return {**error.to_dict(), "remedy": remedy_for(error.code, _known(command))}


def print_error(error: IntentLoopError, command: str | None = None) -> None:
    """``error[CODE]: message`` and ``remedy: ...`` on stderr (plain text, so it is cheap and greppable)."""
    sys.stderr.write(f"error[{error.code}]: {error.message}\n  remedy: {remedy_for(error.code, _known(command))}\n")
    sys.stderr.flush()


def _known(command: str | None) -> str | None:
    """``command`` when it is one (``"intentloop"`` names the program itself, not a command)."""
    return command if command and command != "intentloop" else None


def key_value_table(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    """A two-column table (field, value) with a title."""
    table = Table(title=title, show_header=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")
    for key, value in rows:
        table.add_row(Cell(key), Cell(value))
    return table


def _width() -> int | None:
    """``COLUMNS`` when it gives a width, else the terminal's; piped output without ``COLUMNS`` has no width to respect
    and is never hard-wrapped (``None``)."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    fd = _fileno(sys.stdout)
    try:
        return os.get_terminal_size(fd).columns if fd >= 0 and os.isatty(fd) else None
    except OSError:
        return None


def _fileno(stream: Any) -> int:
    try:
        return int(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return -1


__all__ = ["Output", "error_dict", "key_value_table", "print_error"]
