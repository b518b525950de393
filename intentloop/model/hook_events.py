"""The five host hook events intentloop handles: the one table behind every place that names them.

The payload parser (``hooks/_payload.py``), the installers (``cli/install.py``, ``cli/_install_edit.py``), the CLI's
help (``cli/hook.py``), the hook's usage line (``hooks/_run.py``) and the observations the service records
(``intentloop/service/hookops.py``) derive from it; ``hooks/hooks.json``, the plugin's copy, is checked against it by
``tests/integration/test_hook_wiring.py``. Standard library only (not a msgspec struct): the hook
process imports it before it imports msgspec.
"""

from __future__ import annotations

from typing import Final


class HookEvent:
    """One hook event as the hosts name it and as intentloop is wired to it (a plain class: a ``NamedTuple`` cost the
    hook process ~1.5 ms at import, measured with ``python -X importtime``).

    Attributes:
        name: the host's ``hook_event_name``.
        argument: the ``intentloop hook ARGUMENT`` that forces it.
        matcher: the hosts' matcher in the hook configuration, or ``None`` for every occurrence.
        status_message: what the host may show while the hook runs, or ``None``.
    """

    __slots__ = ("argument", "matcher", "name", "status_message")

    def __init__(
        self, *, name: str, argument: str, matcher: str | None = None, status_message: str | None = None
    ) -> None:
        self.name = name
        self.argument = argument
        self.matcher = matcher
        self.status_message = status_message

    def __repr__(self) -> str:
        return f"HookEvent(name={self.name!r}, argument={self.argument!r})"


HOOK_EVENTS: Final[tuple[HookEvent, ...]] = (
    HookEvent(
        name="SessionStart",
        argument="session-start",
        matcher="startup|resume|clear|compact",
        status_message="Loading compact intent context",
    ),
    HookEvent(name="UserPromptSubmit", argument="user-prompt"),
    HookEvent(name="PostCompact", argument="post-compact", matcher="manual|auto"),
    HookEvent(name="Stop", argument="stop"),
    HookEvent(name="SessionEnd", argument="session-end", matcher="other"),
)
#: host event name -> ``intentloop hook`` argument, and back.
ARGUMENT_BY_EVENT: Final[dict[str, str]] = {event.name: event.argument for event in HOOK_EVENTS}
EVENT_BY_ARGUMENT: Final[dict[str, str]] = {event.argument: event.name for event in HOOK_EVENTS}
HOOK_EVENT_NAMES: Final = frozenset(ARGUMENT_BY_EVENT)
#: ``session-start|user-prompt|...`` as usage lines write it.
HOOK_ARGUMENTS_TEXT: Final = "|".join(event.argument for event in HOOK_EVENTS)
#: Seconds a host gives one hook before it kills it (both hosts' configuration carry it).
HOOK_TIMEOUT_S: Final = 3

__all__ = [
    "ARGUMENT_BY_EVENT",
    "EVENT_BY_ARGUMENT",
    "HOOK_ARGUMENTS_TEXT",
    "HOOK_EVENTS",
    "HOOK_EVENT_NAMES",
    "HOOK_TIMEOUT_S",
    "HookEvent",
]
