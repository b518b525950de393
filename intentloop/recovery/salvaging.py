"""Salvage: give back the intact events of a quarantined suffix, so one damaged line costs one event, not the rest.

A damaged line breaks the hash chain for everything after it, so quarantine sets the whole suffix aside (its raw bytes
kept 0600 in ``quarantine/``). Most of those lines are still whole events whose *own* ``event_hash`` verifies; only
their link to the broken chain is gone. Salvage re-appends each of them, in their original order, as a new event
(a fresh ``event_id``, the new chain's ``prev_hash`` and ``event_hash``; type, task, actor, request id, time and
payload unchanged) through the store's lock and its one append path, so the result is an ordinary v1 ledger that the
original implementation reads and extends.

Why provenance lives in a side file and not in the events: the v1 envelope admits no extra field, and the original's
payload shapes define no provenance key (its ``request_fingerprint``/idempotency checks compare payloads), so a marker
inside the payload could not be shown to be harmless there. Each salvage writes ``quarantine/salvaged-<ms>-<uuid>.json``
first (source record, per event: original line, ``event_id`` and ``event_hash``, and the new ``event_id``), then
appends. Running it again changes nothing: an event whose planned new id is already in the ledger, or whose request id
its task already holds (the ledger's own idempotency key), is skipped. So is a ``task_started``/``mode_set`` older than
a mode change its task already has: appended after it, the stale one would win (a task the user turned off after the
damage would come back on). An event of a task that has no ``task_started`` in the ledger nor among the events given
back (the damaged line was that start) stays set aside in ``quarantine/`` and is reported so (``set_aside``): no view
shows a task without its start, so appended it would be a claim nobody sees, and a stub start would have to invent the
task's mode, label and session.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from intentloop.errors import StorageError
from intentloop.model import (
    EVENT_TYPES,
    Event,
    EventDraft,
    canonical_bytes,
    compute_event_hash,
    event_line,
    new_uuid,
    seal,
    utc_now,
)
from intentloop.recovery._files import read_data_file

if TYPE_CHECKING:
    from intentloop.store import ProjectStore

SALVAGE_PREFIX = "salvaged-"
#: Why an event of a task whose start is lost is not given back (``skipped`` entries with ``"set_aside": true``).
SET_ASIDE_REASON = (
    "its task has no task_started in the ledger (lost with the damaged line): no view would show it, so it stays set "
    "aside in quarantine"
)
# A stale mode change must not undo a newer one (e.g. turn a task back on that the user turned off after the damage).
_MODE_EVENTS = frozenset({"task_started", "mode_set"})
_DAMAGED_PREFIX = "damaged-"
_decode = msgspec.json.Decoder()


class SuffixContents(msgspec.Struct, frozen=True, kw_only=True):
    """What a damaged suffix holds, counted line by line (nothing is trusted: every line is parsed on its own).

    Attributes:
        bytes: its length.
        lines: lines (a last line without newline counts).
        events: lines that parse as a v1 event object (whatever their hash).
        intact_events: events whose own ``event_hash`` verifies (what salvage can give back).
        claims: claims those events record (``claim_added``/``claim_replaced``, initial and imported claims).
        tasks: distinct tasks they touch.
    """

    bytes: int
    lines: int
    events: int
    intact_events: int
    claims: int
    tasks: int

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """One line of a suffix: its 1-based line number in the ledger it came from, the event if it parses as one
    (even with a wrong hash), and why it cannot be salvaged (``None`` when it can)."""

    line: int
    event: Event | None
    problem: str | None


def examine_suffix(suffix: bytes, *, project_id: str, first_line: int) -> list[Candidate]:
    """Every line of ``suffix`` (which started at ledger line ``first_line``) with its own verdict."""
    out: list[Candidate] = []
    for offset, raw in enumerate(suffix.splitlines(keepends=True)):
        line_no = first_line + offset
        event, problem = _own_event(raw, project_id)
        out.append(Candidate(line=line_no, event=event, problem=problem))
    return out


def count_suffix(suffix: bytes, *, project_id: str, first_line: int) -> SuffixContents:
    """What ``suffix`` holds (for the quarantine prompt and record)."""
    candidates = examine_suffix(suffix, project_id=project_id, first_line=first_line)
    events = [c.event for c in candidates if c.event is not None]
    return SuffixContents(
        bytes=len(suffix),
        lines=len(candidates),
        events=len(events),
        intact_events=sum(1 for c in candidates if c.event is not None and c.problem is None),
        claims=sum(_claims_in(e) for e in events),
        tasks=len({e.task_id for e in events}),
    )


def _claims_in(event: Event) -> int:
    payload = event.payload
    if event.event_type in ("claim_added", "claim_replaced"):
        return 1 if isinstance(payload.get("claim"), dict) else 0
    key = {"task_started": "initial_claims", "graph_imported": "claims"}.get(event.event_type)
    value = payload.get(key) if key else None
    return len(value) if isinstance(value, list) else 0


def _own_event(raw: bytes, project_id: str) -> tuple[Event | None, str | None]:
    """The event on one line (``None`` if it does not even parse as one) and why it cannot be salvaged (``None``: its
    own hash verifies and it is one of ours)."""
    if not raw.endswith(b"\n"):
        return None, "the line is cut short (no newline)"
    try:
        body = _decode.decode(raw)
    except msgspec.DecodeError:
        return None, "not JSON"
    if not isinstance(body, dict) or not isinstance(body.get("event_hash"), str):
        return None, "not an event object"
    try:
        event = msgspec.convert(body, Event)
    except msgspec.ValidationError as exc:
        return None, f"not a v1 event ({exc})"
    unhashed = event.to_dict()
    del unhashed["event_hash"]
    if compute_event_hash(unhashed) != event.event_hash:
        return event, "event_hash does not match"
    if event.project_id != project_id:
        return event, "belongs to another project"
    if event.schema_version != 1 or event.event_type not in EVENT_TYPES:
        return event, "not a v1 event this version can append"
    return event, None


class SalvageResult(msgspec.Struct, frozen=True, kw_only=True):
    """What ``recover salvage`` did (or, with ``dry_run``, would do).

    Attributes:
        sources: the quarantine records read (``{record, raw_bytes_file, lines, ...}``).
        appended: events appended (``{line, original_event_id, new_event_id, event_type, task_id}``).
        skipped: lines not appended and why (damaged, already salvaged, request already in the ledger, ...); an intact
            event of a task whose start is lost has ``"set_aside": true`` (with its ``task_id`` and ``event_type``).
        record: the provenance file written in ``quarantine/`` (``None`` when nothing was appended).
        events: events in the ledger afterwards.
        head_hash: its head afterwards.
    """

    sources: list[dict[str, Any]]
    appended: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    record: str | None
    events: int
    head_hash: str | None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


def salvage(store: ProjectStore, *, deadline: float | None = None, dry_run: bool = False) -> SalvageResult:
    """Re-append every intact event of the quarantined suffixes under the ledger lock (see the module docstring).

    Args:
        store: the project.
        deadline: give up waiting for the lock at this ``time.monotonic()`` value.
        dry_run: decide lock-free and change nothing (what the command shows before asking).

    Raises:
        CorruptLedgerError: the ledger is damaged again (quarantine it first).
        StorageError: ``LOCK_TIMEOUT``, path-safety refusals, write failures.
    """
    if dry_run:
        view = store.read()
        return _plan(store, view.events, view.head_hash, writing=None)
    with store.locked(deadline) as ledger:
        return _plan(store, ledger.view.events, ledger.view.head_hash, writing=ledger)


def _plan(store: ProjectStore, current: Any, head: str | None, *, writing: Any) -> SalvageResult:
    sources, candidates = _sources(store)
    present_ids = {e.event_id for e in current}
    requests = {(e.task_id, e.request_id) for e in current}
    latest_mode: dict[str, str] = {}  # task -> time of its latest mode-setting event already in the ledger
    started: set[str] = set()  # tasks readers see: started in the ledger or by an event given back before
    for e in current:
        if e.event_type == "task_started":
            started.add(e.task_id)
        if e.event_type in _MODE_EVENTS:
            latest_mode[e.task_id] = max(latest_mode.get(e.task_id, ""), e.occurred_at)
    done = _already_salvaged(store.quarantine_dir, present_ids)
    appended: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    drafts: list[EventDraft] = []
    for source, candidate in candidates:
        where = {"record": source, "line": candidate.line}
        event = candidate.event
        if event is None or candidate.problem is not None:
            skipped.append({**where, "reason": candidate.problem})
            continue
        if event.event_hash in done:
            skipped.append({**where, "reason": "already salvaged", "original_event_id": event.event_id})
            continue
        if event.event_type in _MODE_EVENTS and latest_mode.get(event.task_id, "") > event.occurred_at:
            reason = "a later mode change of its task is already in the ledger"
            skipped.append({**where, "reason": reason, "original_event_id": event.event_id})
            continue
        if (event.task_id, event.request_id) in requests:
            skipped.append(
                {**where, "reason": "its request is already in the ledger", "original_event_id": event.event_id}
            )
            continue
        if event.event_type != "task_started" and event.task_id not in started:
            aside = {"original_event_id": event.event_id, "event_type": event.event_type, "task_id": event.task_id}
            skipped.append({**where, "reason": SET_ASIDE_REASON, "set_aside": True, **aside})
            continue
        new_id = new_uuid()
        draft = EventDraft(
            event_type=event.event_type,
            task_id=event.task_id,
            actor=event.actor,
            request_id=event.request_id,
            payload=event.payload,
            occurred_at=event.occurred_at,
            event_id=new_id,
        )
        refused = _append_problem(draft, store.project_id)
        if refused is not None:
            skipped.append({**where, "reason": refused, "original_event_id": event.event_id})
            continue
        requests.add((event.task_id, event.request_id))
        if event.event_type == "task_started":
            started.add(event.task_id)
        drafts.append(draft)
        appended.append(
            {
                **where,
                "original_event_id": event.event_id,
                "original_event_hash": event.event_hash,
                "new_event_id": new_id,
                "event_type": event.event_type,
                "task_id": event.task_id,
            }
        )
    record: str | None = None
    events, new_head = len(current), head
    if writing is not None and drafts:
        name = f"{SALVAGE_PREFIX}{int(time.time() * 1000)}-{uuid.uuid4()}.json"
        provenance = {"salvaged_at": utc_now(), "sources": sources, "events": appended}
        writing.write_quarantine(name, canonical_bytes(provenance) + b"\n")  # before the append: never unrecorded
        writing.append(drafts)
        record = str(store.quarantine_dir / name)
        events, new_head = len(writing.view.events), writing.view.head_hash
    return SalvageResult(
        sources=sources, appended=appended, skipped=skipped, record=record, events=events, head_hash=new_head
    )


def _append_problem(draft: EventDraft, project_id: str) -> str | None:
    """Why the store's verifier would refuse this event as a ledger line (checked alone, so one odd line cannot make
    the whole append fail); ``None`` when it would accept it."""
    from intentloop.store import verify_ledger_bytes

    try:
        line = event_line(seal(draft, project_id=project_id, prev_hash=None))
    except (ValueError, TypeError, msgspec.EncodeError):
        return "the event has no canonical JSON form"
    error = verify_ledger_bytes(line, project_id=project_id).error
    return None if error is None else f"the verifier would refuse it: {error.reason}"


def _json_records(directory: Path, prefix: str) -> list[tuple[Path, dict[str, Any]]]:
    if not directory.is_dir():
        return []
    out = []
    for path in sorted(directory.glob(f"{prefix}*.json")):
        try:
            body = json.loads(read_data_file(path) or b"null")
        except (StorageError, ValueError):
            continue
        if isinstance(body, dict):
            out.append((path, body))
    return out


def _sources(store: ProjectStore) -> tuple[list[dict[str, Any]], list[tuple[str, Candidate]]]:
    """Every quarantine record with raw bytes, and the lines of those bytes (in record order)."""
    sources: list[dict[str, Any]] = []
    lines: list[tuple[str, Candidate]] = []
    for path, summary in _json_records(store.quarantine_dir, _DAMAGED_PREFIX):
        name = summary.get("raw_bytes_file")
        first = summary.get("first_bad_line")
        entry: dict[str, Any] = {"record": path.name, "raw_bytes_file": name if isinstance(name, str) else None}
        if not isinstance(name, str) or "/" in name or not isinstance(first, int):
            sources.append({**entry, "lines": 0, "note": "summary only: no raw bytes were kept"})
            continue
        raw = read_data_file(store.quarantine_dir / name)
        if raw is None:
            sources.append({**entry, "lines": 0, "note": "the raw bytes file is gone"})
            continue
        found = examine_suffix(raw, project_id=store.project_id, first_line=first)
        sources.append({**entry, "lines": len(found), "sha256": summary.get("sha256")})
        lines += [(path.name, candidate) for candidate in found]
    return sources, lines


def _already_salvaged(directory: Path, present_ids: set[str]) -> set[str]:
    """Original hashes of events an earlier salvage appended (its planned new id is in the ledger)."""
    done: set[str] = set()
    for _path, record in _json_records(directory, SALVAGE_PREFIX):
        for item in record.get("events", []):
            if isinstance(item, dict) and item.get("new_event_id") in present_ids:
                done.add(str(item.get("original_event_hash")))
    return done


__all__ = [
    "SALVAGE_PREFIX",
    "SET_ASIDE_REASON",
    "Candidate",
    "SalvageResult",
    "SuffixContents",
    "count_suffix",
    "examine_suffix",
    "salvage",
]
