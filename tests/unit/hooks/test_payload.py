"""Hook payload reading: bounds, lenient typing, the hosts' field variants (Gemini CLI's own events included)."""

from __future__ import annotations

import io
import json

import pytest

from intentloop.hooks._payload import (
    EVENT_NAMES,
    FORCED_EVENTS,
    MAX_PAYLOAD_BYTES,
    PayloadError,
    parse_payload,
    read_payload_bytes,
)

CODEX_PROMPT = {
    "session_id": "0199a213-81c0-7800-8aa1-bbab2a035a53",
    "transcript_path": "/home/u/.codex/sessions/x.jsonl",
    "cwd": "/work/project",
    "hook_event_name": "UserPromptSubmit",
    "model": "gpt-5",
    "permission_mode": "default",
    "turn_id": "turn-7",
    "prompt": "add a test",
}
CLAUDE_PROMPT = {
    "session_id": "abc",
    "transcript_path": "/home/u/.claude/projects/x.jsonl",
    "cwd": "/work/project",
    "hook_event_name": "UserPromptSubmit",
    "permission_mode": "default",
    "prompt_id": "8d1f6d3c-6f43-4c52-9a55-0d2f2f8f7a11",
    "prompt": "add a test",
}


def _bytes(obj: object) -> bytes:
    return json.dumps(obj).encode()


def test_codex_prompt_uses_turn_id_and_prompt() -> None:
    p = parse_payload(_bytes(CODEX_PROMPT), None)
    assert (p.event, p.session_id, p.cwd, p.turn_id, p.text) == (
        "UserPromptSubmit",
        CODEX_PROMPT["session_id"],
        "/work/project",
        "turn-7",
        "add a test",
    )


def test_claude_prompt_id_is_the_turn_id() -> None:
    p = parse_payload(_bytes(CLAUDE_PROMPT), None)
    assert p.turn_id == CLAUDE_PROMPT["prompt_id"]
    assert p.text == "add a test"


def test_stop_observes_last_assistant_message_not_prompt() -> None:
    payload = {**CODEX_PROMPT, "hook_event_name": "Stop", "last_assistant_message": "done", "stop_hook_active": False}
    p = parse_payload(_bytes(payload), None)
    assert (p.event, p.text) == ("Stop", "done")


def test_post_compact_and_session_start_carry_no_text() -> None:
    compact = parse_payload(_bytes({**CODEX_PROMPT, "hook_event_name": "PostCompact", "trigger": "auto"}), None)
    start = parse_payload(_bytes({**CODEX_PROMPT, "hook_event_name": "SessionStart", "source": "compact"}), None)
    assert compact.text is None
    assert (start.text, start.source) == (None, "compact")


def test_unknown_fields_are_ignored() -> None:
    p = parse_payload(_bytes({**CODEX_PROMPT, "a_field_from_a_future_host": {"x": [1, 2]}}), None)
    assert p.event == "UserPromptSubmit"


def test_forced_event_wins_over_payload_event() -> None:
    payload = {k: v for k, v in CODEX_PROMPT.items() if k != "hook_event_name"}
    assert parse_payload(_bytes(payload), "SessionStart").event == "SessionStart"
    with pytest.raises(PayloadError):
        parse_payload(_bytes(payload), None)


@pytest.mark.parametrize(
    "change",
    [
        {"session_id": None},
        {"session_id": ""},
        {"session_id": 42},
        {"cwd": None},
        {"cwd": ["/work"]},
        {"hook_event_name": "PreToolUse"},
        {"hook_event_name": 1},
    ],
)
def test_missing_or_mistyped_required_fields_are_refused(change: dict[str, object]) -> None:
    payload = {**CODEX_PROMPT, **change}
    payload = {k: v for k, v in payload.items() if v is not None}
    with pytest.raises(PayloadError):
        parse_payload(_bytes(payload), None)
    # positive control: the untouched payload parses
    assert parse_payload(_bytes(CODEX_PROMPT), None).session_id


def test_mistyped_optional_fields_are_dropped() -> None:
    p = parse_payload(_bytes({**CODEX_PROMPT, "turn_id": 7, "prompt": {"x": 1}}), None)
    assert (p.turn_id, p.text) == (None, None)


@pytest.mark.parametrize("data", [b"{", b"[1, 2]", b'"text"', b"\xff\xfe{}", b"null"])
def test_non_object_json_is_refused(data: bytes) -> None:
    with pytest.raises(PayloadError):
        parse_payload(data, None)


def test_payload_size_bound() -> None:
    assert read_payload_bytes(io.BytesIO(b" " * (MAX_PAYLOAD_BYTES - 2) + b"{}")).endswith(b"{}")
    with pytest.raises(PayloadError, match="1 MiB"):
        read_payload_bytes(io.BytesIO(b" " * MAX_PAYLOAD_BYTES + b"{}"))


@pytest.mark.parametrize("data", [b"", b"  \n\t"])
def test_empty_payload_is_refused(data: bytes) -> None:
    with pytest.raises(PayloadError, match="empty"):
        read_payload_bytes(io.BytesIO(data))


def test_forced_event_table_matches_the_five_events_and_geminis_own() -> None:
    assert {"SessionStart", "UserPromptSubmit", "PostCompact", "Stop", "SessionEnd"} == EVENT_NAMES
    assert set(FORCED_EVENTS.values()) == EVENT_NAMES | {"BeforeAgent", "AfterAgent"}
    assert FORCED_EVENTS["before-agent"] == "BeforeAgent" and FORCED_EVENTS["after-agent"] == "AfterAgent"


GEMINI_BASE = {"session_id": "g-1", "cwd": "/work/project", "transcript_path": "/t.json", "timestamp": "t"}


def test_gemini_before_agent_is_a_prompt_answered_as_before_agent() -> None:
    raw = {**GEMINI_BASE, "hook_event_name": "BeforeAgent", "prompt": "<hook_context>ctx</hook_context>\n\nfix it"}
    payload = parse_payload(json.dumps(raw).encode(), None)
    assert (payload.event, payload.answer_as, payload.text, payload.turn_id) == (
        "UserPromptSubmit",
        "BeforeAgent",
        "fix it",
        None,
    )


def test_gemini_after_agent_reads_prompt_response_as_stop() -> None:
    raw = {**GEMINI_BASE, "hook_event_name": "AfterAgent", "prompt": "fix it", "prompt_response": "fixed"}
    payload = parse_payload(json.dumps(raw).encode(), "AfterAgent")
    assert (payload.event, payload.answer_as, payload.text) == ("Stop", "AfterAgent", "fixed")


def test_gemini_session_events_are_read_as_claude_codes() -> None:
    raw = {**GEMINI_BASE, "hook_event_name": "SessionEnd", "reason": "exit"}
    payload = parse_payload(json.dumps(raw).encode(), None)
    assert (payload.event, payload.answer_as, payload.text) == ("SessionEnd", None, None)


def test_gemini_events_it_does_not_use_are_refused() -> None:
    for event in ("PreCompress", "BeforeTool", "Notification"):
        with pytest.raises(PayloadError, match="hook_event_name"):
            parse_payload(json.dumps({**GEMINI_BASE, "hook_event_name": event}).encode(), None)
