"""Per-task summaries in the task index — ``s-<task>``, the counts listings show, and ``m-<task>``, the claim marks a
writer recounts them from — advanced by each append through the projection's own ``apply_event`` (no second fold).

Why: ``intentloop tasks`` folded every task (3.8–5.5 s, 461–497 MB at 100,000 events), and summaries holding the marks
still made a listing O(claims) (docs/BENCHMARK.md, "CLI reads"). Whatever is stored and does not vouch for the task's
records (missing, garbled per its digest, stale, another task's) is folded afresh from the task's lines, never believed.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import msgspec

from intentloop.errors import StorageError
from intentloop.model.claims import EPISTEMIC_STATUSES
from intentloop.model.events import Event
from intentloop.model.hook_events import HOOK_EVENTS
from intentloop.model.projection import CLAIM_BEARING_EVENTS, ProjectState, TaskState, apply_event
from intentloop.store._fs import create_exclusive, open_regular, read_regular, unlink_quietly
from intentloop.store._paths import ProjectPaths

if TYPE_CHECKING:
    from intentloop.store._index import IndexedLedger

SUMMARY_PREFIX = "s-"
MARKS_PREFIX = "m-"
#: Written into an index once a summary of every task is in it: a writer does not extend an index without it (one
#: built before task summaries existed) but rebuilds it, so no listing keeps folding summary-less tasks forever.
SUMMARIES_MARK = "summaries.v1"
#: Claim marks a whole-ledger build waits with in its index directory (``SummaryBuilder``), removed once written.
SPILL_PREFIX = "x-"
#: Claim marks a whole-ledger build holds before it spills them: at ~111 bytes each, about 7 MB.
SPILL_CLAIMS = 65_536
_MAX_FILE_BYTES = 64 * 1024 * 1024


#: The candidate types the hooks record for their observations (one per prompt, result and compaction).
OBSERVATION_TYPES: frozenset[str] = frozenset(e.records.candidate_type for e in HOOK_EVENTS if e.records is not None)


class TaskSummary(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One task as the listings see it: counts from the fold of its first ``events`` events.

    Attributes:
        task_id: the task.
        events: how many of the task's events it folds.
        first: where the task's first line starts in the ledger (byte offset): listings keep ledger order.
        started_at, label, mode, host_session_hash, recovered_from_private, last_event_at: as in ``TaskState``.
        latest: the greatest ``occurred_at`` of its events (a project's last activity).
        candidates: unconfirmed candidates (every kind: ``intent_status``'s and the snapshot's ``candidate_count``).
        observations: how many of them are the hooks' own observations (prompts, results, compactions), which grow
            with every turn: ``intentloop tasks`` counts them apart.
        malformed: records the fold skipped.
        claims: claims recorded (active, superseded and invalidated).
        active, superseded, invalidated: the claims by lifecycle (the order the projection applies).
        active_by_status: active claims by epistemic status (sorted).
        marks_at: how many events the task's claim marks (``m-<task_id>``, the writer's) fold.
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
    observations: int
    malformed: int
    claims: int
    active: int
    superseded: int
    invalidated: int
    active_by_status: dict[str, int]
    marks_at: int

    @property
    def started(self) -> bool:
        return self.started_at is not None

    def lifecycle(self) -> tuple[dict[str, int], dict[str, int]]:
        """Claims by lifecycle (``active``, ``superseded``, ``invalidated``) and active claims by epistemic status
        (sorted), as ``intentloop tasks`` lists them."""
        counts = {"active": self.active, "superseded": self.superseded, "invalidated": self.invalidated}
        return counts, dict(self.active_by_status)


class ClaimMarks(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a writer needs to advance a task's claim counts: each claim's ``[epistemic_status, supersedes]`` and the
    invalidated ids, as the fold of the task's first ``events`` events leaves them."""

    task_id: str
    events: int
    claims: dict[str, tuple[str, tuple[str, ...]]]
    invalidated: tuple[str, ...]


#: The marks of a claim that supersedes nothing, one shared tuple per known status: a rebuild holds the marks of every
#: claim of the ledger until it writes them, and a tuple and a status string of their own were 113 of ~224 bytes each.
_PLAIN_MARKS: dict[str, tuple[str, tuple[str, ...]]] = {status: (status, ()) for status in EPISTEMIC_STATUSES}


class _NeedsMarks(Exception):
    """An event that can change claims met a fold that does not hold the task's claim marks."""


