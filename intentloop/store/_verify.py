"""The pure ledger verifier (docs/EVENTS.md): bytes in, verified prefix and first error out; no I/O.

Speed comes from three facts: all lines decode in one msgspec call (``decode_lines``) into :class:`Event`; their sorted
re-encoding (``encode_lines``, a few events at a time) byte-identical with the input proves every line canonical
without splitting, joining or copying lines (a ledger holding an integral float, which JavaScript writes as an
integer, goes line by line through ``canonical_bytes``); and the hash input of a canonical line is the line itself
minus its ``,"event_hash":"<64 hex>"`` segment, which sits right after the ``actor`` value because keys are sorted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import msgspec

from intentloop.errors import CorruptLedgerError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.canonical import canonical_bytes
from intentloop.model.events import ACTORS, EVENT_TYPES, Event
from intentloop.model.ids import HEX64_RE, RFC3339_UTC_RE, UUID_TEXT
from intentloop.store._migrate import MIGRATIONS, migrate, migrate_v1, schema_error

# Grows whenever the decoder meets a float that msgspec and JavaScript would write differently (integral or not
# finite); only ever compared for change, so a lost update between threads cannot hide one.
_float_count = [0]


def _float_hook(text: str) -> float:
    value = float(text)
    if value.is_integer() or value != value or value in (float("inf"), float("-inf")):
        _float_count[0] += 1
    return value


_decoder = msgspec.json.Decoder(Event, float_hook=_float_hook)
_any_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder(order="sorted")
_ACTOR_PREFIX = b'{"actor":"'
_HASH_KEY = b',"event_hash":"'
_HASH_CUT = len(_ACTOR_PREFIX) + 1  # + len(actor): where ',"event_hash":"' starts in a canonical line
_HASH_SEGMENT = len(_HASH_KEY) + 64 + 1
_CUTS = {actor: _HASH_CUT + len(actor) for actor in ACTORS}
_ENCODE_CHUNK = 64  # events re-encoded at a time by the bulk canonical check
# Shapes checked in bulk with str.translate (C speed); anything else goes through the line-by-line regexes.
_HEX_TO_X = str.maketrans(dict.fromkeys("0123456789abcdefABCDEF", "x"))
_UUID_SHAPE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
_DIGIT_TO_D = str.maketrans(dict.fromkeys("0123456789", "d"))
_TIME_SHAPE = "dddd-dd-ddTdd:dd:dd.dddZ"
_FIELDS = frozenset(Event.__struct_fields__)
# Any 8-4-4-4-12 hex UUID, as the original's JSON schema ("format": "uuid") accepts.
_UUID_RE = LazyPattern(rf"^(?i:{UUID_TEXT})\Z")
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
#: The longest line a ledger may hold (64 MiB; the largest the service writes, a graph import of 1000 claims and 1000
#: candidates of maximal, fully escaped text, is ~40 MB). A longer line is damage, and the store streams past it
#: instead of holding it: a 1 GB run of zeros after a crash must not need 1 GB of memory (it used to take 3.2 GB).
MAX_LINE_BYTES = 64 * 1024 * 1024


class Damage(msgspec.Struct, frozen=True):
    """All the bytes after the verified prefix, summarised (they may be too large to hold: see ``ProjectStore``).

    Attributes:
        length: how many bytes follow the verified prefix.
        sha256: their SHA-256 (hex).
        torn: the file does not end with a newline (a crashed partial write).
    """

    length: int
    sha256: str
    torn: bool


class Verification(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of verifying ledger bytes (a frozen struct, not a dataclass: the hook never imports dataclasses).

    Attributes:
        events: the verified events, in order (already migrated to the current schema).
        head_hash: ``event_hash`` of the last verified event (``None`` for none).
        byte_length: length of the verified prefix (whole lines including their newlines).
        line_count: number of verified lines.
        error: the first error (``CORRUPT_LEDGER``/``FUTURE_SCHEMA``/``MIGRATION_UNAVAILABLE`` with its 1-based line,
            or ``CORRUPT_TRAILING_EVENT`` for a last line without newline), ``None`` when everything verified.
        torn_tail: the bytes after the last newline, if any (a crashed partial write); ``None`` also when the store
            did not read them (a line longer than ``MAX_LINE_BYTES``: see ``damage``).
        damage: the bytes after the verified prefix summarised (``None`` when everything verified).
    """

    events: Sequence[Event]  # offsets read back on demand (``_lines``), or a tuple
    head_hash: str | None
    byte_length: int
    line_count: int
    error: CorruptLedgerError | None
    torn_tail: bytes | None
    damage: Damage | None = None

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
    events = _verify_intact(body, project_id, prev_hash)
    error: CorruptLedgerError | None = None
    length = len(body)
    if events is None:  # something is unusual: line by line, so the first error is the one reported
        lines = body.split(b"\n")
        lines.pop()  # the empty string after the last newline
        events = []
        error = _verify_each(lines, events, project_id, prev_hash, first_line)
        if error is not None:
            length = sum(len(line) + 1 for line in lines[: len(events)])
    count = len(events)
    head = events[-1].event_hash if events else prev_hash
    if error is None and torn is not None:
        error = trailing_error(first_line + count)
    damage = None
    if error is not None:
        rest = memoryview(data)[length:]
        damage = Damage(length=len(rest), sha256=hashlib.sha256(rest).hexdigest(), torn=torn is not None)
    return Verification(
        events=tuple(events),
        head_hash=head,
        byte_length=length,
        line_count=count,
        error=error,
        torn_tail=torn,
        damage=damage,
    )


