"""The CLI's tables and framed blocks, drawn as plain lines: columns padded to their widths, wrapped to the terminal's.

Why our own and not rich's: a read command printing a 50-row table spent ~100 ms of its ~170 ms above
``intentloop --version`` importing rich and laying the table out (docs/BENCHMARK.md, "CLI reads"); these tables need
none of rich's generality. Every cell has its terminal controls escaped, and colour is drawn only on a terminal.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from typing import Literal, Protocol

from intentloop.model.printable import escape_controls

#: SGR codes of the few styles the CLI uses (``"bold red"`` is two words, two codes).
_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
_RULE = "─"


class Renderable(Protocol):
    """What ``Output.show`` prints: anything that lays itself out in a width (``None``: as wide as it needs)."""

    def render(self, width: int | None, *, color: bool) -> list[str]: ...


class Cell:
    """A cell's text and its style (``"bold red"``; ``""`` for none)."""

    __slots__ = ("style", "text")

    def __init__(self, text: str, style: str = "") -> None:
        self.text = text
        self.style = style


class _Column:
    __slots__ = ("header", "justify", "max_width", "min_width", "style", "wrap")

    def __init__(
        self,
        header: str,
        justify: Literal["left", "right"],
        wrap: bool,
        style: str,
        min_width: int,
        max_width: int | None,
    ) -> None:
        self.header = header
        self.justify = justify
        self.wrap = wrap
        self.style = style
        self.min_width = min_width
        self.max_width = max_width


class Table:
    """Rows under a header and a rule, or (``show_header=False``) field/value rows; a title line above.

    Columns that may wrap give way, widest first, when the table is wider than the width it is drawn in; a column that
    may not keeps its width. Text wraps at spaces, and a word longer than its column is folded.

    Why plain classes and not dataclasses: importing ``dataclasses`` and building four took ~18 ms, a tenth of
    ``intentloop --version``.
    """

    def __init__(self, title: str | None = None, *, show_header: bool = True) -> None:
        self.title = title
        self.show_header = show_header
        self._columns: list[_Column] = []
        self._rows: list[list[Cell]] = []

    def add_column(
        self,
        header: str,
        *,
        justify: Literal["left", "right"] = "left",
        no_wrap: bool = False,
        style: str = "",
        min_width: int = 1,
        max_width: int | None = None,
    ) -> None:
        self._columns.append(_Column(header, justify, not no_wrap, style, min_width, max_width))

    def add_row(self, *cells: str | Cell) -> None:
        if len(cells) != len(self._columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self._columns)} columns")
        self._rows.append([c if isinstance(c, Cell) else Cell(c) for c in cells])

    def render(self, width: int | None, *, color: bool) -> list[str]:
        rows = [[_clean(cell.text) for cell in row] for row in self._rows]
        headers = [_clean(c.header) for c in self._columns] if self.show_header else None
        widths = _fit(self._columns, [*([headers] if headers else []), *rows], width)
        lines = [] if self.title is None else [styled(_clean(self.title), "bold", color=color)]
        if headers is not None:
            lines += _row_lines([Cell(h, "bold") for h in headers], self._columns, widths, color)
            lines.append(" " + _RULE * (sum(widths) + 2 * len(widths) - 2))
        for cells, texts in zip(self._rows, rows, strict=True):
            styles = [cell.style or col.style for cell, col in zip(cells, self._columns, strict=True)]
            shown = [Cell(text, style) for text, style in zip(texts, styles, strict=True)]
            lines += _row_lines(shown, self._columns, widths, color)
        return lines


class Panel:
    """A block of text in a frame with a title, as wide as its longest line (or the width it is drawn in)."""

    def __init__(self, text: str, *, title: str = "") -> None:
        self.text = text
        self.title = title

    def render(self, width: int | None, *, color: bool) -> list[str]:
        inner = max((_width_of(line) for line in _clean(self.text).split("\n")), default=0)
        inner = max(inner, _width_of(self.title) + 2)
        if width is not None:
            inner = max(1, min(inner, width - 4))
        body = [part for line in _clean(self.text).split("\n") for part in _wrap(line, inner)]
        title = f" {_clean(self.title)} " if self.title else ""
        top = "╭─" + title + "─" * max(0, inner + 1 - _width_of(title)) + "╮"
        lines = [top]
        lines += ["│ " + part + " " * (inner - _width_of(part)) + " │" for part in body]
        lines.append("╰" + "─" * (inner + 2) + "╯")
        return lines