class _Fold:
    """A task's summary being folded: the real fold applied one event at a time to a task that holds only the
    summary's scalars; claims, invalidations and candidates it records are moved into the marks and counts."""

    __slots__ = (
        "_state",
        "candidates",
        "claims",
        "counts",
        "events",
        "first",
        "invalidated",
        "latest",
        "malformed",
        "marks_at",
        "observations",
        "task",
    )

    def __init__(
        self, task_id: str, first: int, summary: TaskSummary | None = None, marks: ClaimMarks | None = None
    ) -> None:
        self.task = TaskState(task_id)
        self._state = ProjectState()
        self._state.tasks[task_id] = self.task
        self.first = first
        self.events = 0
        self.latest: str | None = None
        self.candidates = 0
        self.observations = 0
        self.malformed = 0
        self.marks_at = 0
        # The claim marks (``None``: not held; only events that cannot change claims may then be added).
        self.claims: dict[str, tuple[str, tuple[str, ...]]] | None = {}
        self.invalidated: set[str] = set()
        self.counts: tuple[int, int, int, int, dict[str, int]] = (0, 0, 0, 0, {})
        if summary is not None:
            task = self.task
            task.started_at, task.label, task.mode = summary.started_at, summary.label, summary.mode
            task.host_session_hash, task.last_event_at = summary.host_session_hash, summary.last_event_at
            task.recovered_from_private = summary.recovered_from_private
            self.first, self.events, self.latest = summary.first, summary.events, summary.latest
            self.candidates, self.malformed, self.marks_at = summary.candidates, summary.malformed, summary.marks_at
            self.observations = summary.observations
            self.counts = (
                summary.claims,
                summary.active,
                summary.superseded,
                summary.invalidated,
                dict(summary.active_by_status),
            )
            self.claims = None if marks is None else dict(marks.claims)
            self.invalidated = set() if marks is None else set(marks.invalidated)

    def add(self, event: Event) -> None:
        task = self.task
        claims = self.claims
        if claims is None and event.event_type in CLAIM_BEARING_EVENTS:
            raise _NeedsMarks
        apply_event(self._state, event)
        self.events += 1
        if self.latest is None or event.occurred_at > self.latest:
            self.latest = event.occurred_at
        if claims is not None and event.event_type in CLAIM_BEARING_EVENTS:
            self.marks_at = self.events
        if task.claims:
            assert claims is not None
            for claim_id, claim in task.claims.items():
                # A re-recorded claim replaces its marks: its old ``supersedes`` go with it, as in the fold.
                mark = None if claim.supersedes else _PLAIN_MARKS.get(claim.epistemic_status)
                claims[claim_id] = mark or (claim.epistemic_status, tuple(claim.supersedes))
            task.claims.clear()
            task.superseded_by.clear()
            task.recorded_at.clear()
        if task.invalidations:
            self.invalidated.update(task.invalidations)
            task.invalidations.clear()
        if task.candidates:
            self.candidates += len(task.candidates)
            self.observations += sum(1 for c in task.candidates if c.candidate_type in OBSERVATION_TYPES)
            task.candidates.clear()
        self.malformed += task.malformed
        task.malformed = 0
        task.requests.clear()

    def _counted(self) -> tuple[int, int, int, int, dict[str, int]]:
        if self.claims is None:
            return self.counts
        superseded = {old for _status, supersedes in self.claims.values() for old in supersedes}
        active = gone = invalidated = 0
        by_status: dict[str, int] = {}
        for claim_id, (status, _supersedes) in self.claims.items():
            if claim_id in self.invalidated:
                invalidated += 1
            elif claim_id in superseded:
                gone += 1
            else:
                active += 1
                by_status[status] = by_status.get(status, 0) + 1
        return len(self.claims), active, gone, invalidated, dict(sorted(by_status.items()))

    def summary(self) -> TaskSummary:
        task = self.task
        claims, active, superseded, invalidated, by_status = self._counted()
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
            observations=self.observations,
            malformed=self.malformed,
            claims=claims,
            active=active,
            superseded=superseded,
            invalidated=invalidated,
            active_by_status=by_status,
            marks_at=self.marks_at,
        )

    def marks(self) -> ClaimMarks | None:
        if self.claims is None:
            return None
        return ClaimMarks(
            task_id=self.task.task_id,
            events=self.marks_at,
            claims=self.claims,
            invalidated=tuple(sorted(self.invalidated)),
        )

    def write(self, directory: Path, *, marks: bool = True) -> None:
        """Write the marks (when held and ``marks``), then the summary (so a summary never names marks not there).

        Raises:
            OSError: a file could not be written.
        """
        held = self.marks() if marks else None
        if held is not None:
            _write(directory, MARKS_PREFIX, held.task_id, _encoder.encode(held))
        summary = self.summary()
        _write(directory, SUMMARY_PREFIX, summary.task_id, _encoder.encode(summary))


