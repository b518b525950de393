"""Per-task summaries in the task index: what ``tasks``, ``projects`` and ``status`` list, kept by the write path.

``s-<task_id>`` in the index directory is the fold of the task's first ``events`` records reduced to what listings
count (label, mode, times, candidates, and each claim's status and ``supersedes``); it is advanced by applying only
an append's new events, through the projection's own :func:`~intentloop.model.projection.apply_event` (one event at a
time onto an empty task carrying the summary's scalars), so no second set of fold rules exists. Why: counting claims
by status needs every task folded, which took 3.8–5.5 s and 461–497 MB of ``intentloop tasks`` at 100,000 events
(docs/BENCHMARK.md). A summary whose count differs from the task's records in ``counts.json``, or that is missing,
garbled (its ``check`` digest) or names another task, is recomputed from the task's events: never a wrong answer.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from intentloop.model.events import Event
from intentloop.model.projection import ProjectState, TaskState, apply_event
from intentloop.store._fs import create_exclusive, open_regular, read_regular, unlink_quietly
from intentloop.store._paths import ProjectPaths

if TYPE_CHECKING:
    from intentloop.store._index import IndexedLedger

SUMMARY_PREFIX = "s-"
_MAX_SUMMARY_BYTES = 64 * 1024 * 1024


class TaskSummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One task as the listings see it: the fold of its first ``events`` events, claims reduced to their marks.

    Attributes:
        task_id: the task.
        events: how many of the task's events it folds.
        first: where the task's first line starts in the ledger (byte offset): listings keep ledger order.
        started_at, label, mode, host_session_hash, recovered_from_private, last_event_at: as in ``TaskState``.
        latest: the greatest ``occurred_at`` of its events (a project's last activity).
        candidates: unconfirmed candidates.
        malformed: records the fold skipped.
        claims: claim id → ``[epistemic_status, supersedes]``, in first-recorded order.
        invalidated: invalidated claim ids (sorted; they need not name a claim of the task).
    """

    task_id: str
    events: int
    first: int
    started_at: str | None
    label: str | None
    mode: str
    host_session_hash: str | None
    recovered_from_private: bool
    last_event_at: str | None
    latest: str | None
    candidates: int
    malformed: int
    claims: dict[str, tuple[str, tuple[str, ...]]]
    invalidated: tuple[str, ...]

    @property
    def started(self) -> bool:
        return self.started_at is not None

    def claim_status(self, claim_id: str) -> str:
        """``invalidated``, ``superseded`` or ``active`` (the order the projection applies)."""
        if claim_id in self.invalidated:
            return "invalidated"
        if any(claim_id in supersedes for _status, supersedes in self.claims.values()):
            return "superseded"
        return "active"

    def lifecycle(self) -> tuple[dict[str, int], dict[str, int]]:
        """Claims by lifecycle (``active``, ``superseded``, ``invalidated``) and active claims by epistemic status
        (sorted), as ``intentloop tasks`` lists them."""
        superseded = {old for _status, supersedes in self.claims.values() for old in supersedes}
        invalidated = set(self.invalidated)
        counts = {"active": 0, "superseded": 0, "invalidated": 0}
        by_status: dict[str, int] = {}
        for claim_id, (status, _supersedes) in self.claims.items():
            if claim_id in invalidated:
                counts["invalidated"] += 1
            elif claim_id in superseded:
                counts["superseded"] += 1
            else:
                counts["active"] += 1
                by_status[status] = by_status.get(status, 0) + 1
        return counts, dict(sorted(by_status.items()))


