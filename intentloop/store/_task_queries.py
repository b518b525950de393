"""Task-level answers for a reader: one task's events, and every task with what listings count (``ProjectStore.tasks``).

When the checkpoint matches the ledger exactly and its task index covers it, they are read from the index (a task's
own lines; the per-task summaries of ``_summary``, any of which that does not vouch for its task's records is folded
afresh from them); otherwise the whole ledger is read and verified, as before. Why: a one-shot CLI read that folded
the whole ledger took 3.8–8.7 s and 461–497 MB at 100,000 events (docs/BENCHMARK.md, "CLI reads").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from intentloop.store._summary import SummaryBuilder, TaskSummary, indexed_summary, read_summary

if TYPE_CHECKING:
    from intentloop.errors import CorruptLedgerError
    from intentloop.model.events import Event
    from intentloop.model.projection import TaskState
    from intentloop.store._index import IndexedLedger
    from intentloop.store._project import ProjectStore


class TaskListing:
    """Every task of a ledger (or of its verified prefix) as listings see it.

    Attributes:
        tasks: one summary per task with an event, in the order of each task's first event.
        events: how many events the listing covers (the verified prefix of a damaged ledger).
        damage: the first problem after the verified prefix (``None``: the ledger is intact).
    """

    __slots__ = ("damage", "events", "tasks")

    def __init__(self, tasks: tuple[TaskSummary, ...], events: int, damage: CorruptLedgerError | None) -> None:
        self.tasks = tasks
        self.events = events
        self.damage = damage

    def started(self) -> list[TaskSummary]:
        """The tasks that exist for readers (those with a ``task_started`` event)."""
        return [task for task in self.tasks if task.started]

    def get(self, task_id: str) -> TaskSummary | None:
        return next((task for task in self.tasks if task.task_id == task_id), None)

    @property
    def last_activity(self) -> str | None:
        """The greatest ``occurred_at`` of the listed events."""
        return max((task.latest for task in self.tasks if task.latest is not None), default=None)

    @property
    def claim_count(self) -> int:
        """Claims of the started tasks (active, superseded and invalidated)."""
        return sum(task.claims for task in self.started())

    @property
    def candidate_count(self) -> int:
        """Candidates of every task."""
        return sum(task.candidates for task in self.tasks)


def list_tasks(store: ProjectStore) -> TaskListing:
    """Every task of ``store``'s ledger with its summary (lock-free; creates nothing).

    Raises:
        StorageError: path-safety refusals and I/O failures of the full read.
    """
    indexed = store.indexed()
    if indexed is not None:
        try:
            listing = _from_index(indexed)
        finally:
            indexed.close()
        if listing is not None:
            return listing
    verification = store.verify()
    builder = SummaryBuilder()
    builder.add(verification.events)
    return TaskListing(tuple(builder.summaries().values()), len(verification.events), verification.error)


def _from_index(indexed: IndexedLedger) -> TaskListing | None:
    """The listing from the index's summaries (a stale one folded afresh from its task's lines); ``None`` when the
    index cannot vouch for every line."""
    counts = indexed.task_counts()
    if counts is None or indexed.lines is None or sum(counts.values()) != indexed.lines:
        return None
    summaries: list[TaskSummary] = []
    for task_id, count in counts.items():
        summary = read_summary(indexed.directory, task_id, count)
        if summary is None:
            summary = indexed_summary(indexed, task_id)
            if summary is None or summary.events != count:
                return None
        summaries.append(summary)
    summaries.sort(key=lambda summary: summary.first)
    return TaskListing(tuple(summaries), indexed.lines, None)


def task_events(store: ProjectStore, task_id: str) -> tuple[Event, ...]:
    """The events of one task in ledger order, verified; empty when the ledger holds none (lock-free).

    Raises:
        CorruptLedgerError: as :meth:`ProjectStore.read` (only when the index cannot answer).
        StorageError: as :meth:`ProjectStore.read`.
    """
    events = _indexed_events(store, task_id)
    return store.read().by_task(task_id) if events is None else tuple(events)


def task(store: ProjectStore, task_id: str) -> TaskState | None:
    """The fold of one task's events (``None``: the ledger holds none); a process that holds the ledger as it is
    answers from its view's kept folds, any other reads the task's lines through the index (lock-free).

    Raises:
        CorruptLedgerError, StorageError: as :func:`task_events`.
    """
    events = _indexed_events(store, task_id)
    if events is None:
        return store.read().task(task_id)
    from intentloop.model.projection import project

    return project(events).tasks.get(task_id)


def _indexed_events(store: ProjectStore, task_id: str) -> list[Event] | None:
    """The task's events through the index, unless this process verified the file as it is (its view answers) or
    the index cannot vouch for them (``None`` either way)."""
    if store.is_cached():
        return None
    indexed = store.indexed()
    if indexed is None:
        return None
    try:
        return indexed.task_events(task_id)
    finally:
        indexed.close()


__all__ = ["TaskListing", "list_tasks", "task", "task_events"]
