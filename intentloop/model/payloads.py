"""Each event type's payload as a typed struct: the fold reads these, never a raw dict (docs/EVENTS.md, "The fold").

Why tolerant per field: the original folds a record field by field, so a record with one field of the wrong type
still counts for its other fields, and old readers must keep reading what a later version wrote. A payload is
decoded whole first (every payload this version writes does); one that does not decode is read field by field: a
field of the wrong type reads as ``None`` where the struct allows it (else as its default), a claim or candidate that
does not decode is skipped and counted as malformed, one without its string id is skipped silently. The line's raw
bytes stay the hash input; these structs are only the fold's reading of them, so unknown keys are ignored here and
survive in the ledger.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

import msgspec

from intentloop.model.claims import Candidate, Claim, Mode, SourceRef


class _Payload(msgspec.Struct, frozen=True, kw_only=True):
    pass


class TaskStarted(_Payload, frozen=True, kw_only=True):
    """``task_started``: a task's mode, label, session binding and the claims it was started with."""

    mode: Mode | None = None
    label: str | None = None
    host_session_hash: str | None = None
    recovered_from_private: bool = False
    initial_claims: list[Claim] = msgspec.field(default_factory=list)


class ModeSet(_Payload, frozen=True, kw_only=True):
    """``mode_set``: a new mode; the session binding moves only when ``host_session_hash`` is present (``UNSET``
    when absent, ``None`` when present and not a string)."""

    mode: Mode | None = None
    host_session_hash: str | msgspec.UnsetType | None = msgspec.UNSET


class ClaimRecorded(_Payload, frozen=True, kw_only=True):
    """``claim_added`` and ``claim_replaced``: the claim as recorded (a later record of its id overwrites it)."""

    claim: Claim | None = None


class ClaimInvalidated(_Payload, frozen=True, kw_only=True):
    """``claim_invalidated``: which claim left the current view, when and why."""

    claim_id: str | None = None
    invalidated_at: str | None = None
    reason: str | None = None
    source_ref: SourceRef | None = None


class CandidateRecorded(_Payload, frozen=True, kw_only=True):
    """``candidate_added`` and the hooks' observations: one candidate for the task."""

    candidate: Candidate | None = None


class GraphImported(_Payload, frozen=True, kw_only=True):
    """``graph_imported``: claims, invalidations and candidates taken from an export."""

    claims: list[Claim] = msgspec.field(default_factory=list)
    invalidated_claim_ids: list[str] = msgspec.field(default_factory=list)
    candidates: list[Candidate] = msgspec.field(default_factory=list)


Payload: TypeAlias = TaskStarted | ModeSet | ClaimRecorded | ClaimInvalidated | CandidateRecorded | GraphImported

#: One row per event type: the struct its payload is read as (tests check it names every type of ``EVENT_TYPES``).
PAYLOAD_TYPES: Mapping[str, type[Payload]] = {
    "task_started": TaskStarted,
    "mode_set": ModeSet,
    "claim_added": ClaimRecorded,
    "claim_replaced": ClaimRecorded,
    "claim_invalidated": ClaimInvalidated,
    "candidate_added": CandidateRecorded,
    "source_observed": CandidateRecorded,
    "result_signal_observed": CandidateRecorded,
    "compaction_observed": CandidateRecorded,
    "graph_imported": GraphImported,
}

#: Fields holding records: the record's struct and the key without which a record is skipped silently.
_RECORDS: Mapping[type[msgspec.Struct], str] = {Claim: "claim_id", Candidate: "candidate_id"}


class Decoded(msgspec.Struct, frozen=True):
    """A payload as the fold reads it, and how many of its records did not decode."""

    payload: Payload | None
    malformed: int


class _Reading:
    __slots__ = ("malformed",)

    def __init__(self) -> None:
        self.malformed = 0

    def record(self, cls: type[msgspec.Struct], value: Any) -> msgspec.Struct | None:
        if not isinstance(value, dict) or not isinstance(value.get(_RECORDS[cls]), str):
            return None
        try:
            return msgspec.convert(value, cls)
        except msgspec.ValidationError:
            self.malformed += 1
            return None

    def field(self, field: msgspec.structs.FieldInfo, value: Any) -> Any:
        kind = field.type
        item = _list_item(kind)
        if item is not None:
            if not isinstance(value, list):
                return field.default_factory()
            if item in _RECORDS:
                return [r for r in (self.record(item, v) for v in value) if r is not None]
            return [v for v in value if isinstance(v, item)]
        record = _optional_record(kind)
        if record is not None:
            return self.record(record, value)
        try:
            return msgspec.convert(value, kind)
        except msgspec.ValidationError:
            return None if _admits_none(kind) else field.default


def _list_item(kind: Any) -> Any:
    args: tuple[Any, ...] = getattr(kind, "__args__", ())
    return args[0] if getattr(kind, "__origin__", None) is list and len(args) == 1 else None


def _optional_record(kind: Any) -> type[msgspec.Struct] | None:
    for arg in getattr(kind, "__args__", ()):
        if arg in _RECORDS:
            return arg  # type: ignore[no-any-return]
    return None


def _admits_none(kind: Any) -> bool:
    try:
        msgspec.convert(None, kind)
    except msgspec.ValidationError:
        return False
    return True


def decode_payload(event_type: str, payload: Mapping[str, Any]) -> Decoded:
    """``payload`` read as ``event_type``'s struct (``None`` for a type this version does not know)."""
    cls = PAYLOAD_TYPES.get(event_type)
    if cls is None:
        return Decoded(None, 0)
    try:
        return Decoded(msgspec.convert(payload, cls), 0)
    except msgspec.ValidationError:
        pass
    reading = _Reading()
    values = {
        field.name: reading.field(field, payload[field.name])
        for field in msgspec.structs.fields(cls)
        if field.name in payload
    }
    return Decoded(cls(**values), reading.malformed)


__all__ = [
    "PAYLOAD_TYPES",
    "CandidateRecorded",
    "ClaimInvalidated",
    "ClaimRecorded",
    "Decoded",
    "GraphImported",
    "ModeSet",
    "Payload",
    "TaskStarted",
    "decode_payload",
]