class SummaryBuilder:
    """Folds events, in ledger order, into one summary per task: feed it a whole ledger (an index rebuild, a reader's
    fallback) with :meth:`add` (as many times as it comes in pieces), or a task's events with :meth:`add_task`, then
    take :meth:`summaries` or :meth:`write` them. Memory: the marks of every claim, not the events — or, given a
    ``spill`` directory (the index being built), at most ``SPILL_CLAIMS`` of them plus the largest task's while
    writing: the others wait in that directory, in order, and are read back one task at a time by :meth:`write`."""

    def __init__(self, spill: Path | None = None) -> None:
        self._folds: dict[str, _Fold] = {}
        self._spill = spill
        self._spilled: set[str] = set()  # tasks with marks waiting in the spill directory
        self._spill_failed = False
        self._carried: dict[str, TaskSummary] = {}  # summaries taken as they are stored (:meth:`carry`)
        self._carried_from: Path | None = None

    def carry(self, summaries: Mapping[str, TaskSummary], source: Path) -> None:
        """Take these tasks' stored summaries, and their claim marks from the index directory ``source``, instead of
        folding their events (which are then not added): a rewrite that leaves every event of a task as it was only
        moves where the task's first line starts."""
        self._carried = dict(summaries)
        self._carried_from = source

    def carried(self) -> Collection[str]:
        """The tasks whose summaries are carried (their events are not to be added)."""
        return self._carried.keys()

    def add(self, events: Iterable[Event]) -> None:
        """Fold the next events of the ledger (any tasks)."""
        folds = self._folds
        for event in events:
            fold = folds.get(event.task_id)
            if fold is None:
                fold = folds[event.task_id] = _Fold(event.task_id, len(folds))
            fold.add(event)
        spill = self._spill
        if spill is not None and not self._spill_failed and _held_marks(folds.values()) > SPILL_CLAIMS:
            self._spill_marks(spill)

    def _spill_marks(self, directory: Path) -> None:
        """Append every held claim mark to its task's spill file (one line per task and spill) and let go of them."""
        try:
            for task_id, fold in self._folds.items():
                if fold.claims:
                    _append(directory / f"{SPILL_PREFIX}{task_id}", _encoder.encode(list(fold.claims.items())) + b"\n")
                    self._spilled.add(task_id)
                    fold.claims = {}
        except OSError:
            self._spill_failed = True  # :meth:`write` gives the index up; until then the marks are held

    def add_task(self, task_id: str, events: Iterable[Event], first: int) -> None:
        """Fold the events of one task (all of them, in ledger order; ``first``: the offset of its first line)."""
        fold = self._folds.get(task_id)
        if fold is None:
            fold = self._folds[task_id] = _Fold(task_id, first)
        for event in events:
            fold.add(event)

    def summaries(self) -> dict[str, TaskSummary]:
        """Task id → summary, in the order of each task's first event (``first`` counts tasks, unless given).

        Raises:
            OSError: spilled marks do not read back.
        """
        out: dict[str, TaskSummary] = {}
        for task_id, fold in self._folds.items():
            held = fold.claims
            if task_id in self._spilled and held is not None:
                assert self._spill is not None
                fold.claims = _read_spilled(self._spill / f"{SPILL_PREFIX}{task_id}", held)
            out[task_id] = fold.summary()
            fold.claims = held
        return out

    def write(self, directory: Path, firsts: Mapping[str, int], counts: Mapping[str, int] | None = None) -> None:
        """Write every summary and its claim marks into the index ``directory``, each with its task's first line
        offset from ``firsts`` (a task's spilled marks first read back, then removed); a carried summary must fold
        the number of events ``counts`` gives its task in the new index.

        Raises:
            OSError: a file could not be written or a spilled one read back, or a carried summary does not fold its
                task's events (the caller gives the index up).
        """
        if self._spill_failed:
            raise OSError("the claim marks could not be spilled")
        for task_id, summary in self._carried.items():
            if task_id in self._folds or task_id not in firsts:
                raise OSError(f"the carried summary of {task_id} does not describe the new ledger")
            if counts is None or counts.get(task_id) != summary.events:
                raise OSError(f"the carried summary of {task_id} folds another number of events")
            assert self._carried_from is not None
            _copy_marks(self._carried_from, directory, task_id)
            moved = msgspec.structs.replace(summary, first=firsts[task_id])
            _write(directory, SUMMARY_PREFIX, task_id, _encoder.encode(moved))
        for task_id, fold in self._folds.items():
            fold.first = firsts[task_id]
            if task_id in self._spilled:
                assert self._spill is not None and fold.claims is not None
                fold.claims = _read_spilled(self._spill / f"{SPILL_PREFIX}{task_id}", fold.claims)
            fold.write(directory)
            if task_id in self._spilled:
                fold.claims = {}  # written: one task's marks at a time
                assert self._spill is not None
                os.unlink(self._spill / f"{SPILL_PREFIX}{task_id}")
        create_exclusive(directory / SUMMARIES_MARK, b"", sync=False)


