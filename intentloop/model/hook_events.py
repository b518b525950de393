"""The five host hook events intentloop handles: the one table behind every place that names them or acts on them.

Each row carries the event's wiring and its behaviour: which payload field holds its text, what it records, whether
it answers with context and whether it runs a user's ``/intent`` command. The payload parser (``hooks/_payload.py``),
the dispatch (``hooks/_dispatch.py``), the installers (``cli/install.py``, ``cli/_install_edit.py``), the CLI's help
(``cli/hook.py``), the hook's usage line (``hooks/_run.py``) and the observations the service records
(``intentloop/service/hookops.py``) derive from it; ``hooks/hooks.json``, the plugin's copy, is checked against it by
``tests/integration/test_hook_wiring.py``. Standard library only (not a msgspec struct): the hook
process imports it before it imports msgspec.
"""

from __future__ import annotations

from typing import Final


class Recorded:
    """What a recording hook event appends: one observation event with a content-free candidate (docs/HOOKS.md).

    Attributes:
        event_type: the ledger event type.
        actor: the event's actor.
        candidate_type: the candidate's type.
        source_kind: the candidate's source kind.
    """

    __slots__ = ("actor", "candidate_type", "event_type", "source_kind")

    def __init__(self, event_type: str, actor: str, candidate_type: str, source_kind: str) -> None:
        self.event_type = event_type
        self.actor = actor
        self.candidate_type = candidate_type
        self.source_kind = source_kind


class HookEvent:
    """One hook event as the hosts name it, as intentloop is wired to it, and what intentloop does on it (a plain
    class: a ``NamedTuple`` cost the hook process ~1.5 ms at import, measured with ``python -X importtime``).

    Attributes:
        name: the host's ``hook_event_name``.
        argument: the ``intentloop hook ARGUMENT`` that forces it.
        matcher: the hosts' matcher in the hook configuration, or ``None`` for every occurrence.
        status_message: what the host may show while the hook runs, or ``None``.
        text_field: the payload field whose text an observation counts and digests (never stores), or ``None``.
        records: the observation it appends for a linked session, or ``None``: it only reads.
        answers_with_context: whether its answer carries the session's context (else the bare fail-open answer).
        context_once: with ``answers_with_context``, a linked task's context is left out when it is exactly what was
            last injected into the session (``store/_injected.py``): the host keeps the earlier copy.
        forgets_injection: the host's conversation was compacted: the session's last injection is forgotten, so the
            next ``context_once`` answer injects again.
        runs_commands: whether a user's ``/intent`` command at the start of its text is run.
    """

    __slots__ = (
        "answers_with_context",
        "argument",
        "context_once",
        "forgets_injection",
        "matcher",
        "name",
        "records",
        "runs_commands",
        "status_message",
        "text_field",
    )

    def __init__(
        self,
        *,
        name: str,
        argument: str,
        matcher: str | None = None,
        status_message: str | None = None,
        text_field: str | None = None,
        records: Recorded | None = None,
        answers_with_context: bool = False,
        context_once: bool = False,
        forgets_injection: bool = False,
        runs_commands: bool = False,
    ) -> None:
        self.name = name
        self.argument = argument
        self.matcher = matcher
        self.status_message = status_message
        self.text_field = text_field
        self.records = records
        self.answers_with_context = answers_with_context
        self.context_once = context_once
        self.forgets_injection = forgets_injection
        self.runs_commands = runs_commands

    def __repr__(self) -> str:
        return f"HookEvent(name={self.name!r}, argument={self.argument!r})"


_RESULT_SIGNAL = Recorded("result_signal_observed", "agent", "result_feedback", "agent_turn")
HOOK_EVENTS: Final[tuple[HookEvent, ...]] = (
    HookEvent(
        name="SessionStart",
        argument="session-start",
        matcher="startup|resume|clear|compact",
        status_message="Loading compact intent context",
        answers_with_context=True,
    ),
    HookEvent(
        name="UserPromptSubmit",
        argument="user-prompt",
        text_field="prompt",
        records=Recorded("source_observed", "user", "prompt_update", "user_event"),
        answers_with_context=True,
        context_once=True,
        runs_commands=True,
    ),
    HookEvent(
        name="PostCompact",
        argument="post-compact",
        matcher="manual|auto",
        records=Recorded("compaction_observed", "agent", "recovery_needed", "agent_turn"),
        forgets_injection=True,
    ),
    HookEvent(name="Stop", argument="stop", text_field="last_assistant_message", records=_RESULT_SIGNAL),
    # No matcher: every reason a session ends for (Claude Code: clear, resume, logout, prompt_input_exit, other, ...)
    # is a result to observe; the matcher "other" the original used missed every ordinary exit.
    HookEvent(
        name="SessionEnd",
        argument="session-end",
        text_field="last_assistant_message",
        records=_RESULT_SIGNAL,
    ),
)
#: host event name -> its row.
HOOK_EVENT_BY_NAME: Final[dict[str, HookEvent]] = {event.name: event for event in HOOK_EVENTS}
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
    "HOOK_EVENT_BY_NAME",
    "HOOK_EVENT_NAMES",
    "HOOK_TIMEOUT_S",
    "HookEvent",
    "Recorded",
]
