"""Gemini CLI's own hook payloads (``BeforeAgent``, ``AfterAgent``), read as the intentloop event each one acts as
(``intentloop/model/gemini_events.py``); its ``SessionStart`` and ``SessionEnd`` are Claude Code's and are read by
``hooks/_payload.py`` as they are.

Gemini reads a hook's answer as Claude Code does (``hookSpecificOutput.additionalContext``, ``continue``,
``systemMessage``), so the answer is ``hooks/_dispatch.py``'s, named with Gemini's event (``answer_as``). Two habits
of Gemini shape what is read here:

* In headless mode (``gemini -p``) SessionStart's additional context is put in front of the user's prompt as
  ``<hook_context>…</hook_context>``, so BeforeAgent's ``prompt`` starts with it. The user's own prompt, the one an
  observation digests and an ``/intent`` command must start, is what follows that block. Gemini escapes ``<`` and
  ``>`` inside the context it wraps, so the first closing tag is the block's own.
* Gemini sends no turn id: an observation without one is keyed by its text's keyed digest, as Codex's SessionEnd is.
"""

from __future__ import annotations

from typing import Final

from intentloop.hooks._payload import HookPayload, opt_str
from intentloop.model.gemini_events import GeminiEvent
from intentloop.model.hook_events import HOOK_EVENT_BY_NAME

HOOK_CONTEXT_OPEN: Final = "<hook_context>"
HOOK_CONTEXT_CLOSE: Final = "</hook_context>"


def user_prompt(prompt: str) -> str:
    """``prompt`` without the ``<hook_context>…</hook_context>`` block Gemini puts at its very start (and the blank
    line after it); a prompt that does not start with a whole block is returned as it is."""
    head = prompt.lstrip()
    if not head.startswith(HOOK_CONTEXT_OPEN):
        return prompt
    end = head.find(HOOK_CONTEXT_CLOSE)
    if end < 0:
        return prompt
    return head[end + len(HOOK_CONTEXT_CLOSE) :].lstrip()


def gemini_payload(obj: dict[str, object], event: GeminiEvent, *, session_id: str, cwd: str) -> HookPayload:
    """The payload of one of Gemini's own events, as the intentloop event it acts as, answered under Gemini's name."""
    text = opt_str(obj, event.text_field) if event.text_field is not None else None
    if text is not None and HOOK_EVENT_BY_NAME[event.acts_as].runs_commands:
        text = user_prompt(text)
    return HookPayload(
        event=event.acts_as,
        session_id=session_id,
        cwd=cwd,
        text=text,
        answer_as=event.name,
        compaction_unseen=True,  # PreCompress is no compaction (gemini_events.py): the context goes every time
        host="Gemini CLI",
    )


__all__ = ["HOOK_CONTEXT_CLOSE", "HOOK_CONTEXT_OPEN", "gemini_payload", "user_prompt"]
