"""Terminal controls and bidirectional overrides are stored and shown as visible escapes, never raw."""

from __future__ import annotations

import pytest

from intentloop.model import atomic_statement, minimal_excerpt, sanitize_label
from intentloop.model.printable import escape_controls

HOSTILE = {
    "osc52": "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07",  # a clipboard write
    "title": "\x1b]0;owned\x07",
    "clear": "\x1b[2J",
    "backspace": "abc\x08\x08\x08xyz",
    "del": "a\x7fb",
    "c1": "a\x9bb",  # a C1 CSI
    "rtl-override": "total \u202e1 = 0",
    "isolate": "x\u2066y\u2069z",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_stored_statement_label_and_excerpt_keep_no_raw_control(name: str) -> None:
    text = f"Keep {HOSTILE[name]} stable"
    for stored in (atomic_statement(text), sanitize_label(text), minimal_excerpt(text)):
        assert stored is not None and escape_controls(stored) == stored  # nothing left to escape
        assert "\\u" in stored  # the character is still there, visibly


def test_ordinary_text_and_tabs_are_left_as_they_are() -> None:
    text = "Café naïve — ✓ 日本語 \u200d emoji 👍🏽\tcolumns"
    assert escape_controls(text) == text
    assert atomic_statement(text) == text


def test_newlines_are_kept_only_when_asked() -> None:
    assert escape_controls("a\nb") == "a\\u000ab"
    assert escape_controls("a\n\x1bb", keep_newlines=True) == "a\n\\u001bb"