class _Fold:
    """A task's summary being folded: the real fold applied one event at a time to a task that holds only the
    summary's scalars, whose claims, invalidations and candidates are then moved into the marks."""

    __slots__ = ("_state", "candidates", "claims", "events", "first", "invalidated", "latest", "malformed", "task")

    def __init__(self, task_id: str, first: int, summary: TaskSummary | None = None) -> None:
        self.task = TaskState(task_id)
        self._state = ProjectState()
        self._state.tasks[task_id] = self.task
        self.first = first
        self.events = 0
        self.latest: str | None = None
        self.candidates = 0
        self.malformed = 0
        self.claims: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.invalidated: set[str] = set()
        if summary is not None:
            task = self.task
            task.started_at, task.label, task.mode = summary.started_at, summary.label, summary.mode
            task.host_session_hash, task.last_event_at = summary.host_session_hash, summary.last_event_at
            task.recovered_from_private = summary.recovered_from_private
            self.first, self.events, self.latest = summary.first, summary.events, summary.latest
            self.candidates, self.malformed = summary.candidates, summary.malformed
            self.claims = dict(summary.claims)
            self.invalidated = set(summary.invalidated)

    def add(self, event: Event) -> None:
        task = self.task
        apply_event(self._state, event)
        self.events += 1
        if self.latest is None or event.occurred_at > self.latest:
            self.latest = event.occurred_at
        if task.claims:
            for claim_id, claim in task.claims.items():
                # A re-recorded claim replaces its marks: its old ``supersedes`` go with it, as in the fold.
                self.claims[claim_id] = (claim.epistemic_status, tuple(claim.supersedes))
            task.claims.clear()
            task.superseded_by.clear()
            task.recorded_at.clear()
        if task.invalidations:
            self.invalidated.update(task.invalidations)
            task.invalidations.clear()
        if task.candidates:
            self.candidates += len(task.candidates)
            task.candidates.clear()
        self.malformed += task.malformed
        task.malformed = 0
        task.requests.clear()

    def summary(self) -> TaskSummary:
        task = self.task
        return TaskSummary(
            task_id=task.task_id,
            events=self.events,
            first=self.first,
            started_at=task.started_at,
            label=task.label,
            mode=task.mode,
            host_session_hash=task.host_session_hash,
            recovered_from_private=task.recovered_from_private,
            last_event_at=task.last_event_at,
            latest=self.latest,
            candidates=self.candidates,
            malformed=self.malformed,
            claims=self.claims,
            invalidated=tuple(sorted(self.invalidated)),
        )


class SummaryBuilder:
    """Folds events, in ledger order, into one summary per task: feed it a whole ledger (an index rebuild, a reader's
    fallback) with :meth:`add` (as many times as it comes in pieces), or a task's events with :meth:`add_task`, then
    take :meth:`summaries` or :meth:`write` them. Memory: the marks of every claim, not the events."""

    def __init__(self) -> None:
        self._folds: dict[str, _Fold] = {}

    def add(self, events: Iterable[Event]) -> None:
        """Fold the next events of the ledger (any tasks)."""
        folds = self._folds
        for event in events:
            fold = folds.get(event.task_id)
            if fold is None:
                fold = folds[event.task_id] = _Fold(event.task_id, len(folds))
            fold.add(event)

    def add_task(self, task_id: str, events: Iterable[Event], first: int) -> None:
        """Fold the events of one task (all of them, in ledger order; ``first``: the position of its first event)."""
        fold = self._folds.get(task_id)
        if fold is None:
            fold = self._folds[task_id] = _Fold(task_id, first)
        for event in events:
            fold.add(event)

    def summaries(self) -> dict[str, TaskSummary]:
        """Task id → summary, in the order of each task's first event (``first`` counts tasks, unless given)."""
        return {task_id: fold.summary() for task_id, fold in self._folds.items()}

    def write(self, directory: Path, firsts: Mapping[str, int]) -> None:
        """Write every summary into the index ``directory``, each with its task's first line offset from ``firsts``.

        Raises:
            OSError: a summary could not be written (the caller gives the index up).
        """
        for task_id, fold in self._folds.items():
            fold.first = firsts[task_id]
            write_summary(directory, fold.summary())


def advance(summary: TaskSummary, events: Sequence[Event]) -> TaskSummary:
    """``summary`` with the task's next ``events`` folded in (only those are read)."""
    fold = _Fold(summary.task_id, summary.first, summary)
    for event in events:
        fold.add(event)
    return fold.summary()


def summarize(task_id: str, events: Iterable[Event], first: int) -> TaskSummary:
    """The summary of a task from all its events."""
    builder = SummaryBuilder()
    builder.add_task(task_id, events, first)
    found = builder.summaries().get(task_id)
    return found if found is not None else _Fold(task_id, first).summary()


