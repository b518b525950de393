"""Per-event behaviour of ``intentloop hook`` (reference/hook-behaviour.md) on top of ``intentloop.service.hookops``.

SessionStart reads; UserPromptSubmit records its observation and then answers with the same context; PostCompact,
Stop and SessionEnd record and answer the bare ``{"continue": true, "suppressOutput": true}``.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from hooks._guard import FAIL_OPEN_LINE, debug_log
from hooks._payload import HookPayload
from intentloop.service.hookops import Observation, record_observation, session_context
from intentloop.store import resolve_data_root

_encoder = msgspec.json.Encoder()


def answer_line(event: str, context: str | None) -> bytes:
    """The stdout line: fail-open keys, plus ``hookSpecificOutput`` when there is context to inject."""
    if not context:
        return FAIL_OPEN_LINE
    out = {
        "continue": True,
        "suppressOutput": True,
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": context},
    }
    return _encoder.encode(out) + b"\n"


def dispatch(payload: HookPayload, env: Mapping[str, str], *, lock_deadline: float, debug: bool) -> bytes:
    """Run the handler for ``payload.event`` and return the stdout line.

    Raises:
        IntentLoopError: no data root, an invalid ``cwd``, a damaged ledger, a held lock … (the caller answers
            fail-open).
    """
    data_root = resolve_data_root(env)
    if payload.event == "SessionStart":
        context = session_context(data_root, payload.cwd, payload.session_id, payload.source)
        return answer_line(payload.event, context)
    outcome = record_observation(
        data_root,
        payload.cwd,
        Observation(event=payload.event, session_id=payload.session_id, turn_id=payload.turn_id, text=payload.text),
        deadline=lock_deadline,
        with_context=payload.event == "UserPromptSubmit",
    )
    debug_log(debug, f"{payload.event}: observation {'recorded' if outcome.recorded else 'not recorded'}")
    if payload.event == "UserPromptSubmit":
        return answer_line(payload.event, outcome.context)
    return FAIL_OPEN_LINE


__all__ = ["answer_line", "dispatch"]
