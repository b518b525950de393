"""The pure ledger verifier (CONTRACT §2): bytes in, verified prefix and first error out; no I/O.

Speed comes from three facts: all lines decode in one msgspec call into :class:`Event`; one sorted re-encode of the
whole batch proves every line canonical at once (a batch holding an integral float, which JavaScript writes as an
integer, goes line by line through ``canonical_bytes``); and the hash input of a canonical line is the line itself
minus its ``,"event_hash":"<64 hex>"`` segment, which sits right after the ``actor`` value because keys are sorted.
"""

from __future__ import annotations

import gc
import hashlib
import re
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import msgspec

from intentloop.errors import CorruptLedgerError
from intentloop.model.canonical import canonical_bytes
from intentloop.model.events import ACTORS, EVENT_TYPES, Event
from intentloop.model.ids import HEX64_RE, RFC3339_UTC_RE
from intentloop.store._migrate import migrate, schema_error

# Grows whenever the decoder meets a float that msgspec and JavaScript would write differently (integral or not
# finite); only ever compared for change, so a lost update between threads cannot hide one.
_float_count = [0]


def _float_hook(text: str) -> float:
    value = float(text)
    if value.is_integer() or value != value or value in (float("inf"), float("-inf")):
        _float_count[0] += 1
    return value


_decoder = msgspec.json.Decoder(Event, float_hook=_float_hook)
_batch_decoder = msgspec.json.Decoder(list[Event], float_hook=_float_hook)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder(order="sorted")
_ACTOR_PREFIX = b'{"actor":"'
_HASH_KEY = b',"event_hash":"'
_HASH_CUT = len(_ACTOR_PREFIX) + 1  # + len(actor): where ',"event_hash":"' starts in a canonical line
_HASH_SEGMENT = len(_HASH_KEY) + 64 + 1
# Shapes checked in bulk with str.translate (C speed); anything else goes through the line-by-line regexes.
_HEX_TO_X = str.maketrans(dict.fromkeys("0123456789abcdefABCDEF", "x"))
_UUID_SHAPE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
_DIGIT_TO_D = str.maketrans(dict.fromkeys("0123456789", "d"))
_TIME_SHAPE = "dddd-dd-ddTdd:dd:dd.dddZ"
_get_version = attrgetter("schema_version")
_get_project = attrgetter("project_id")
_get_type = attrgetter("event_type")
_get_actor = attrgetter("actor")
_get_request = attrgetter("request_id")
_get_event_id = attrgetter("event_id")
_get_task_id = attrgetter("task_id")
_get_time = attrgetter("occurred_at")
_get_hash = attrgetter("event_hash")
_get_prev = attrgetter("prev_hash")
_FIELDS = frozenset(Event.__struct_fields__)
# Any 8-4-4-4-12 hex UUID, as the original's JSON schema ("format": "uuid") accepts.
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


@dataclass(frozen=True)
class Verification:
    """The outcome of verifying ledger bytes.

    Attributes:
        events: the verified events, in order (already migrated to the current schema).
        head_hash: ``event_hash`` of the last verified event (``None`` for none).
        byte_length: length of the verified prefix (whole lines including their newlines).
        line_count: number of verified lines.
        error: the first error (``CORRUPT_LEDGER``/``FUTURE_SCHEMA``/``MIGRATION_UNAVAILABLE`` with its 1-based line,
            or ``CORRUPT_TRAILING_EVENT`` for a last line without newline), ``None`` when everything verified.
        torn_tail: the bytes after the last newline, if any (a crashed partial write).
    """

    events: tuple[Event, ...]
    head_hash: str | None
    byte_length: int
    line_count: int
    error: CorruptLedgerError | None
    torn_tail: bytes | None

    @property
    def ok(self) -> bool:
        return self.error is None


def verify_ledger_bytes(data: bytes, *, project_id: str) -> Verification:
    """Verify a whole ledger: canonical lines, v1 envelope, project id, ``prev_hash`` chain and ``event_hash``.

    Never raises for bad input: the first problem is returned as ``Verification.error``.
    """
    return verify_continuation(data, project_id=project_id, prev_hash=None, first_line=1)


