"""Identifiers: project ids, session hashes, UUID checks, deterministic task ids, timestamps."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

from intentloop.errors import InvalidInputError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.canonical import canonical_bytes, sha256_hex

#: The one textual shape of a UUID (any version, lowercase hex; compile it with ``re.IGNORECASE`` where either case is
#: read): the names of the files intentloop writes and the ids of a stored event are checked against it.
UUID_TEXT = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: An id an agent or a user gives: the shape, with an RFC 4122 version digit (1-8) and variant (8, 9, a, b).
UUID_RE = LazyPattern(rf"^(?=.{{14}}[1-8].{{4}}[89ab]){UUID_TEXT}\Z", re.IGNORECASE)
HEX64_RE = LazyPattern(r"^[a-f0-9]{64}\Z")
OPAQUE_ID_RE = LazyPattern(r"^[A-Za-z0-9_.:@-]{1,200}\Z")
RFC3339_UTC_RE = LazyPattern(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z\Z"
)  # ASCII digits


def project_id_for(canonical_root: str) -> str:
    """``sha256_hex(b"intent-loop-project-v1\\0" + canonical_root_utf8)``."""
    return sha256_hex(b"intent-loop-project-v1\0" + canonical_root.encode("utf-8"))


def session_hash(host_session_id: str) -> str:
    return sha256_hex("intent-loop-session-v1\0" + host_session_id)


def is_uuid(value: str) -> bool:
    return bool(UUID_RE.match(value))


def require_uuid(value: str, field: str = "id") -> str:
    if not isinstance(value, str) or not UUID_RE.match(value):
        raise InvalidInputError(f"{field} must be a UUID", code="INVALID_ID")
    return value.lower()


def is_hex64(value: str) -> bool:
    return bool(HEX64_RE.match(value))


def new_uuid() -> str:
    return str(uuid.uuid4())


def deterministic_task_id(project_id: str, request_id: str) -> str:
    """A UUIDv5-shaped id from sha256(canonical {namespace, project_id, request_id}), as the original derives it."""
    digest = sha256_hex(
        canonical_bytes({"namespace": "intent-loop-start", "project_id": project_id, "request_id": request_id})
    )
    h = list(digest[:32])
    h[12] = "5"
    h[16] = "89ab"[int(h[16], 16) & 0x3]
    s = "".join(h)
    return f"{s[0:8]}-{s[8:12]}-{s[12:16]}-{s[16:20]}-{s[20:32]}"


def utc_now() -> str:
    """RFC 3339 UTC with milliseconds and ``Z``, like JavaScript's ``toISOString()``."""
    return format_time(datetime.now(UTC))


def format_time(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_time(value: str) -> datetime:
    """Parse an RFC 3339 UTC timestamp ending in ``Z``; raises ``ValueError`` otherwise."""
    if not RFC3339_UTC_RE.match(value):
        raise ValueError(f"not an RFC 3339 UTC timestamp: {value!r}")
    head, _, frac = value[:-1].partition(".")
    base = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    if frac:
        base = base.replace(microsecond=int((frac + "000000")[:6]))
    return base


__all__ = [
    "HEX64_RE",
    "OPAQUE_ID_RE",
    "RFC3339_UTC_RE",
    "UUID_RE",
    "UUID_TEXT",
    "deterministic_task_id",
    "format_time",
    "is_hex64",
    "is_uuid",
    "new_uuid",
    "parse_time",
    "project_id_for",
    "require_uuid",
    "session_hash",
    "utc_now",
]
