"""Pure data and functions: events, canonical form, ids, claims, redaction. No I/O, no trio."""

from intentloop.model.canonical import canonical_bytes, canonical_text, request_fingerprint, sha256_hex
from intentloop.model.events import (
    ACTORS,
    EVENT_TYPES,
    Event,
    EventDraft,
    compute_event_hash,
    event_line,
    rechain,
    seal,
)
from intentloop.model.ids import (
    deterministic_task_id,
    format_time,
    is_hex64,
    is_uuid,
    new_uuid,
    parse_time,
    project_id_for,
    require_uuid,
    session_hash,
    utc_now,
)

__all__ = [
    "ACTORS",
    "EVENT_TYPES",
    "Event",
    "EventDraft",
    "canonical_bytes",
    "canonical_text",
    "compute_event_hash",
    "deterministic_task_id",
    "event_line",
    "format_time",
    "is_hex64",
    "is_uuid",
    "new_uuid",
    "parse_time",
    "project_id_for",
    "rechain",
    "request_fingerprint",
    "require_uuid",
    "seal",
    "session_hash",
    "sha256_hex",
    "utc_now",
]
