"""A writer's stream: the append-only, signed record of what one installation shares of one shared project.

Layout (one git tree, docs/SYNC.md "The stream"): ``checkpoint`` (canonical JSON, signed), ``records.jsonl`` (one
canonical record a line) and ``payloads/<digest>`` (one blob per live payload). Why a payload apart from its record:
a record holds only the salted digest of its payload (``sha256`` of the canonical ``{"body", "salt"}`` blob, the
salt 16 random bytes, so a digest never confirms a guess about an erased text), and the chain runs over records; an
erase record drops a payload and the chain still verifies. Each stream commit is a root commit (no parent): what a
writer erased is unreachable in its next commit, and ``git gc`` removes it.

The checkpoint binds the shared id, the writer's key id, the sequence number and the head record's hash under the
writer's Ed25519 key, so a stream cannot be replayed into another project or for another writer, and a reader tells
a rollback (lower sequence) and equivocation (same sequence, another head) apart from an extension.

Why a ``witnesses`` file beside them (not chained, replaced with each commit): a writer that shows one history to one
reader and another to a second (two histories, each consistent) is caught by neither alone. Each writer publishes the
other writers' checkpoints it accepted; they are signed by those writers, so a reader checks them against its own
accepted history without trusting the witness: a signed checkpoint whose head is not the record it accepted at that
sequence number is proof of equivocation.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import msgspec

from intentloop.model.canonical import canonical_bytes, sha256_hex

STREAM_FORMAT: Final = 1
CHECKPOINT_DOMAIN: Final = b"intentloop-stream-checkpoint-v1\0"
CHECKPOINT_FILE: Final = "checkpoint"
RECORDS_FILE: Final = "records.jsonl"
PAYLOAD_DIR: Final = "payloads"
WITNESSES_FILE: Final = "witnesses"
_MAX_WITNESS_LINE: Final = 4096
_SSH_TYPE: Final = b"ssh-ed25519"


class Record(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One line of ``records.jsonl``.

    ``kind`` ``put`` carries ``item`` (what it sets: ``claim:<id>``, ``invalidation:<claim id>``, ``task:<id>``) and
    ``digest`` (its payload's); ``erase`` carries ``target`` (the sequence number of an earlier put of this stream)
    and nothing of its content; ``retract`` carries ``item`` and ``target_writer`` (the key id of the stream that put
    it): a request that another writer's item stop counting, honoured only from that item's principal or an admin.
    ``at`` is the UTC time the writer says it wrote the record (``YYYY-MM-DDTHH:MM:SSZ``); a reader compares it
    only with the ``valid-after``/``valid-before`` window of the writer's own key, never across writers.
    """

    seq: int
    prev: str | None
    kind: str
    hash: str
    item: str | None = None
    digest: str | None = None
    target: int | None = None
    target_writer: str | None = None
    at: str | None = None

    def unsigned(self) -> dict[str, Any]:
        data = msgspec.to_builtins(self)
        data.pop("hash")
        if self.prev is None:
            data["prev"] = None
        return data  # type: ignore[no-any-return]


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """The signed head of a stream."""

    format: int
    shared: str
    writer: str
    public_key: str
    principal: str | None
    seq: int
    head: str | None
    signature: str

    def message(self) -> bytes:
        data = msgspec.to_builtins(self)
        data.pop("signature")
        return CHECKPOINT_DOMAIN + canonical_bytes(data)


def record_hash(data: Mapping[str, Any]) -> str:
    return sha256_hex(canonical_bytes(dict(data)))


def make_record(
    seq: int,
    prev: str | None,
    kind: str,
    *,
    item: str | None = None,
    digest: str | None = None,
    target: int | None = None,
    target_writer: str | None = None,
    at: str | None = None,
) -> Record:
    fields: dict[str, Any] = {"seq": seq, "prev": prev, "kind": kind}
    optional = {"item": item, "digest": digest, "target": target, "target_writer": target_writer, "at": at}
    fields.update((name, value) for name, value in optional.items() if value is not None)
    return Record(**fields, hash=record_hash(fields))