def verify_continuation(data: bytes, *, project_id: str, prev_hash: str | None, first_line: int) -> Verification:
    """Verify ``data`` as the continuation of a verified ledger whose head is ``prev_hash`` and whose next line
    number is ``first_line`` (used to verify only the bytes appended since a cached, verified prefix)."""
    end = data.rfind(b"\n") + 1
    torn = data[end:] or None
    body = data if end == len(data) else data[:end]
    lines = body.split(b"\n")
    lines.pop()  # the empty string after the last newline
    events: list[Event] = []
    error = _verify_lines(lines, events, project_id, prev_hash, first_line)
    count = len(events)
    length = sum(len(line) + 1 for line in lines[:count]) if error is not None else len(body)
    head = events[-1].event_hash if events else prev_hash
    if error is None and torn is not None:
        line_no = first_line + count
        error = CorruptLedgerError(
            f"line {line_no} is an incomplete trailing event (a crashed write; the next change repairs it)",
            line=line_no,
            reason="last line has no newline",
            code="CORRUPT_TRAILING_EVENT",
        )
    return Verification(
        events=tuple(events), head_hash=head, byte_length=length, line_count=count, error=error, torn_tail=torn
    )


def _verify_lines(
    lines: list[bytes], out: list[Event], project_id: str, prev: str | None, first_line: int
) -> CorruptLedgerError | None:
    if not lines:
        return None
    gc_was_enabled = gc.isenabled()
    gc.disable()  # msgspec's advice for bulk decoding: the cyclic GC finds nothing in fresh payload dicts
    try:
        if _verify_batch(lines, out, project_id, prev):
            return None
    finally:
        if gc_was_enabled:
            gc.enable()
    out.clear()
    return _verify_each(lines, out, project_id, prev, first_line)


def _verify_batch(lines: list[bytes], out: list[Event], project_id: str, prev: str | None) -> bool:
    """All checks at once for the common case of an intact v1 ledger; ``False`` means "look line by line"."""
    floats_before = _float_count[0]
    joined = b"[" + b",".join(lines) + b"]"
    try:
        events = _batch_decoder.decode(joined)
    except _DECODE_ERRORS:
        return False
    count = len(events)
    if count != len(lines) or _float_count[0] != floats_before:
        return False
    if set(map(_get_version, events)) != {1} or set(map(_get_project, events)) != {project_id}:
        return False
    if not set(map(_get_type, events)) <= EVENT_TYPES or not set(map(_get_actor, events)) <= ACTORS:
        return False
    request_lengths = list(map(len, map(_get_request, events)))
    if min(request_lengths) < 1 or max(request_lengths) > 200:
        return False
    uuids = "".join(map(_get_event_id, events)) + "".join(map(_get_task_id, events))
    if uuids.translate(_HEX_TO_X) != _UUID_SHAPE * (2 * count):
        return False
    if "".join(map(_get_time, events)).translate(_DIGIT_TO_D) != _TIME_SHAPE * count:
        return False
    hashes = list(map(_get_hash, events))
    if list(map(_get_prev, events)) != [prev, *hashes[:-1]]:
        return False
    if _encoder.encode(events) != joined:
        return False
    sha256 = hashlib.sha256
    for line, actor_length, expected in zip(lines, map(len, map(_get_actor, events)), hashes, strict=True):
        cut = _HASH_CUT + actor_length
        if sha256(line[:cut] + line[cut + _HASH_SEGMENT :]).hexdigest() != expected:
            return False
    out.extend(map(migrate, events))
    return True


