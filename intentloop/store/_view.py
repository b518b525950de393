"""An immutable, verified view of one project's ledger, and the task-level questions asked of it.

A store's views hold offsets into the verified file (:class:`~intentloop.store._lines.LineEvents`): the lines of a
task, of an event type, are found from the records kept while verifying, read back and checked against their hashes,
and a task's fold is kept for the next ask. A view made of decoded events exists only briefly (the one a rewrite or a
ledger's first append leaves, which the store does not keep) or for a damaged ledger's verified prefix (recovery):
its questions are answered by a pass over its events.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from intentloop.model.events import Event
from intentloop.store._lines import LineEvents

if TYPE_CHECKING:
    from intentloop.model.projection import TaskState


class LedgerView:
    """The verified events of a ledger (a prefix of the file when it is damaged and was opened for recovery).

    Attributes:
        events: every verified event, in ledger order.
        head_hash: ``event_hash`` of the last event, ``None`` for an empty ledger.
        byte_length: size of the verified bytes.
    """

    __slots__ = ("byte_length", "events", "head_hash")

    def __init__(self, events: Sequence[Event] = (), head_hash: str | None = None, byte_length: int = 0) -> None:
        self.events = events
        self.head_hash = head_hash
        self.byte_length = byte_length

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"LedgerView(events={len(self.events)}, head_hash={self.head_hash!r})"

    def find_request(self, task_id: str, request_id: str) -> Event | None:
        """The first event written for ``request_id`` in ``task_id`` (idempotency), or ``None``."""
        return next((e for e in self.by_task(task_id) if e.request_id == request_id), None)

    def by_task(self, task_id: str) -> tuple[Event, ...]:
        """The events of one task, in ledger order."""
        if isinstance(self.events, LineEvents):
            return tuple(self.events.pick(self.events.positions(task_id)))
        return tuple(event for event in self.events if event.task_id == task_id)

    def task(self, task_id: str) -> TaskState | None:
        """The fold of one task's events (``None``: the view has none of them); an offsets view keeps it for the next
        ask and extends it with later appends (:meth:`~intentloop.store._lines.LineEvents.fold`)."""
        if isinstance(self.events, LineEvents):
            return self.events.fold(task_id)
        from intentloop.model.projection import project

        return project(self.by_task(task_id)).tasks.get(task_id)

    def candidate_count(self) -> int:
        """Candidates of every task (only the tasks with an event that can carry one are folded)."""
        if isinstance(self.events, LineEvents):
            return self.events.candidate_count()
        from intentloop.model.projection import CANDIDATE_BEARING_EVENTS

        carriers = {event.task_id for event in self.of_types(CANDIDATE_BEARING_EVENTS)}
        return sum(len(task.candidates) for task in map(self.task, carriers) if task is not None)

    def of_types(self, event_types: Collection[str]) -> list[Event]:
        """The events of these types, in ledger order (an offsets view reads only them)."""
        if isinstance(self.events, LineEvents):
            return self.events.pick(self.events.of_types(event_types))
        return [event for event in self.events if event.event_type in event_types]

    def task_ids(self) -> tuple[str, ...]:
        """Every task id, in order of first appearance."""
        if isinstance(self.events, LineEvents):
            return self.events.task_ids()
        return tuple(dict.fromkeys(event.task_id for event in self.events))

    def extended(self, new_events: Sequence[Event], byte_length: int) -> LedgerView:
        """A new view with ``new_events`` appended (an offsets view shares its records with the new one)."""
        head = new_events[-1].event_hash if new_events else self.head_hash
        if isinstance(self.events, LineEvents):
            return LedgerView(self.events.extended(new_events, byte_length), head, byte_length)
        return LedgerView((*self.events, *new_events), head, byte_length)


EMPTY_VIEW = LedgerView()

__all__ = ["EMPTY_VIEW", "LedgerView"]
