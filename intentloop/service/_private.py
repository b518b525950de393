"""Private-mode ledgers: the semantic events of private tasks, kept only in this process's memory.

Each private task has its own hash chain in memory (same event shapes as the durable ledger, sealed the same way), so
its projection, idempotency and deletion work exactly as for a durable task while no semantic byte reaches disk. The
on-disk side of private mode is only the hashed control file written by the store under the lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from intentloop.model import Event, EventDraft, rechain, seal


def session_of(events: Sequence[Event]) -> str | None:
    """The host session hash a task's events bind it to (``mode_set`` overwrites it only when the key is present)."""
    current: str | None = None
    for event in events:
        if event.event_type == "task_started":
            value: Any = event.payload.get("host_session_hash")
            current = value if isinstance(value, str) else None
        elif event.event_type == "mode_set" and "host_session_hash" in event.payload:
            value = event.payload.get("host_session_hash")
            current = value if isinstance(value, str) else None
    return current


class PrivateLedgers:
    """The in-process private ledgers, keyed by ``(project_id, task_id)``."""

    def __init__(self) -> None:
        self._ledgers: dict[tuple[str, str], list[Event]] = {}

    def get(self, project_id: str, task_id: str) -> list[Event] | None:
        """The task's private events (a copy), or ``None`` when the task is not private in this process."""
        ledger = self._ledgers.get((project_id, task_id))
        return None if ledger is None else list(ledger)

    def has(self, project_id: str, task_id: str) -> bool:
        return (project_id, task_id) in self._ledgers

    def open(self, project_id: str, task_id: str, base: Sequence[Event], draft: EventDraft) -> list[Event]:
        """Start a private ledger from ``base`` (the task's durable events, possibly none) plus ``draft``."""
        prev = base[-1].event_hash if base else None
        ledger = [*base, seal(draft, project_id=project_id, prev_hash=prev)]
        self._ledgers[(project_id, task_id)] = ledger
        return list(ledger)

    def append(self, project_id: str, task_id: str, draft: EventDraft) -> Event:
        """Seal ``draft`` after the task's last private event.

        Raises:
            KeyError: the task has no private ledger (callers check :meth:`has` first).
        """
        ledger = self._ledgers[(project_id, task_id)]
        event = seal(draft, project_id=project_id, prev_hash=ledger[-1].event_hash if ledger else None)
        ledger.append(event)
        return event

    def replace(self, project_id: str, task_id: str, events: Sequence[Event]) -> None:
        """Replace a private ledger after a deletion, re-chaining it."""
        self._ledgers[(project_id, task_id)] = rechain(list(events), project_id=project_id)

    def drop(self, project_id: str, task_id: str) -> None:
        self._ledgers.pop((project_id, task_id), None)

    def drop_session(self, project_id: str, session_hash: str) -> None:
        """Forget every private task of ``project_id`` bound to ``session_hash``."""
        for key in [k for k, v in self._ledgers.items() if k[0] == project_id and session_of(v) == session_hash]:
            del self._ledgers[key]

    def count(self, project_id: str) -> int:
        return sum(1 for key in self._ledgers if key[0] == project_id)

    def all_events(self, project_id: str) -> list[Event]:
        """Every private event of the project (used for import collisions and long-term signal counts)."""
        return [ev for key, ledger in self._ledgers.items() if key[0] == project_id for ev in ledger]


__all__ = ["PrivateLedgers", "session_of"]
