"""Per-event behaviour of ``intentloop hook`` (docs/HOOKS.md) on top of ``intentloop.service.hookops``, as each
event's row in ``intentloop.model.hook_events`` says: SessionStart reads; UserPromptSubmit records its observation and
then answers with the same context, a linked task's only when it changed since the session's last injection;
PostCompact, Stop and SessionEnd record and answer the bare ``{"continue": true, "suppressOutput": true}``
(PostCompact also forgets the session's last injection). A prompt that starts
with a user's ``/intent`` command (``intentloop.model.commands``) is run by ``intentloop.service.hookcmds`` and
answered with its receipt, in the context and as a ``systemMessage`` for the user. Gemini CLI's own events arrive as
the event they act as (``hooks/_gemini.py``) and are answered under Gemini's name (``answer_as``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import msgspec

from intentloop.hooks._guard import BACKGROUND_LIMIT_S, FAIL_OPEN_LINE, Detach, debug_log
from intentloop.hooks._payload import HookPayload
from intentloop.model.hook_events import HOOK_EVENT_BY_NAME
from intentloop.model.printable import escape_controls
from intentloop.service.hookops import (
    SLOW_READ_BYTES,
    Observation,
    context_once,
    forget_injected,
    plan_observation,
    rebuild_index,
    record_planned,
    session_context,
    spool_observation,
    take_background_slot,
)
from intentloop.store import resolve_data_root

_encoder = msgspec.json.Encoder()


def answer_line(event: str, context: str | None, system_message: str | None = None) -> bytes:
    """The stdout line: fail-open keys, plus ``hookSpecificOutput`` when there is context to inject, plus a
    ``systemMessage`` (shown to the user by the host) when there is one."""
    if not context:
        return FAIL_OPEN_LINE
    # Stored text reaches the host (and, through systemMessage, the user's terminal) with its controls escaped, also
    # from a ledger written before statements were stored escaped.
    out: dict[str, object] = {
        "continue": True,
        "suppressOutput": True,
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": escape_controls(context, keep_newlines=True),
        },
    }
    if system_message:
        out["systemMessage"] = escape_controls(system_message, keep_newlines=True)
    return _encoder.encode(out) + b"\n"


def command_line(payload: HookPayload, env: Mapping[str, str], *, lock_deadline: float, debug: bool) -> bytes | None:
    """The answer to a prompt that starts with an ``/intent`` command, or ``None`` when the prompt is not one."""
    if not HOOK_EVENT_BY_NAME[payload.event].runs_commands or not payload.text:
        return None
    from intentloop.model.commands import parse_intent_command

    command = parse_intent_command(payload.text)
    if command is None:
        return None
    from intentloop.service.hookcmds import run_command

    answer = run_command(
        env,
        payload.cwd,
        payload.session_id,
        payload.turn_id,
        payload.text,
        command,
        deadline=lock_deadline,
        host=payload.host,
    )
    debug_log(debug, f"{payload.event}: /intent {command.verb} {'done' if answer.done else 'not recorded'}")
    return answer_line(payload.answer_as or payload.event, answer.additional_context, answer.receipt)


def dispatch(
    payload: HookPayload, env: Mapping[str, str], *, lock_deadline: float, debug: bool, detach: Detach | None = None
) -> bytes:
    """Run the handler for ``payload.event`` and return the stdout line.

    An observation that needs a whole read of a large ledger first (``hookops.SLOW_READ_BYTES``: its checkpoint does
    not vouch for the file) answers fail-open at once through ``detach`` and is recorded in the background, waiting
    for the lock until half of ``BACKGROUND_LIMIT_S``; that write leaves the checkpoint and the index for the next hook.
    One such child per project at a time: while one is at it, the others spool their observation for it.

    Raises:
        IntentLoopError: no data root, an invalid ``cwd``, a damaged ledger, a held lock … (the caller answers
            fail-open).
    """
    command = command_line(payload, env, lock_deadline=lock_deadline, debug=debug)
    if command is not None:
        return command
    data_root = resolve_data_root(env)
    event = HOOK_EVENT_BY_NAME[payload.event]
    if event.records is None:  # a reading event
        context = session_context(data_root, payload.cwd, payload.session_id, payload.source)
        return answer_line(payload.answer_as or payload.event, context if event.answers_with_context else None)

    obs = Observation(event=payload.event, session_id=payload.session_id, turn_id=payload.turn_id, text=payload.text)
    # Plan, then act: the service says what it would do; a plan that needs a whole read of a large ledger is carried
    # out after the host has its answer, when the host can be answered early.
    plan = plan_observation(data_root, payload.cwd, obs, whole_read_limit=None if detach is None else SLOW_READ_BYTES)
    deadline, patient = lock_deadline, False  # patient: the host has its answer already
    if plan.whole_read_bytes is not None:
        if detach is not None and not take_background_slot(plan):
            # Another hook's child is reading this ledger already: one at a time per project (their memory adds
            # up); this observation waits in the spool for it, or for the next writer.
            spooled = spool_observation(data_root, payload.cwd, obs)
            debug_log(debug, f"{payload.event}: observation {'spooled' if spooled else 'not recorded'} (busy child)")
            return FAIL_OPEN_LINE
        if detach is not None and detach(FAIL_OPEN_LINE):
            deadline, patient = time.monotonic() + BACKGROUND_LIMIT_S / 2, True
            rebuild_index(plan, deadline)  # then the plan reads through the index, not every event of the ledger
        plan = plan_observation(data_root, payload.cwd, obs)
    outcome = record_planned(plan, deadline=deadline, with_context=event.answers_with_context, patient=patient)
    state = "recorded" if outcome.recorded else "spooled for the next writer" if outcome.spooled else "not recorded"
    debug_log(debug, f"{payload.event}: observation {state}")
    answer_as = payload.answer_as or payload.event
    if event.forgets_injection:
        forget_injected(plan)
    if not event.answers_with_context or patient:
        return answer_line(answer_as, None)
    # The host keeps every injected copy in its conversation: a linked task's unchanged context is not sent again,
    # unless the host never says it compacted (Gemini CLI: then the context goes with every prompt).
    once = event.context_once and not payload.compaction_unseen
    return answer_line(answer_as, context_once(plan, outcome) if once else outcome.context)


def spool_unanswered(payload: HookPayload, env: Mapping[str, str]) -> bool:
    """For a hook whose child was killed at the deadline: leave its observation in the spool by session (whether
    and where it is recorded is decided by the writer that drains it); ``False`` when nothing was spooled.

    Raises:
        IntentLoopError: no data root, an invalid ``cwd``, an unsafe path, a failed write.
    """
    if HOOK_EVENT_BY_NAME[payload.event].records is None:
        return False
    obs = Observation(event=payload.event, session_id=payload.session_id, turn_id=payload.turn_id, text=payload.text)
    return spool_observation(resolve_data_root(env), payload.cwd, obs)


__all__ = ["answer_line", "command_line", "dispatch", "spool_unanswered"]