def update_summaries(paths: ProjectPaths, index: str, events: Sequence[Event], start: int, end: int) -> None:
    """After the index ``index`` was extended by ``events`` (whose lines fill bytes ``start`` to ``end``), advance the
    summary of each task they touch by those events alone; a task whose stored summary does not vouch for its earlier
    events is summarized afresh from its events read through the index. A summary that cannot be written is removed
    (readers then recompute it). Never raises: the summaries are a cache."""
    from intentloop.store._index import BINDINGS, _entries, _read_counts, _task_file

    directory = paths.project_dir / index
    new: dict[str, list[Event]] = {}
    for event in events:
        new.setdefault(event.task_id, []).append(event)
    counts = _read_counts(directory) or {}
    firsts: dict[str, int] | None = None
    for task_id, added in new.items():
        before = counts.get(_task_file(task_id), 0) - len(added)
        try:
            if before <= 0:
                if firsts is None:
                    spans = _entries(events, start, end)
                    firsts = {file[2:]: found[0][0] for file, found in spans.items() if file != BINDINGS}
                summary: TaskSummary | None = summarize(task_id, added, firsts[task_id])
            else:
                old = read_summary(directory, task_id, before)
                summary = advance(old, added) if old is not None else _recompute(paths, directory, task_id, end)
            if summary is None:
                unlink_quietly(directory / summary_file(task_id))
            else:
                write_summary(directory, summary)
        except Exception:  # a cache: any failure only costs readers a recomputation
            unlink_quietly(directory / summary_file(task_id))


def _recompute(paths: ProjectPaths, directory: Path, task_id: str, size: int) -> TaskSummary | None:
    """The summary of ``task_id`` from all its events, read through the index (``None``: the index cannot say)."""
    from intentloop.store._index import IndexedLedger

    opened = open_regular(paths.ledger_path)
    if opened is None:
        return None
    indexed = IndexedLedger(paths, opened[0], size, directory, 0)
    try:
        return indexed_summary(indexed, task_id)
    finally:
        indexed.close()


def indexed_summary(indexed: IndexedLedger, task_id: str) -> TaskSummary | None:
    """A task's summary folded from its events read through ``indexed`` (``None``: the index cannot vouch for them)."""
    events = indexed.task_events(task_id)
    first = indexed.first_offset(task_id)
    if events is None or not events or first is None:
        return None
    return summarize(task_id, events, first)


class _Stored(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    check: str  # sha256 of the encoded summary: a garbled file is noticed even when it still decodes
    summary: msgspec.Raw


_summary_decoder = msgspec.json.Decoder(TaskSummary)
_stored_decoder = msgspec.json.Decoder(_Stored)
_encoder = msgspec.json.Encoder()


def summary_file(task_id: str) -> str:
    return f"{SUMMARY_PREFIX}{task_id}"


def write_summary(directory: Path, summary: TaskSummary) -> None:
    """Replace ``s-<task_id>`` in the index ``directory`` (temp file + rename; no fsync: it is a cache).

    Raises:
        OSError: it could not be written.
    """
    body = _encoder.encode(summary)
    data = _encoder.encode(_Stored(check=hashlib.sha256(body).hexdigest(), summary=msgspec.Raw(body)))
    target = directory / summary_file(summary.task_id)
    temp = directory / f"{summary_file(summary.task_id)}.{uuid.uuid4()}.tmp"
    try:
        create_exclusive(temp, data, sync=False)
        os.replace(temp, target)
    except OSError:
        unlink_quietly(temp)
        raise


def read_summary(directory: Path, task_id: str, events: int) -> TaskSummary | None:
    """The stored summary of ``task_id`` when it folds exactly ``events`` events and is intact; ``None`` otherwise
    (missing, unsafe, garbled, stale or another task's: recompute it). Never raises."""
    try:
        got = read_regular(directory / summary_file(task_id))
    except Exception:
        return None
    if got is None or len(got[0]) > _MAX_SUMMARY_BYTES:
        return None
    try:
        stored = _stored_decoder.decode(got[0])
        body = bytes(stored.summary)
        if hashlib.sha256(body).hexdigest() != stored.check:
            return None
        summary = _summary_decoder.decode(body)
    except (msgspec.DecodeError, ValueError):
        return None
    if summary.task_id != task_id or summary.events != events:
        return None
    return summary


__all__ = [
    "SUMMARY_PREFIX",
    "SummaryBuilder",
    "TaskSummary",
    "advance",
    "indexed_summary",
    "read_summary",
    "summarize",
    "summary_file",
    "update_summaries",
    "write_summary",
]
