"""An immutable, verified view of one project's ledger, with the indexes the service asks for.

Indexes are built on first use and carried over (copied, never shared) when a write extends the view, so an
idempotency check after an append does not re-scan ten thousand events.
"""

from __future__ import annotations

from collections.abc import Sequence

from intentloop.model.events import Event


class LedgerView:
    """The verified events of a ledger (a prefix of the file when it is damaged and was opened for recovery).

    Attributes:
        events: every verified event, in ledger order.
        head_hash: ``event_hash`` of the last event, ``None`` for an empty ledger.
        byte_length: size of the verified bytes.
    """

    __slots__ = ("_by_request", "_by_task", "byte_length", "events", "head_hash")

    def __init__(self, events: tuple[Event, ...] = (), head_hash: str | None = None, byte_length: int = 0) -> None:
        self.events = events
        self.head_hash = head_hash
        self.byte_length = byte_length
        self._by_request: dict[tuple[str, str], Event] | None = None
        self._by_task: dict[str, list[Event]] | None = None

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"LedgerView(events={len(self.events)}, head_hash={self.head_hash!r})"

    def find_request(self, task_id: str, request_id: str) -> Event | None:
        """The first event written for ``request_id`` in ``task_id`` (idempotency), or ``None``."""
        if self._by_request is None:
            self._build()
        assert self._by_request is not None
        return self._by_request.get((task_id, request_id))

    def by_task(self, task_id: str) -> tuple[Event, ...]:
        """The events of one task, in ledger order."""
        if self._by_task is None:
            self._build()
        assert self._by_task is not None
        return tuple(self._by_task.get(task_id, ()))

    def task_ids(self) -> tuple[str, ...]:
        """Every task id, in order of first appearance."""
        if self._by_task is None:
            self._build()
        assert self._by_task is not None
        return tuple(self._by_task)

    def extended(self, new_events: Sequence[Event], byte_length: int) -> LedgerView:
        """A new view with ``new_events`` appended; built indexes are copied and extended."""
        view = LedgerView(
            self.events + tuple(new_events),
            new_events[-1].event_hash if new_events else self.head_hash,
            byte_length,
        )
        if self._by_request is not None and self._by_task is not None:
            by_request = dict(self._by_request)
            by_task = dict(self._by_task)
            touched: set[str] = set()
            for event in new_events:
                by_request.setdefault((event.task_id, event.request_id), event)
                if event.task_id not in touched:
                    by_task[event.task_id] = list(by_task.get(event.task_id, ()))
                    touched.add(event.task_id)
                by_task[event.task_id].append(event)
            view._by_request, view._by_task = by_request, by_task
        return view

    def _build(self) -> None:
        by_request: dict[tuple[str, str], Event] = {}
        by_task: dict[str, list[Event]] = {}
        for event in self.events:
            by_request.setdefault((event.task_id, event.request_id), event)
            by_task.setdefault(event.task_id, []).append(event)
        self._by_request, self._by_task = by_request, by_task


EMPTY_VIEW = LedgerView()

__all__ = ["EMPTY_VIEW", "LedgerView"]
