"""The v1 ledger event envelope (docs/EVENTS.md) and its hash.

An :class:`Event` is exactly one ledger line. ``payload`` stays a plain dict here: the fold reads it through its
type's struct (:mod:`intentloop.model.payloads`), and unknown payload keys written by a later version survive a
read-modify-write untouched (every byte is still covered by the hash chain).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from intentloop.model.canonical import canonical_bytes, sha256_hex
from intentloop.model.ids import new_uuid, utc_now

Actor = Literal["user", "agent", "evidence", "system"]
#: What hooks record (content-free observations); the only events a hook may spool for the next writer.
ObservationType = Literal["source_observed", "result_signal_observed", "compaction_observed"]
EventType = Literal[
    "task_started",
    "mode_set",
    "claim_added",
    "claim_replaced",
    "claim_invalidated",
    "candidate_added",
    ObservationType,
    "graph_imported",
]
EVENT_TYPES: frozenset[str] = frozenset(EventType.__args__)  # type: ignore[attr-defined]
OBSERVATION_EVENT_TYPES: frozenset[str] = frozenset(ObservationType.__args__)  # type: ignore[attr-defined]
ACTORS: frozenset[str] = frozenset(Actor.__args__)  # type: ignore[attr-defined]


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """One ledger line. Field names are the wire names; keep them sorted as they are stored."""

    actor: str
    event_hash: str
    event_id: str
    event_type: str
    occurred_at: str
    payload: dict[str, Any]
    prev_hash: str | None
    project_id: str
    request_id: str
    schema_version: int
    task_id: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor,
            "event_hash": self.event_hash,
            "event_id": self.event_id,
            "event_type": self.event_type,
            "occurred_at": self.occurred_at,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
            "project_id": self.project_id,
            "request_id": self.request_id,
            "schema_version": self.schema_version,
            "task_id": self.task_id,
        }


class EventDraft(msgspec.Struct, frozen=True, kw_only=True):
    """What the service decides to append; the store seals it into an :class:`Event` under the lock."""

    event_type: str
    task_id: str
    actor: str
    request_id: str
    payload: dict[str, Any]
    occurred_at: str | None = None
    event_id: str | None = None


def compute_event_hash(unhashed: dict[str, Any]) -> str:
    """``sha256_hex(canonical(event without event_hash))``."""
    return sha256_hex(canonical_bytes(unhashed))


def seal(draft: EventDraft, *, project_id: str, prev_hash: str | None) -> Event:
    """Turn a draft into a hashed event chained after ``prev_hash``."""
    body: dict[str, Any] = {
        "actor": draft.actor,
        "event_id": draft.event_id or new_uuid(),
        "event_type": draft.event_type,
        "occurred_at": draft.occurred_at or utc_now(),
        "payload": draft.payload,
        "prev_hash": prev_hash,
        "project_id": project_id,
        "request_id": draft.request_id,
        "schema_version": 1,
        "task_id": draft.task_id,
    }
    event_hash = compute_event_hash(body)
    return Event(event_hash=event_hash, **body)


def rechain(events: list[Event], *, project_id: str, prev_hash: str | None = None) -> list[Event]:
    """Recompute ``prev_hash``/``event_hash`` for a rewritten ledger (deletion, relink), keeping every other field;
    the first event is chained after ``prev_hash``."""
    out: list[Event] = []
    prev = prev_hash
    for ev in events:
        body = ev.to_dict()
        del body["event_hash"]
        body["prev_hash"] = prev
        body["project_id"] = project_id
        h = compute_event_hash(body)
        out.append(Event(event_hash=h, **body))
        prev = h
    return out


def event_line(event: Event) -> bytes:
    """The canonical ledger line of ``event``, with its trailing newline."""
    return canonical_bytes(event.to_dict()) + b"\n"


__all__ = [
    "ACTORS",
    "EVENT_TYPES",
    "OBSERVATION_EVENT_TYPES",
    "Actor",
    "Event",
    "EventDraft",
    "EventType",
    "compute_event_hash",
    "event_line",
    "rechain",
    "seal",
]
