"""An immutable, verified view of one project's ledger, with the indexes the service asks for.

Indexes are built on first use and hold positions into ``events``. When a write extends a view, the new view takes
the old one's index dictionaries over and adds the new events to them (O(new events)); the old view keeps answering
correctly by ignoring positions at or past its own length, and gives up the right to extend them again, so a second
extension of the same old view (a branch) copies them instead. Why: copying the request index made every append
O(n) (7 ms of an append at 100,000 events).

A lean store (the server's) hands out views whose ``events`` are a :class:`~intentloop.store._lines.LineEvents`: offsets
into the verified file, decoded when asked for; its per-task positions are kept while verifying, so such a view builds
no index of its own, and a task's events are read by offset (see ``_lines``).
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Collection, Sequence

from intentloop.model.events import Event
from intentloop.store._lines import LineEvents

_handover = threading.Lock()  # two threads extending the same view: one takes the indexes over, the other copies


class LedgerView:
    """The verified events of a ledger (a prefix of the file when it is damaged and was opened for recovery).

    Attributes:
        events: every verified event, in ledger order.
        head_hash: ``event_hash`` of the last event, ``None`` for an empty ledger.
        byte_length: size of the verified bytes.
    """

    __slots__ = ("_by_request", "_by_task", "_owner", "byte_length", "events", "head_hash")

    def __init__(self, events: Sequence[Event] = (), head_hash: str | None = None, byte_length: int = 0) -> None:
        self.events = events
        self.head_hash = head_hash
        self.byte_length = byte_length
        self._by_request: dict[tuple[str, str], int] | None = None
        self._by_task: dict[str, list[int]] | None = None
        self._owner = True  # whether this view may add to its index dictionaries (the newest view sharing them)

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"LedgerView(events={len(self.events)}, head_hash={self.head_hash!r})"

    def find_request(self, task_id: str, request_id: str) -> Event | None:
        """The first event written for ``request_id`` in ``task_id`` (idempotency), or ``None``."""
        if isinstance(self.events, LineEvents):
            return next((e for e in self.by_task(task_id) if e.request_id == request_id), None)
        if self._by_request is None:
            self._build()
        assert self._by_request is not None
        position = self._by_request.get((task_id, request_id))
        if position is None or position >= len(self.events):
            return None
        return self.events[position]

    def by_task(self, task_id: str) -> tuple[Event, ...]:
        """The events of one task, in ledger order."""
        if isinstance(self.events, LineEvents):
            return tuple(self.events.pick(self.events.positions(task_id)))
        if self._by_task is None:
            self._build()
        assert self._by_task is not None
        positions = self._by_task.get(task_id, [])
        end = bisect_left(positions, len(self.events))
        return tuple(self.events[i] for i in positions[:end])

    def of_types(self, event_types: Collection[str]) -> list[Event]:
        """The events of these types, in ledger order (a lean view reads only them)."""
        if isinstance(self.events, LineEvents):
            return self.events.pick(self.events.of_types(event_types))
        return [event for event in self.events if event.event_type in event_types]

    def task_ids(self) -> tuple[str, ...]:
        """Every task id, in order of first appearance."""
        if isinstance(self.events, LineEvents):
            return self.events.task_ids()
        if self._by_task is None:
            self._build()
        assert self._by_task is not None
        count = len(self.events)
        return tuple(task for task, positions in list(self._by_task.items()) if positions and positions[0] < count)

    def extended(self, new_events: Sequence[Event], byte_length: int) -> LedgerView:
        """A new view with ``new_events`` appended; built indexes are taken over (or, from a view that already
        handed them on, copied) and extended."""
        if isinstance(self.events, LineEvents):
            return LedgerView(
                self.events.extended(new_events, byte_length),
                new_events[-1].event_hash if new_events else self.head_hash,
                byte_length,
            )
        view = LedgerView(
            tuple(self.events) + tuple(new_events),
            new_events[-1].event_hash if new_events else self.head_hash,
            byte_length,
        )
        if self._by_request is not None and self._by_task is not None:
            with _handover:
                owner, self._owner = self._owner, False
            if owner:
                by_request, by_task = self._by_request, self._by_task
            else:
                count = len(self.events)
                by_request = {k: p for k, p in self._by_request.items() if p < count}
                by_task = {}
                for task, positions in list(self._by_task.items()):
                    kept = positions[: bisect_left(positions, count)]
                    if kept:
                        by_task[task] = kept
            position = len(self.events)
            for event in new_events:
                by_request.setdefault((event.task_id, event.request_id), position)
                by_task.setdefault(event.task_id, []).append(position)
                position += 1
            view._by_request, view._by_task = by_request, by_task
        return view

    def _build(self) -> None:
        by_request: dict[tuple[str, str], int] = {}
        by_task: dict[str, list[int]] = {}
        for position, event in enumerate(self.events):
            by_request.setdefault((event.task_id, event.request_id), position)
            by_task.setdefault(event.task_id, []).append(position)
        self._by_request, self._by_task = by_request, by_task


EMPTY_VIEW = LedgerView()

__all__ = ["EMPTY_VIEW", "LedgerView"]