def payload_blob(body: Mapping[str, Any], salt: str | None = None) -> tuple[str, bytes]:
    """``(digest, blob bytes)`` of a payload: canonical ``{"body", "salt"}`` (a fresh salt unless given)."""
    data = canonical_bytes({"body": dict(body), "salt": salt if salt is not None else os.urandom(16).hex()})
    return hashlib.sha256(data).hexdigest(), data


def records_bytes(records: Sequence[Record]) -> bytes:
    return b"".join(canonical_bytes(r.unsigned() | {"hash": r.hash}) + b"\n" for r in records)


def openssh_public_key(public_hex: str, comment: str | None = None) -> str:
    """``ssh-ed25519 AAAA…`` (the form ``ssh-keygen`` and git's ``allowed_signers`` use) of a raw Ed25519 key."""
    raw = bytes.fromhex(public_hex)
    blob = _ssh_string(_SSH_TYPE) + _ssh_string(raw)
    text = "ssh-ed25519 " + base64.b64encode(blob).decode("ascii")
    return f"{text} {comment}" if comment else text


def ssh_fingerprint(public_hex: str) -> str:
    """``SHA256:…`` as ``ssh-keygen -lf`` prints it."""
    blob = _ssh_string(_SSH_TYPE) + _ssh_string(bytes.fromhex(public_hex))
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")


def parse_openssh_public_key(text: str) -> str | None:
    """The raw public key (hex) of an ``ssh-ed25519 AAAA… [comment]`` line; ``None`` when it is not one."""
    parts = text.strip().split()
    if len(parts) < 2 or parts[0] != "ssh-ed25519":
        return None
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError:
        return None
    kind, rest = _read_ssh_string(blob)
    if kind != _SSH_TYPE or rest is None:
        return None
    raw, tail = _read_ssh_string(rest)
    if raw is None or len(raw) != 32 or tail != b"":
        return None
    return raw.hex()


def key_id_of(public_hex: str) -> str:
    return sha256_hex(bytes.fromhex(public_hex))


def _ssh_string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _read_ssh_string(data: bytes) -> tuple[bytes | None, bytes | None]:
    if len(data) < 4:
        return None, None
    size = int.from_bytes(data[:4], "big")
    if len(data) < 4 + size:
        return None, None
    return data[4 : 4 + size], data[4 + size :]


