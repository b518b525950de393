"""Reading one hook payload from stdin, leniently typed and strictly bounded.

Hosts add fields to their payloads from release to release (Codex and Claude Code differ already), so unknown keys are
ignored rather than rejected: the hook must keep answering when a host grows. Only the fields the handlers use are
taken, each only when it has the expected type; ``transcript_path`` is never read.
"""

from __future__ import annotations

from typing import BinaryIO, Final

import msgspec

from intentloop.model.gemini_events import GEMINI_EVENT_BY_ARGUMENT, GEMINI_ONLY
from intentloop.model.hook_events import EVENT_BY_ARGUMENT, HOOK_EVENT_BY_NAME, HOOK_EVENT_NAMES

MAX_PAYLOAD_BYTES: Final = 1_048_576

#: ``intentloop hook EVENT`` argument -> the host's ``hook_event_name`` (tables: ``intentloop/model/hook_events.py``,
#: and ``intentloop/model/gemini_events.py`` for Gemini CLI's own events).
FORCED_EVENTS: Final[dict[str, str]] = {**EVENT_BY_ARGUMENT, **GEMINI_EVENT_BY_ARGUMENT}
EVENT_NAMES: Final = HOOK_EVENT_NAMES

_decoder = msgspec.json.Decoder()


class PayloadError(Exception):
    """The payload cannot be used: the hook answers fail-open (the message names why, never the content)."""


class HookPayload(msgspec.Struct, frozen=True, kw_only=True):
    """The fields of a host hook payload that intentloop uses.

    Attributes:
        event: the hook event name (``SessionStart`` …), forced by the command line or from ``hook_event_name``.
        session_id: the host's session id (stored only as a salted SHA-256).
        cwd: the session's working directory, as the host sent it (validated later).
        turn_id: the host's opaque id of the turn: Codex ``turn_id``, Claude Code ``prompt_id`` (Gemini CLI has none).
        text: the text an observation is about: ``prompt`` (UserPromptSubmit; Gemini's BeforeAgent, after its
            ``<hook_context>`` block), ``last_assistant_message`` (Stop, SessionEnd) or ``prompt_response`` (Gemini's
            AfterAgent); never stored, only redacted, counted and (without a turn id) keyed-hashed.
        source: SessionStart's ``source`` (``startup|resume|clear|compact``), when present.
        answer_as: the host's own name for the event, when it is not ``event`` (Gemini CLI's ``BeforeAgent``, which
            acts as UserPromptSubmit: ``hooks/_gemini.py``); the answer's ``hookEventName``.
        compaction_unseen: the host fires no event after it compacts its conversation (Gemini CLI), so a prompt
            answer carries the task's context every time instead of only when it changed.
        host: the host as its payload shows it, for a label a person recognises: ``Codex`` (a ``turn_id``),
            ``Claude Code`` (a ``prompt_id``), ``Gemini CLI`` (its own events); ``None`` when the payload does not say.
    """

    event: str
    session_id: str
    cwd: str
    turn_id: str | None = None
    text: str | None = None
    source: str | None = None
    answer_as: str | None = None
    compaction_unseen: bool = False
    host: str | None = None


def read_payload_bytes(stream: BinaryIO) -> bytes:
    """Read the whole payload, refusing more than 1 MiB.

    Raises:
        PayloadError: empty or oversized input.
    """
    data = stream.read(MAX_PAYLOAD_BYTES + 1)
    if len(data) > MAX_PAYLOAD_BYTES:
        raise PayloadError("payload larger than 1 MiB")
    if not data.strip():
        raise PayloadError("empty payload")
    return data


def opt_str(obj: dict[str, object], key: str) -> str | None:
    """``obj[key]`` when it is a string, else ``None``."""
    value = obj.get(key)
    return value if isinstance(value, str) else None


def parse_payload(data: bytes, forced_event: str | None) -> HookPayload:
    """Decode a payload into :class:`HookPayload`.

    ``forced_event`` (a host event name) wins over ``hook_event_name``; without it, ``hook_event_name`` must be one of
    the five handled events or one of Gemini CLI's own (``BeforeAgent``, ``AfterAgent``: read by ``hooks/_gemini.py``).

    Raises:
        PayloadError: invalid JSON, not an object, or a missing or mistyped ``hook_event_name``, ``session_id``
            or ``cwd``.
    """
    try:
        obj = _decoder.decode(data)
    except msgspec.DecodeError as exc:
        raise PayloadError("payload is not valid JSON") from exc
    except RecursionError as exc:  # msgspec refuses nesting deeper than the interpreter's recursion limit
        raise PayloadError("payload is nested too deeply") from exc
    if not isinstance(obj, dict):
        raise PayloadError("payload is not a JSON object")
    event = forced_event or opt_str(obj, "hook_event_name")
    if event not in EVENT_NAMES and event not in GEMINI_ONLY:
        raise PayloadError("unhandled or missing hook_event_name")
    session_id = opt_str(obj, "session_id")
    cwd = opt_str(obj, "cwd")
    if not session_id or not cwd:
        raise PayloadError("session_id and cwd must be non-empty strings")
    if event in GEMINI_ONLY:
        from intentloop.hooks._gemini import gemini_payload

        return gemini_payload(obj, GEMINI_ONLY[event], session_id=session_id, cwd=cwd)
    turn_id = opt_str(obj, "turn_id") or opt_str(obj, "prompt_id")
    host = "Codex" if "turn_id" in obj else "Claude Code" if "prompt_id" in obj else None
    text_field = HOOK_EVENT_BY_NAME[event].text_field
    text = opt_str(obj, text_field) if text_field is not None else None
    return HookPayload(
        event=event,
        session_id=session_id,
        cwd=cwd,
        turn_id=turn_id or None,
        text=text,
        source=opt_str(obj, "source"),
        host=host,
    )


__all__ = [
    "EVENT_NAMES",
    "FORCED_EVENTS",
    "MAX_PAYLOAD_BYTES",
    "HookPayload",
    "PayloadError",
    "opt_str",
    "parse_payload",
    "read_payload_bytes",
]