def _verify_each(
    lines: list[bytes], out: list[Event], project_id: str, prev: str | None, first_line: int
) -> CorruptLedgerError | None:
    """Line by line, in order, so the first error is the one reported (and explained with that line alone)."""
    for index, line in enumerate(lines):
        line_no = first_line + index
        before = _float_count[0]
        parsed = _decode_line(line, line_no)
        if isinstance(parsed, CorruptLedgerError):
            return parsed
        if parsed.schema_version != 1:
            return schema_error(parsed.schema_version, line_no)
        if not _is_canonical(parsed, line, _float_count[0] != before):
            return _corrupt(line_no, _non_canonical_reason(line))
        error = _check_event(parsed, line, line_no, prev, project_id)
        if error is not None:
            return error
        out.append(migrate(parsed))
        prev = parsed.event_hash
    return None


def _check_event(
    event: Event, line: bytes, line_no: int, prev: str | None, project_id: str
) -> CorruptLedgerError | None:
    """Envelope, chain and hash checks of one event already known to be the canonical form of ``line``."""
    problem = _shape_problem(event, project_id)
    if problem:
        return _corrupt(line_no, problem)
    if event.prev_hash != prev:
        return _corrupt(line_no, "prev_hash does not match the previous event_hash")
    cut = _HASH_CUT + len(event.actor)
    if line[cut : cut + len(_HASH_KEY)] != _HASH_KEY:
        return _corrupt(line_no, "event_hash is not where canonical order puts it")
    if hashlib.sha256(line[:cut] + line[cut + _HASH_SEGMENT :]).hexdigest() != event.event_hash:
        return _corrupt(line_no, "event_hash does not match the event")
    return None


def _decode_line(line: bytes, line_no: int) -> Event | CorruptLedgerError:
    """Decode one line, explaining a failure in the terms of CONTRACT §2."""
    if not line:
        return _corrupt(line_no, "empty line")
    try:
        return _decoder.decode(line)
    except _DECODE_ERRORS as exc:
        shape_error = str(exc)
    try:
        raw: Any = _any_decoder.decode(line)
    except _DECODE_ERRORS:
        return _corrupt(line_no, "invalid JSON")
    if not isinstance(raw, dict):
        return _corrupt(line_no, "not a JSON object")
    version = raw.get("schema_version")
    if version != 1 or isinstance(version, bool) or not isinstance(version, int):
        error = schema_error(version, line_no)
        if error is not None:
            return error
    return _corrupt(line_no, f"bad event shape: {shape_error}")


def _is_canonical(event: Event, line: bytes, odd_floats: bool) -> bool:
    if not odd_floats:
        return _encoder.encode(event) == line
    try:
        return canonical_bytes(event.to_dict()) == line
    except (ValueError, TypeError):
        return False


def _non_canonical_reason(line: bytes) -> str:
    try:
        raw: Any = _any_decoder.decode(line)
    except _DECODE_ERRORS:
        return "not canonical JSON"
    if isinstance(raw, dict):
        extra = sorted(set(raw) - _FIELDS)
        if extra:
            return f"bad event shape: unexpected field {extra[0]!r}"
    return "not canonical JSON (keys must be sorted, no whitespace, floats as JavaScript writes them)"


def _shape_problem(event: Event, project_id: str) -> str:
    if event.project_id != project_id:
        return "project_id does not match this project"
    if event.event_type not in EVENT_TYPES:
        return "unknown event_type"
    if event.actor not in ACTORS:
        return "unknown actor"
    if not HEX64_RE.match(event.event_hash):
        return "event_hash is not a sha256 hex digest"
    if not _UUID_RE.match(event.event_id) or not _UUID_RE.match(event.task_id):
        return "event_id and task_id must be UUIDs"
    if not RFC3339_UTC_RE.match(event.occurred_at):
        return "occurred_at is not an RFC 3339 UTC time"
    if not 1 <= len(event.request_id) <= 200:
        return "request_id must have 1 to 200 characters"
    return ""


def _corrupt(line_no: int, reason: str) -> CorruptLedgerError:
    return CorruptLedgerError(f"ledger line {line_no}: {reason}", line=line_no, reason=reason)


__all__ = ["Verification", "verify_continuation", "verify_ledger_bytes"]