def color_enabled(stream_fd: int) -> bool:
    """Colour only on a terminal, and never with ``NO_COLOR`` set or ``TERM=dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return os.isatty(stream_fd)
    except OSError:
        return False


def styled(text: str, style: str, *, color: bool) -> str:
    """``text`` in ``style`` when colour is on, else as it is."""
    codes = [_SGR[word] for word in style.split() if word in _SGR]
    if not color or not codes or not text:
        return text
    return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"


def _clean(text: str) -> str:
    return escape_controls(text.expandtabs(4), keep_newlines=True)


def _width_of(text: str) -> int:
    """Terminal cells ``text`` takes: wide East Asian characters take two, combining marks none."""
    if text.isascii():
        return len(text)
    return sum(_char_width(ch) for ch in text)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _natural(text: str) -> int:
    return max((_width_of(line) for line in text.split("\n")), default=0)


def _fit(columns: Sequence[_Column], rows: list[list[str]], width: int | None) -> list[int]:
    """Each column's width: its widest cell (within its bounds); when the whole is wider than ``width``, the wrapping
    columns are capped, the widest first, at the largest cap that fits: first without breaking a word, and only when
    that cannot fit, down to each column's minimum."""
    natural = []
    words = []
    for i, col in enumerate(columns):
        w = max((_natural(row[i]) for row in rows), default=0)
        if col.max_width is not None:
            w = min(w, col.max_width)
        natural.append(max(w, col.min_width if col.wrap else 0, 1))
        longest = max((_width_of(word) for row in rows for word in row[i].split()), default=1)
        words.append(min(natural[-1], max(longest, col.min_width)))
    if width is None:
        return natural
    room = width - 2 * len(columns)
    if sum(natural) <= room:
        return natural
    least = [c.min_width for c in columns]
    for floor in (words, least):
        widths = _capped(natural, floor, columns, room)
        if sum(widths) <= room:
            return widths
    return widths


def _capped(natural: list[int], floor: list[int], columns: Sequence[_Column], room: int) -> list[int]:
    """The widths under the largest cap (applied to the wrapping columns, none below its floor) that fit ``room``,
    else under the smallest cap."""

    def under(cap: int) -> list[int]:
        return [max(min(n, cap), min(f, n)) if c.wrap else n for n, f, c in zip(natural, floor, columns, strict=True)]

    low, high = 1, max(natural)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(under(mid)) <= room:
            low = mid
        else:
            high = mid - 1
    return under(low)


def _row_lines(cells: Sequence[Cell], columns: Sequence[_Column], widths: Sequence[int], color: bool) -> list[str]:
    parts = [
        [p for line in cell.text.split("\n") for p in (_wrap(line, w) if col.wrap else [line])]
        for cell, col, w in zip(cells, columns, widths, strict=True)
    ]
    height = max((len(p) for p in parts), default=1)
    out = []
    for i in range(height):
        pieces = []
        for cell_parts, cell, col, w in zip(parts, cells, columns, widths, strict=True):
            text = cell_parts[i] if i < len(cell_parts) else ""
            pad = " " * max(0, w - _width_of(text))
            text = styled(text, cell.style, color=color)
            pieces.append(" " + (pad + text if col.justify == "right" else text + pad) + " ")
        out.append("".join(pieces).rstrip())
    return out


def _wrap(line: str, width: int) -> list[str]:
    """``line`` in pieces of at most ``width`` cells: broken at spaces, a longer word folded."""
    if _width_of(line) <= width:
        return [line]
    pieces: list[str] = []
    current = ""
    for word in line.split(" "):
        candidate = f"{current} {word}" if current else word
        if _width_of(candidate) <= width:
            current = candidate
            continue
        if current:
            pieces.append(current)
        while _width_of(word) > width:
            head, word = _split_at(word, width)
            pieces.append(head)
        current = word
    pieces.append(current)
    return pieces


def _split_at(word: str, width: int) -> tuple[str, str]:
    taken = 0
    for i, ch in enumerate(word):
        taken += _char_width(ch)
        if taken > width:
            return word[: max(i, 1)], word[max(i, 1) :]
    return word, ""


__all__ = ["Cell", "Panel", "Renderable", "Table", "color_enabled", "styled"]
