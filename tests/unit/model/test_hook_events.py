"""The hook event table carries each event's behaviour; docs/HOOKS.md's observation table says the same."""

from __future__ import annotations

import re
from pathlib import Path

from intentloop.model.hook_events import HOOK_EVENT_BY_NAME, HOOK_EVENTS

HOOKS_MD = Path(__file__).resolve().parents[3] / "docs" / "HOOKS.md"


def _documented_observations() -> dict[str, tuple[str, str, str, str, str | None]]:
    text = HOOKS_MD.read_text(encoding="utf-8")
    head = text.index("| event | event type | actor | candidate type | source kind | text counted |")
    rows: dict[str, tuple[str, str, str, str, str | None]] = {}
    for line in text[head:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        events, *cells = (cell.strip() for cell in line.strip("|").split("|"))
        event_type, actor, candidate, kind, counted = (re.sub(r"`|\s*\(.*\)", "", c) for c in cells)
        for event in events.split(", "):
            rows[event] = (event_type, actor, candidate, kind, None if counted == "none" else counted)
    return rows


def test_every_recording_event_is_documented_as_it_records() -> None:
    documented = _documented_observations()
    assert documented  # positive control: the table was found
    recording = {e.name: e for e in HOOK_EVENTS if e.records is not None}
    assert set(recording) == set(documented)
    for name, event in recording.items():
        records = event.records
        assert records is not None
        row = (records.event_type, records.actor, records.candidate_type, records.source_kind, event.text_field)
        assert row == documented[name], name


def test_only_the_prompt_runs_commands_and_the_reading_events_answer_with_context() -> None:
    assert [e.name for e in HOOK_EVENTS if e.runs_commands] == ["UserPromptSubmit"]
    assert [e.name for e in HOOK_EVENTS if e.records is None] == ["SessionStart"]
    assert {e.name for e in HOOK_EVENTS if e.answers_with_context} == {"SessionStart", "UserPromptSubmit"}
    assert HOOK_EVENT_BY_NAME["Stop"].text_field == "last_assistant_message"
