"""Recall on a held-out set: 68 vendor formats as gitleaks' rules document them
(``tests/fixtures/redaction_heldout.json``), written after the rules and not tuned against (no rule was changed for
it), each in the four surroundings of the corpus. The own rules alone here; with the catalog in
``test_redaction_catalog.py``. Measured 2026-12-02: the own rules 65 of 68 (95.6 %), both layers 67 of 68 (98.5 %);
docs/REDACTION.md, "Held-out formats".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from intentloop.model import redact

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the corpus helpers of the sibling tests

from test_redaction_recall import SURROUNDINGS

HELDOUT = Path(__file__).resolve().parents[2] / "fixtures" / "redaction_heldout.json"
#: Floors at the measured figures: formats caught in every surrounding.
HELDOUT_MIN_OWN = 65
HELDOUT_MIN_BOTH = 67


def load_heldout() -> list[dict[str, str]]:
    """The formats, example and secret decoded (stored reversed, as the corpus)."""
    doc = json.loads(HELDOUT.read_text(encoding="utf-8"))
    return [{**e, "example": e["example"][::-1], "secret": e["secret"][::-1]} for e in doc["formats"]]


def missed_formats(entries: list[dict[str, str]]) -> list[str]:
    """The formats whose secret survives in at least one surrounding."""
    return [
        e["format"]
        for e in entries
        if any(e["secret"] in redact(wrap(e["example"])).text for wrap in SURROUNDINGS.values())
    ]


def test_the_set_is_large_and_each_line_holds_its_secret() -> None:
    entries = load_heldout()
    assert len(entries) >= 50
    assert len({e["format"] for e in entries}) == len(entries)
    assert all(len(e["secret"]) >= 16 and e["secret"] in e["example"] for e in entries)


def test_recall_of_the_own_rules() -> None:
    entries = load_heldout()
    assert len(entries) - len(missed_formats(entries)) >= HELDOUT_MIN_OWN