def verify_lines(body: bytes, *, project_id: str) -> list[Event] | None:
    """The events of ``body``, whole ledger lines that need not follow each other in the chain (a task's lines read
    through the index), when every line is canonical, a well-formed v1 event of ``project_id`` and hashes to its own
    ``event_hash`` — every check of a verified line but the link to its predecessor. ``None`` when anything is unusual
    or wrong: the caller then checks line by line with :func:`verify_continuation`."""
    if not body.endswith(b"\n"):
        return None
    return _verify_batch(body, project_id, None, chained=False)


def trailing_error(line_no: int) -> CorruptLedgerError:
    """``CORRUPT_TRAILING_EVENT`` for a last line ``line_no`` without its newline."""
    return CorruptLedgerError(
        f"line {line_no} is an incomplete trailing event (a crashed write; the next change repairs it)",
        line=line_no,
        reason="last line has no newline",
        code="CORRUPT_TRAILING_EVENT",
    )


def overlong_error(line_no: int) -> CorruptLedgerError:
    """``CORRUPT_LEDGER`` for a line ``line_no`` longer than ``MAX_LINE_BYTES`` (never held: see ``MAX_LINE_BYTES``)."""
    reason = f"line longer than {MAX_LINE_BYTES} bytes"
    return CorruptLedgerError(f"ledger line {line_no}: {reason}", line=line_no, reason=reason)


def _verify_intact(body: bytes, project_id: str, prev: str | None) -> list[Event] | None:
    """Every check at once for the common case of intact v1 lines; ``None`` means "look line by line"."""
    if not body:
        return []
    # No gc.disable() here (msgspec's advice for bulk decoding): a library must not toggle the collector of the
    # process it runs in. The hook process keeps it off for its whole short life (hooks/_run.py:run_hook).
    return _verify_batch(body, project_id, prev)


def _verify_batch(body: bytes, project_id: str, prev: str | None, *, chained: bool = True) -> list[Event] | None:
    """The bulk path over ``body`` (whole lines, each ending in ``"\\n"``); ``None`` when anything is unusual.
    ``chained``: the lines are consecutive, the first following ``prev`` (else each line is checked on its own).

    ``encode_lines(decode_lines(body)) == body`` proves that every line is the canonical encoding of the event
    decoded from it (an encoded event holds no raw newline, so the lines correspond one to one). Each check below
    accepts only what ``_check_event`` accepts; the hash of a line is taken over the line itself minus its
    ``event_hash`` segment, and all hashes are compared in one list comparison.
    """
    floats_before = _float_count[0]
    try:
        events: list[Event] = _decoder.decode_lines(body)
    except _DECODE_ERRORS:
        return None
    if not events or _float_count[0] != floats_before:
        return None
    if {e.schema_version for e in events} != {1} or {e.project_id for e in events} != {project_id}:
        return None
    actors = [e.actor for e in events]
    if not {e.event_type for e in events} <= EVENT_TYPES or not set(actors) <= ACTORS:
        return None
    request_lengths = {len(e.request_id) for e in events}
    if min(request_lengths) < 1 or max(request_lengths) > 200:
        return None
    uuids = [e.event_id for e in events] + [e.task_id for e in events]
    times = [e.occurred_at for e in events]
    if set(map(len, uuids)) != {len(_UUID_SHAPE)} or set(map(len, times)) != {len(_TIME_SHAPE)}:
        return None  # fixed lengths first, so a short value and a long neighbour cannot pass the joined shapes
    if "".join(uuids).translate(_HEX_TO_X) != _UUID_SHAPE * len(uuids):
        return None
    if "".join(times).translate(_DIGIT_TO_D) != _TIME_SHAPE * len(times):
        return None
    hashes = [e.event_hash for e in events]
    if chained and [e.prev_hash for e in events] != [prev, *hashes[:-1]]:
        return None
    if not _encodes_as(events, body):
        return None
    if _line_hashes(body, [_CUTS[actor] for actor in actors]) != hashes:
        return None
    step = MIGRATIONS[1]  # every line is schema_version 1 (checked above)
    return events if step is migrate_v1 else list(map(step, events))


def _encodes_as(events: list[Event], body: bytes) -> bool:
    """Whether ``encode_lines(events) == body``, encoded a few events at a time: small buffers are reused while
    warm instead of one fresh buffer as large as the ledger (~4 ms less on 10 MB in a fresh process)."""
    encode_lines = _encoder.encode_lines
    starts_with = body.startswith
    position = 0
    for index in range(0, len(events), _ENCODE_CHUNK):
        chunk = encode_lines(events[index : index + _ENCODE_CHUNK])
        if not starts_with(chunk, position):
            return False
        position += len(chunk)
    return position == len(body)


def _line_hashes(body: bytes, cuts: list[int]) -> list[str]:
    """``sha256`` of each line of ``body`` minus its ``event_hash`` segment, which starts ``cuts[i]`` bytes into line
    ``i``; ``body`` is known to be ``len(cuts)`` canonical lines. Memoryview slices: no line is ever copied."""
    view = memoryview(body)
    find = body.find
    sha256 = hashlib.sha256
    digests: list[str] = []
    append = digests.append
    start = 0
    for cut in cuts:
        end = find(b"\n", start)
        digest = sha256(view[start : start + cut])
        digest.update(view[start + cut + _HASH_SEGMENT : end])
        append(digest.hexdigest())
        start = end + 1
    return digests


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
    """Decode one line, explaining a failure in the terms of docs/EVENTS.md."""
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


__all__ = [
    "MAX_LINE_BYTES",
    "Damage",
    "Verification",
    "overlong_error",
    "trailing_error",
    "verify_continuation",
    "verify_ledger_bytes",
    "verify_lines",
]