def _copy_marks(source: Path, directory: Path, task_id: str) -> None:
    """Copy the claim marks of ``task_id`` from the index ``source`` into ``directory`` byte for byte (their content
    names no offset); none when there are none, or they cannot be read safely (a writer then folds the task afresh
    when it needs them, as it does for marks that do not match their summary).

    Raises:
        OSError: the copy could not be written.
    """
    try:
        got = read_regular(source / f"{MARKS_PREFIX}{task_id}")
    except StorageError:
        return
    if got is not None:
        create_exclusive(directory / f"{MARKS_PREFIX}{task_id}", got[0], sync=False)


def _held_marks(folds: Iterable[_Fold]) -> int:
    return sum(len(fold.claims) for fold in folds if fold.claims)


def _append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"short write to {path.name}")
    finally:
        os.close(fd)


def _read_spilled(path: Path, held: dict[str, tuple[str, tuple[str, ...]]]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """A task's claim marks: those spilled to ``path``, in order, then ``held`` (the later ones). A claim recorded
    again replaces its marks in place, as in one dictionary. Raises ``OSError`` when the file does not read back."""
    try:
        opened = open_regular(path)
    except StorageError as exc:
        raise OSError(f"{path.name} cannot be read back") from exc
    if opened is None:
        raise OSError(f"{path.name} is gone")
    marks: dict[str, tuple[str, tuple[str, ...]]] = {}
    with os.fdopen(opened[0], "rb") as spilled:  # a line (one spill of the task) at a time, never the whole file
        try:
            for line in spilled:
                for claim_id, (status, supersedes) in _spill_decoder.decode(line):
                    mark = None if supersedes else _PLAIN_MARKS.get(status)
                    marks[claim_id] = mark or (status, supersedes)
        except msgspec.DecodeError as exc:
            raise OSError(f"{path.name} does not read back") from exc
    marks.update(held)
    return marks


def summarize(task_id: str, events: Iterable[Event], first: int) -> TaskSummary:
    """The summary of a task from all its events."""
    return _fold_all(task_id, events, first).summary()


def _fold_all(task_id: str, events: Iterable[Event], first: int) -> _Fold:
    fold = _Fold(task_id, first)
    for event in events:
        fold.add(event)
    return fold


def update_summaries(paths: ProjectPaths, index: str, events: Sequence[Event], start: int, end: int) -> None:
    """After the index ``index`` was extended by ``events`` (whose lines fill bytes ``start`` to ``end``), advance the
    summary of each task they touch by those events alone (with the task's claim marks when one of them can change
    claims); a task whose stored summary or marks do not vouch for its earlier events is folded afresh from its events
    read through the index. A task whose files cannot be written loses its summary (readers then fold the task).
    Never raises: the summaries are a cache."""
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
                fold: _Fold | None = _fold_all(task_id, added, firsts[task_id])
            else:
                fold = _advanced(directory, task_id, before, added)
                if fold is None:
                    fold = _refolded(paths, directory, task_id, end)
            if fold is None:
                _drop(directory, task_id)
            else:
                fold.write(directory)
        except Exception:  # a cache: any failure only costs readers a fold of the task
            _drop(directory, task_id)


def _advanced(directory: Path, task_id: str, before: int, added: Sequence[Event]) -> _Fold | None:
    """The stored summary of the task's first ``before`` events advanced by ``added`` (``None``: what is stored does
    not vouch for them)."""
    summary = read_summary(directory, task_id, before)
    if summary is None:
        return None
    marks = None
    if any(event.event_type in CLAIM_BEARING_EVENTS for event in added):
        marks = _read(directory, MARKS_PREFIX, task_id, _marks_decoder)
        if marks is None or marks.task_id != task_id or marks.events != summary.marks_at:
            return None
    fold = _Fold(task_id, summary.first, summary, marks)
    try:
        for event in added:
            fold.add(event)
    except _NeedsMarks:
        return None
    return fold


def _refolded(paths: ProjectPaths, directory: Path, task_id: str, size: int) -> _Fold | None:
    """The task folded from all its events, read through the index (``None``: the index cannot vouch for them)."""
    from intentloop.store._index import IndexedLedger, _read_counts

    opened = open_regular(paths.ledger_path)
    if opened is None:
        return None
    # The writer's own counts, just extended under the lock from an index whose seal it checked first.
    indexed = IndexedLedger(paths, opened[0], size, directory, 0, _read_counts(directory))
    try:
        events = indexed.task_events(task_id)
        first = indexed.first_offset(task_id)
    finally:
        indexed.close()
    if not events or first is None:
        return None
    return _fold_all(task_id, events, first)


def _drop(directory: Path, task_id: str) -> None:
    unlink_quietly(directory / f"{SUMMARY_PREFIX}{task_id}")
    unlink_quietly(directory / f"{MARKS_PREFIX}{task_id}")


def indexed_summary(indexed: IndexedLedger, task_id: str) -> TaskSummary | None:
    """A task's summary folded from its events read through ``indexed`` (``None``: the index cannot vouch for them)."""
    events = indexed.task_events(task_id)
    first = indexed.first_offset(task_id)
    if events is None or not events or first is None:
        return None
    return summarize(task_id, events, first)


class _Stored(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    check: str  # sha256 of the encoded record: a garbled file is noticed even when it still decodes
    body: msgspec.Raw


_T = TypeVar("_T")
_summary_decoder = msgspec.json.Decoder(TaskSummary)
_marks_decoder = msgspec.json.Decoder(ClaimMarks)
_stored_decoder = msgspec.json.Decoder(_Stored)
_encoder = msgspec.json.Encoder()
_spill_decoder = msgspec.json.Decoder(list[tuple[str, tuple[str, tuple[str, ...]]]])


def summary_file(task_id: str) -> str:
    return f"{SUMMARY_PREFIX}{task_id}"


def _write(directory: Path, prefix: str, task_id: str, body: bytes) -> None:
    """Replace ``<prefix><task_id>`` in the index ``directory`` (temp file + rename; no fsync: it is a cache)."""
    data = _encoder.encode(_Stored(check=hashlib.sha256(body).hexdigest(), body=msgspec.Raw(body)))
    target = directory / f"{prefix}{task_id}"
    temp = directory / f"{prefix}{task_id}.{uuid.uuid4()}.tmp"
    try:
        create_exclusive(temp, data, sync=False)
        os.replace(temp, target)
    except OSError:
        unlink_quietly(temp)
        raise


def _read(directory: Path, prefix: str, task_id: str, decoder: msgspec.json.Decoder[_T]) -> _T | None:
    """The intact record ``<prefix><task_id>``, or ``None`` (missing, unsafe, garbled). Never raises."""
    try:
        got = read_regular(directory / f"{prefix}{task_id}")
    except Exception:
        return None
    if got is None or len(got[0]) > _MAX_FILE_BYTES:
        return None
    try:
        stored = _stored_decoder.decode(got[0])
        body = bytes(stored.body)
        if hashlib.sha256(body).hexdigest() != stored.check:
            return None
        return decoder.decode(body)
    except (msgspec.DecodeError, ValueError):
        return None


def read_summary(directory: Path, task_id: str, events: int) -> TaskSummary | None:
    """The stored summary of ``task_id`` when it folds exactly ``events`` events and is intact; ``None`` otherwise
    (missing, unsafe, garbled, stale or another task's: fold the task instead). Never raises."""
    summary = _read(directory, SUMMARY_PREFIX, task_id, _summary_decoder)
    if summary is None or summary.task_id != task_id or summary.events != events:
        return None
    return summary


__all__ = [
    "MARKS_PREFIX",
    "SUMMARIES_MARK",
    "SUMMARY_PREFIX",
    "ClaimMarks",
    "SummaryBuilder",
    "TaskSummary",
    "indexed_summary",
    "read_summary",
    "summarize",
    "summary_file",
    "update_summaries",
]
