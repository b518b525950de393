"""How every command speaks: one JSON object on stdout with ``--json``, rich tables otherwise, errors with a remedy.

rich is imported only when a human-readable table is actually drawn, so ``--json`` runs and error paths stay cheap.
Progress is ``cli/_progress.py``'s one line on stderr, on a terminal only.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from intentloop import SCHEMA_VERSION
from intentloop.cli._exit import OK, exit_code_for, remedy_for
from intentloop.cli._progress import Tick, phase
from intentloop.errors import IntentLoopError

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

#: The width of piped output when ``COLUMNS`` does not give one: wide enough that nothing is ever folded (a diff, a
#: path, an id); tables are as wide as their contents, not as this.
_UNWRAPPED_WIDTH = 100_000


class Output:
    """The output channel of one command run.

    Args:
        command: the command's name as typed (``"verify"``, ``"recover export"``), echoed in JSON output.
        json_mode: print one machine-readable JSON object instead of tables.
    """

    def __init__(self, command: str, *, json_mode: bool) -> None:
        self.command = command
        self.json_mode = json_mode
        self._stdout: Console | None = None

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

    @property
    def console(self) -> Console:
        """A rich console on stdout (colours only on a terminal)."""
        if self._stdout is None:
            from rich.console import Console

            self._stdout = Console(highlight=False, soft_wrap=True, width=_width())
        return self._stdout

    def show(self, *renderables: RenderableType) -> None:
        """Print rich renderables (tables, text) on stdout; nothing in JSON mode."""
        if not self.json_mode:
            self.console.print(*renderables)

    def line(self, text: str, *, style: str | None = None) -> None:
        """Print one line of plain text (no markup is interpreted) on stdout; nothing in JSON mode."""
        if not self.json_mode:
            self.console.print(text, style=style, markup=False)

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
    """A two-column rich table (field, value) with a title."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, show_header=False, title_justify="left", expand=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for key, value in rows:
        table.add_row(Text(key), Text(value))
    return table


def _width() -> int | None:
    """``None`` (rich then uses ``COLUMNS``, else the terminal's width) on a terminal or with ``COLUMNS`` set; piped
    output without ``COLUMNS`` has no width to respect and is never hard-wrapped."""
    if _is_terminal(sys.stdout) or os.environ.get("COLUMNS", "").strip().isdigit():
        return None
    return _UNWRAPPED_WIDTH


def _is_terminal(stream: Any) -> bool:
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, ValueError, OSError):
        return False


__all__ = ["Output", "error_dict", "key_value_table", "print_error"]
