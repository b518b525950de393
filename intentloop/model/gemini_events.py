"""Gemini CLI's hook events that intentloop uses and the intentloop behaviour each one gets: the one table behind the
Gemini installer (``cli/_install_gemini.py``), the hook's Gemini payloads (``hooks/_gemini.py``) and the
``intentloop hook`` arguments that name them.

Four of Gemini CLI's events act as rows of ``intentloop.model.hook_events`` (docs/HOOKS.md, "Gemini CLI"):
``SessionStart``, ``BeforeAgent`` (after the user's prompt, before planning; it can add context), ``AfterAgent`` (the
turn's final answer) and ``SessionEnd``. SessionStart and SessionEnd are the same events with the same payload fields
as Claude Code's, so they keep their arguments; the other two get arguments of their own. ``PreCompress`` is not
used: Gemini CLI 0.61 fires it on every compression check, before it decides whether to compress (three times in a
turn of three model calls, in ``tools/e2e``), so it says nothing about a compaction having happened. Standard library
only: the hook process reads it before it imports msgspec.
"""

from __future__ import annotations

from typing import Final

from intentloop.model.hook_events import HOOK_EVENT_BY_NAME, HOOK_TIMEOUT_S


class GeminiEvent:
    """One Gemini CLI hook event (a plain class, like ``hook_events.HookEvent``).

    Attributes:
        name: Gemini's ``hook_event_name``.
        argument: the ``intentloop hook ARGUMENT`` the installer writes for it.
        acts_as: the ``hook_events`` row whose behaviour it gets (what it records, whether it answers with context).
        text_field: the payload field an observation counts and digests (never stores), or ``None``.
    """

    __slots__ = ("acts_as", "argument", "name", "text_field")

    def __init__(self, name: str, argument: str, acts_as: str, text_field: str | None = None) -> None:
        self.name = name
        self.argument = argument
        self.acts_as = acts_as
        self.text_field = text_field

    def __repr__(self) -> str:
        return f"GeminiEvent(name={self.name!r}, acts_as={self.acts_as!r})"


GEMINI_EVENTS: Final[tuple[GeminiEvent, ...]] = (
    GeminiEvent("SessionStart", "session-start", "SessionStart"),
    GeminiEvent("BeforeAgent", "before-agent", "UserPromptSubmit", "prompt"),
    GeminiEvent("AfterAgent", "after-agent", "Stop", "prompt_response"),
    GeminiEvent("SessionEnd", "session-end", "SessionEnd"),
)
#: Gemini event name -> its row.
GEMINI_EVENT_BY_NAME: Final[dict[str, GeminiEvent]] = {event.name: event for event in GEMINI_EVENTS}
#: The Gemini events that are not also Claude Code's (by name): these alone are parsed as Gemini payloads.
GEMINI_ONLY: Final[dict[str, GeminiEvent]] = {
    event.name: event for event in GEMINI_EVENTS if event.name not in HOOK_EVENT_BY_NAME
}
#: ``intentloop hook`` argument -> Gemini event name, for the Gemini-only events.
GEMINI_EVENT_BY_ARGUMENT: Final[dict[str, str]] = {event.argument: event.name for event in GEMINI_ONLY.values()}
#: Gemini measures a hook's ``timeout`` in milliseconds; the same budget as the other hosts' 3 s.
GEMINI_HOOK_TIMEOUT_MS: Final = HOOK_TIMEOUT_S * 1000

__all__ = [
    "GEMINI_EVENTS",
    "GEMINI_EVENT_BY_ARGUMENT",
    "GEMINI_EVENT_BY_NAME",
    "GEMINI_HOOK_TIMEOUT_MS",
    "GEMINI_ONLY",
    "GeminiEvent",
]