class StreamProblem(Exception):
    """Why a stream is refused: a reason and the sequence number it concerns (``None``: the checkpoint)."""

    def __init__(self, reason: str, seq: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.seq = seq


class Stream(msgspec.Struct, kw_only=True):
    """A verified stream: its checkpoint, records, and the live payload bodies by sequence number."""

    checkpoint: Checkpoint
    records: list[Record]
    bodies: dict[int, dict[str, Any]]
    salts: dict[int, str]

    def live(self) -> dict[str, int]:
        """item → the sequence number of its live put (not erased)."""
        erased = {r.target for r in self.records if r.kind == "erase"}
        found: dict[str, int] = {}
        for r in self.records:
            if r.kind == "put" and r.seq not in erased and r.item is not None:
                found[r.item] = r.seq
        return found

    def erased(self) -> set[int]:
        return {r.target for r in self.records if r.kind == "erase" and r.target is not None}

    def live_puts(self) -> list[Record]:
        """The put records whose payloads must verify, one per payload digest, in order of first use: a digest's
        last put that is not erased (its body is kept under that put's sequence number)."""
        erased = self.erased()
        by_digest = {r.digest: r for r in self.records if r.kind == "put" and r.seq not in erased}
        return list(by_digest.values())


def sign_checkpoint(
    sign: Any, *, shared: str, writer: str, public_hex: str, principal: str | None, records: Sequence[Record]
) -> Checkpoint:
    """The checkpoint over ``records``, signed with ``sign(message) -> hex``."""
    unsigned = Checkpoint(
        format=STREAM_FORMAT,
        shared=shared,
        writer=writer,
        public_key=openssh_public_key(public_hex),
        principal=principal,
        seq=len(records),
        head=records[-1].hash if records else None,
        signature="",
    )
    return msgspec.structs.replace(unsigned, signature=sign(unsigned.message()))


def parse_stream(
    *,
    shared: str,
    writer: str,
    checkpoint: bytes,
    records: bytes,
    payloads: Mapping[str, bytes | None],
    known: Mapping[str, dict[str, Any]] | None = None,
) -> Stream:
    """Verify a fetched stream of ``writer`` for ``shared``: the checkpoint's shape, key and signature, the records'
    numbering, chain and hashes, the head, and every live payload against its digest.

    ``payloads`` maps every payload name of the tree to its bytes, or to ``None`` when the reader did not read it
    because git holds it under the very blob id it verified before: its body is then taken from ``known`` (digest →
    body; such a payload carries no salt in the result). A reader that holds only some payloads at a time uses
    :func:`parse_records`, :func:`verify_payloads` over :meth:`Stream.live_puts` in slices, and
    :func:`refuse_erased_payloads`, which is what this does at once.

    Raises:
        StreamProblem: the first thing that does not verify, with the sequence number concerned.
    """
    stream = parse_records(shared=shared, writer=writer, checkpoint=checkpoint, records=records)
    verify_payloads(stream, stream.live_puts(), payloads, known)
    refuse_erased_payloads(stream, payloads)
    return stream


def parse_records(*, shared: str, writer: str, checkpoint: bytes, records: bytes) -> Stream:
    """The checkpoint and records of a fetched stream, verified (:func:`parse_stream`), with no payload bodies yet.

    Raises:
        StreamProblem: the first thing that does not verify, with the sequence number concerned.
    """
    try:
        point = msgspec.json.decode(checkpoint, type=Checkpoint)
    except msgspec.DecodeError:
        raise StreamProblem("the checkpoint is not readable") from None
    check_checkpoint(point, shared=shared, writer=writer)
    parsed: list[Record] = []
    prev: str | None = None
    for number, line in enumerate(records.splitlines(), start=1):
        try:
            record = msgspec.json.decode(line, type=Record)
        except msgspec.DecodeError:
            raise StreamProblem("a record is not readable", number) from None
        if record.seq != number or record.prev != prev or record_hash(record.unsigned()) != record.hash:
            raise StreamProblem("a record does not chain", number)
        if canonical_bytes(record.unsigned() | {"hash": record.hash}) != line:
            raise StreamProblem("a record is not in canonical form", number)
        if record.kind == "erase":
            if record.target is None or not 1 <= record.target < number or parsed[record.target - 1].kind != "put":
                raise StreamProblem("an erase record names no earlier put", number)
        elif record.kind != "put" or record.item is None or record.digest is None:
            raise StreamProblem("a record is neither a put nor an erase", number)
        parsed.append(record)
        prev = record.hash
    if len(parsed) != point.seq or prev != point.head:
        raise StreamProblem("the records do not end at the checkpoint's head", min(len(parsed), point.seq) or None)
    return Stream(checkpoint=point, records=parsed, bodies={}, salts={})


def check_checkpoint(point: Checkpoint, *, shared: str, writer: str) -> None:
    """That ``point`` is ``writer``'s, for ``shared``, and signed by the key it names (whose id is ``writer``).

    Raises:
        StreamProblem: what does not hold, with the checkpoint's sequence number.
    """
    from intentloop.store._signing import verify_with

    public_hex = parse_openssh_public_key(point.public_key)
    if public_hex is None or key_id_of(public_hex) != writer or point.writer != writer:
        raise StreamProblem("the checkpoint names another writer's key", point.seq)
    if point.shared != shared or point.format != STREAM_FORMAT:
        raise StreamProblem("the checkpoint belongs to another shared project or format", point.seq)
    if not verify_with(public_hex, point.signature, point.message()):
        raise StreamProblem("the checkpoint's signature does not verify", point.seq)


def witnesses_bytes(checkpoints: Sequence[bytes]) -> bytes:
    """A stream's ``witnesses`` file: the other writers' checkpoints its writer accepted, one canonical line each."""
    lines = []
    for data in checkpoints:
        with contextlib.suppress(msgspec.DecodeError):
            point = msgspec.json.decode(data, type=Checkpoint)
            lines.append(canonical_bytes(msgspec.to_builtins(point)))
    return b"".join(line + b"\n" for line in sorted(lines))


def witnessed(data: bytes) -> list[Checkpoint]:
    """The checkpoints a ``witnesses`` file holds (a line that does not decode is skipped). Unverified: a reader
    checks a checkpoint's signature (:func:`check_checkpoint`) only where it contradicts what it accepted, since a
    witness proves nothing it could have made up, and the witness's own stream is judged apart from this file."""
    found = []
    for line in data.splitlines():
        if len(line) <= _MAX_WITNESS_LINE:
            with contextlib.suppress(msgspec.DecodeError):
                found.append(msgspec.json.decode(line, type=Checkpoint))
    return found


def verify_payloads(
    stream: Stream,
    puts: Sequence[Record],
    payloads: Mapping[str, bytes | None],
    known: Mapping[str, dict[str, Any]] | None = None,
) -> None:
    """Verify the payloads of ``puts`` (some of ``stream.live_puts()``, in order) and set their bodies in ``stream``.

    ``payloads`` maps at least these puts' payload names that the tree holds to their bytes (or ``None``: the body
    is in ``known``, as in :func:`parse_stream`); a name it lacks is a missing payload.

    Raises:
        StreamProblem: the first put whose payload is missing or does not verify.
    """
    for record in puts:
        digest = record.digest or ""
        blob = payloads.get(digest)
        if blob is None and digest in payloads and known is not None and digest in known:
            stream.bodies[record.seq] = known[digest]
            continue
        if blob is None:
            raise StreamProblem("a payload is missing", record.seq)
        if hashlib.sha256(blob).hexdigest() != record.digest:
            raise StreamProblem("a payload does not match its digest", record.seq)
        try:
            data = msgspec.json.decode(blob)
        except msgspec.DecodeError:
            raise StreamProblem("a payload is not readable", record.seq) from None
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("body"), dict)
            or not isinstance(data.get("salt"), str)
        ):
            raise StreamProblem("a payload is not {body, salt}", record.seq)
        stream.bodies[record.seq] = data["body"]
        stream.salts[record.seq] = data["salt"]


def refuse_erased_payloads(stream: Stream, names: Collection[str]) -> None:
    """Refuse a tree (its payload ``names``) that still carries a payload its stream erased.

    Raises:
        StreamProblem: ``an erased payload is still carried``, with the erased put's sequence number.
    """
    live = {r.digest for r in stream.live_puts()}
    for seq in sorted(stream.erased()):
        gone = stream.records[seq - 1].digest
        if gone in names and gone not in live:
            raise StreamProblem("an erased payload is still carried", seq)


__all__ = [
    "CHECKPOINT_FILE",
    "PAYLOAD_DIR",
    "RECORDS_FILE",
    "Checkpoint",
    "Record",
    "Stream",
    "StreamProblem",
    "key_id_of",
    "make_record",
    "openssh_public_key",
    "parse_openssh_public_key",
    "parse_records",
    "parse_stream",
    "payload_blob",
    "records_bytes",
    "refuse_erased_payloads",
    "sign_checkpoint",
    "ssh_fingerprint",
    "verify_payloads",
]
