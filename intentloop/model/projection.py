"""The current state of every task, folded from ledger events (docs/EVENTS.md, "The fold").

Why incremental: a long-running server keeps one :class:`ProjectState` per verified ledger and folds only the events
appended since (:func:`apply_event`, or :func:`project` with ``state=``), so a read of a 10,000-event ledger costs no
re-projection. The fold follows the original exactly: later records of a claim id overwrite earlier ones in place,
``mode_set`` moves the session only when it carries ``host_session_hash``, malformed records are skipped (counted).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import msgspec

from intentloop.model.claims import Candidate, Claim, SourceRef
from intentloop.model.events import Event
from intentloop.model.ids import parse_time
from intentloop.model.payloads import (
    PAYLOAD_TYPES,
    CandidateRecorded,
    ClaimInvalidated,
    ClaimRecorded,
    GraphImported,
    ModeSet,
    Payload,
    TaskStarted,
    decode_payload,
)


def _events_read_as(*kinds: type[Payload]) -> frozenset[str]:
    return frozenset(name for name, kind in PAYLOAD_TYPES.items() if kind in kinds)


#: The events that can add a candidate to their task (a task without any has none).
CANDIDATE_BEARING_EVENTS = _events_read_as(CandidateRecorded, GraphImported)
#: The events that can record or invalidate a claim of their task (any other leaves its claims as they were).
CLAIM_BEARING_EVENTS = _events_read_as(ClaimRecorded, ClaimInvalidated, GraphImported, TaskStarted)
#: The events that decide a task's session binding (``started_at``, ``host_session_hash``; :func:`task_for_session`).
BINDING_EVENTS = _events_read_as(TaskStarted, ModeSet)


class Invalidation(msgspec.Struct, frozen=True, kw_only=True):
    """Why and when a claim left the current view by ``claim_invalidated`` (or an imported invalidation)."""

    claim_id: str
    invalidated_at: str
    reason: str | None
    source_ref: SourceRef | None
    event_id: str
    occurred_at: str


class TaskState:
    """Everything the projection knows about one task. Mutated only by :func:`apply_event`; read it, don't write it.

    Attributes:
        claims: every claim of the task by id, in first-recorded order (active, superseded and invalidated).
        invalidations: invalidated claim id → :class:`Invalidation`.
        superseded_by: claim id → ids of the claims whose ``supersedes`` name it, in record order.
        recorded_at: claim id → record time (the ``occurred_at`` of the event that last wrote the claim).
        requests: request id → the first event of this task that used it (idempotency look-ups).
        malformed: records skipped because they did not decode (a verified ledger written by a buggy writer).
    """

    __slots__ = (
        "candidates",
        "claims",
        "event_count",
        "host_session_hash",
        "invalidations",
        "label",
        "last_event_at",
        "malformed",
        "mode",
        "recorded_at",
        "recovered_from_private",
        "requests",
        "started_at",
        "superseded_by",
        "task_id",
    )

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.mode = "on"
        self.label: str | None = None
        self.host_session_hash: str | None = None
        self.started_at: str | None = None
        self.last_event_at: str | None = None
        self.recovered_from_private = False
        self.claims: dict[str, Claim] = {}
        self.invalidations: dict[str, Invalidation] = {}
        self.superseded_by: dict[str, list[str]] = {}
        self.recorded_at: dict[str, str] = {}
        self.candidates: list[Candidate] = []
        self.requests: dict[str, Event] = {}
        self.event_count = 0
        self.malformed = 0

    @property
    def started(self) -> bool:
        return self.started_at is not None

    @property
    def invalidated_claim_ids(self) -> list[str]:
        """Invalidated claim ids, sorted (the export's ``invalidated_claim_ids``)."""
        return sorted(self.invalidations)

    def is_active(self, claim_id: str) -> bool:
        """Recorded, not invalidated and not named in any claim's ``supersedes``."""
        return claim_id in self.claims and claim_id not in self.invalidations and claim_id not in self.superseded_by

    def active_claims(self) -> list[Claim]:
        """Active claims in record order."""
        return [c for cid, c in self.claims.items() if cid not in self.invalidations and cid not in self.superseded_by]

    def __repr__(self) -> str:
        return f"TaskState(task_id={self.task_id!r}, mode={self.mode!r}, claims={len(self.claims)})"


class ProjectState:
    """All tasks of one project ledger (or one private in-memory ledger) and how far the fold has got."""

    __slots__ = ("event_count", "head_hash", "tasks")

    def __init__(self) -> None:
        self.tasks: dict[str, TaskState] = {}
        self.event_count = 0
        self.head_hash: str | None = None

    def task(self, task_id: str) -> TaskState | None:
        return self.tasks.get(task_id)

    def started_task(self, task_id: str) -> TaskState | None:
        """The task when it has a ``task_started`` event (else it does not exist for readers)."""
        state = self.tasks.get(task_id)
        return state if state is not None and state.started else None


def _put_claim(task: TaskState, claim: Claim, at: str) -> None:
    previous = task.claims.get(claim.claim_id)
    if previous is not None:
        for old in previous.supersedes:
            by = task.superseded_by.get(old)
            if by is not None and claim.claim_id in by:
                by.remove(claim.claim_id)
                if not by:
                    del task.superseded_by[old]
    task.claims[claim.claim_id] = claim
    task.recorded_at[claim.claim_id] = at
    for old in claim.supersedes:
        task.superseded_by.setdefault(old, []).append(claim.claim_id)


def _invalidate(task: TaskState, event: Event, claim_id: str | None, payload: ClaimInvalidated | None) -> None:
    if claim_id is None or claim_id in task.invalidations:
        return
    at = payload.invalidated_at if payload is not None else None
    task.invalidations[claim_id] = Invalidation(
        claim_id=claim_id,
        invalidated_at=at if at is not None else event.occurred_at,
        reason=payload.reason if payload is not None else None,
        source_ref=payload.source_ref if payload is not None else None,
        event_id=event.event_id,
        occurred_at=event.occurred_at,
    )


def apply_event(state: ProjectState, event: Event) -> TaskState:
    """Fold one event into ``state`` (in ledger order) and return the task it touched."""
    task = state.tasks.get(event.task_id)
    if task is None:
        task = state.tasks[event.task_id] = TaskState(event.task_id)
    state.event_count += 1
    state.head_hash = event.event_hash
    task.event_count += 1
    task.last_event_at = event.occurred_at
    task.requests.setdefault(event.request_id, event)
    decoded = decode_payload(event.event_type, event.payload)
    task.malformed += decoded.malformed
    at = event.occurred_at
    match decoded.payload:
        case ClaimRecorded(claim=claim):
            if claim is not None:
                _put_claim(task, claim, at)
        case CandidateRecorded(candidate=candidate):
            if candidate is not None:
                task.candidates.append(candidate)
        case TaskStarted() as started:
            task.started_at = at
            if started.mode is not None:
                task.mode = started.mode
            task.label = started.label
            task.host_session_hash = started.host_session_hash
            task.recovered_from_private = started.recovered_from_private
            for claim in started.initial_claims:
                _put_claim(task, claim, at)
        case ModeSet(mode=mode, host_session_hash=session):
            if mode is not None:
                task.mode = mode
            if session is not msgspec.UNSET:
                task.host_session_hash = session
        case ClaimInvalidated() as invalidated:
            _invalidate(task, event, invalidated.claim_id, invalidated)
        case GraphImported() as imported:
            for claim in imported.claims:
                _put_claim(task, claim, at)
            for claim_id in imported.invalidated_claim_ids:
                _invalidate(task, event, claim_id, None)
            task.candidates.extend(imported.candidates)
    return task


def project(events: Iterable[Event], state: ProjectState | None = None) -> ProjectState:
    """Fold ``events`` into ``state`` (a new one when ``None``) and return it.

    To extend a cached state, pass only the events after ``state.event_count`` and check first that the next event's
    ``prev_hash`` is ``state.head_hash`` (a rewritten ledger — deletion — must be projected from scratch).
    """
    if state is None:
        state = ProjectState()
    for event in events:
        apply_event(state, event)
    return state


def project_task(events: Iterable[Event], task_id: str) -> TaskState:
    """The state of one task (an empty, unstarted one when it has no events)."""
    state = project(event for event in events if event.task_id == task_id)
    return state.tasks.get(task_id) or TaskState(task_id)


def project_task_as_of(events: Iterable[Event], task_id: str, as_of: datetime) -> TaskState:
    """The state of one task from its events recorded at or before ``as_of`` (record time: each ``occurred_at``).

    An event whose time does not parse is left out (it cannot be placed before any instant).
    """

    def recorded_by(event: Event) -> bool:
        try:
            return parse_time(event.occurred_at) <= as_of
        except ValueError:
            return False

    return project_task((e for e in events if e.task_id == task_id and recorded_by(e)), task_id)


class HistoryEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A claim that left the current view: ``status`` is ``superseded`` or ``invalidated``.

    ``by`` is the first superseding claim (``None`` for an invalidation), ``at`` the record time of the event that
    removed the claim, ``reason`` the invalidation's reason (``None`` for a supersession).
    """

    claim: Claim
    status: str
    by: str | None
    at: str
    reason: str | None


def claim_history(task: TaskState) -> list[HistoryEntry]:
    """Every superseded or invalidated claim of ``task``, oldest removal first (then by claim id).

    A claim both superseded and invalidated (possible through imports) is listed once, under the earlier removal.
    """
    entries: list[HistoryEntry] = []
    for claim_id, claim in task.claims.items():
        invalidation = task.invalidations.get(claim_id)
        by = task.superseded_by.get(claim_id)
        superseded = None
        if by:
            superseded = HistoryEntry(
                claim=claim, status="superseded", by=by[0], at=task.recorded_at.get(by[0], ""), reason=None
            )
        invalidated = None
        if invalidation is not None:
            invalidated = HistoryEntry(
                claim=claim, status="invalidated", by=None, at=invalidation.occurred_at, reason=invalidation.reason
            )
        if superseded is not None and (invalidated is None or superseded.at < invalidated.at):
            entries.append(superseded)
        elif invalidated is not None:
            entries.append(invalidated)
    entries.sort(key=lambda entry: (entry.at, entry.claim.claim_id))
    return entries


def task_for_session(state: ProjectState, session_hash: str) -> TaskState | None:
    """The started task bound to ``session_hash``: newest ``last_event_at`` first, then the larger task id."""
    best: TaskState | None = None
    for task in state.tasks.values():
        if task.started_at is None or task.host_session_hash != session_hash:
            continue
        if best is None or (task.last_event_at or "", task.task_id) > (best.last_event_at or "", best.task_id):
            best = task
    return best


def is_stale_long_term(claim: Claim, now: datetime) -> bool:
    """An inferred long-term claim unconfirmed for more than 90 days (an unreadable time counts as stale)."""
    from intentloop.model.validation import LONG_TERM_STALE  # here: validation compiles the redaction patterns

    if claim.scope != "long_term" or claim.epistemic_status != "inferred":
        return False
    try:
        confirmed = parse_time(claim.last_confirmed if claim.last_confirmed is not None else claim.valid_from)
    except ValueError:
        return True
    return now - confirmed > LONG_TERM_STALE


__all__ = [
    "BINDING_EVENTS",
    "CANDIDATE_BEARING_EVENTS",
    "CLAIM_BEARING_EVENTS",
    "HistoryEntry",
    "Invalidation",
    "ProjectState",
    "TaskState",
    "apply_event",
    "claim_history",
    "is_stale_long_term",
    "project",
    "project_task",
    "project_task_as_of",
    "task_for_session",
]
