"""Text that shows as what it says: terminal controls and bidirectional overrides written as visible escapes.

Why escape rather than refuse: a statement, label or excerpt keeps every character the user or agent sent, readable;
only the ones that would act on a terminal or reorder what a reader sees lose that power. Applied where text is stored
(``intentloop.model.redaction``) and where stored text leaves intentloop (the CLI's tables and Markdown, the hook's
context and ``systemMessage``), so a ledger written before this rule is harmless too.
"""

from __future__ import annotations

import re

from intentloop.model._lazyre import LazyPattern

#: C0 controls but TAB, DEL, C1 controls, and the bidirectional marks, embeddings, overrides and isolates
#: (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069).
_OTHERS = "\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"
_CONTROL = LazyPattern(f"[\\n{_OTHERS}]")
_CONTROL_BUT_NEWLINE = LazyPattern(f"[{_OTHERS}]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every terminal control and bidirectional-override character written as ``\\uXXXX``, so it can
    neither drive a terminal (an OSC 52 clipboard write, a CSI screen clear, a window title) nor reorder what a reader
    sees (U+202E). ``keep_newlines``: a text of several lines keeps its line feeds."""
    return (_CONTROL_BUT_NEWLINE if keep_newlines else _CONTROL).sub(_escape, text)


__all__ = ["escape_controls"]
