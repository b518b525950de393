"""``intentloop sync``: publish this installation's stream of a shared project and accept the other writers' streams.

One sync, under ``R/share/sync.lock`` (one sync at a time per installation): fetch every writer's ref into the mirror,
extend this installation's own stream with what changed in the ledgers (puts for new or changed items, content-free
erase records for items that no longer travel — a forgotten claim, a task turned off), push it with
``--force-with-lease`` (also when only the remote ref is stale: a rolled-back ref is healed by its writer's next
push), then judge each other writer's stream against the last one accepted from it (docs/SYNC.md, "Reading") and
write the combined view (``R/share/projects/<shared>/view.json``) that snapshots and hooks read without the network.
Nothing here runs from a hook.

Who may write is read from the project's checkout (``.intentloop/allowed_signers`` and ``revoked_signers``,
``store/_signers.py``) beside the keys trusted here: a key's window filters the records it dated (``at``, stamped
by the writer at each sync), a revoked key's whole stream is set aside, and the trusted principal, never the one a
checkpoint claims, labels a writer's claims (docs/SYNC.md, "Teams: who may write").
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from intentloop.errors import ConflictError, StorageError
from intentloop.service._delete import erased_statement_digest
from intentloop.service._hookkey import load_or_create_hook_key
from intentloop.service._share_publish import publish_set
from intentloop.service._share_quota import Admission, admit, retract_records, shown_puts
from intentloop.service._share_retract import judge_retracts
from intentloop.service._share_view import (
    View,
    ViewWriter,
    own_refs,
    read_view,
    write_view,
    write_writer,
    writer_file_sealed,
    writer_verified,
)
from intentloop.store._share import (
    QUOTAS,
    Quotas,
    TrustedKey,
    add_erased,
    project_dir,
    read_settings,
    share_dir,
    trusted_keys,
    write_json,
)
from intentloop.store._signers import SignerProblem, Team, in_window, read_team, trust_from
from intentloop.store._signing import SigningKey, load_or_create_signing_key
from intentloop.store._stream import (
    CHECKPOINT_FILE,
    RECORDS_FILE,
    WITNESSES_FILE,
    Checkpoint,
    Record,
    Stream,
    StreamProblem,
    check_checkpoint,
    make_record,
    parse_records,
    parse_stream,
    payload_blob,
    records_bytes,
    refuse_erased_payloads,
    sign_checkpoint,
    verify_payloads,
    witnessed,
    witnesses_bytes,
)
from intentloop.store._stream_git import ACCEPTED, FETCHED, OWN, Mirror

_PEERS_FILE = "peers.json"
_BLOB_BATCH = 4096  # payloads read per git process while judging writers
_HEADS_BYTES = 4 << 20  # bytes of records files read per git process while judging writers (a writer is never split)
_SEEN = 32  # accepted (sequence number, head) pairs kept per writer for checking witnesses
REVOKED_WHY = "the key is listed in .intentloop/revoked_signers: its whole stream is set aside until re-attested"


class PeerState(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What this installation accepted from one writer: sequence number and head, how many of its records the quotas
    admitted into the view (``admitted``; ``None``: all, as before quotas), why it is frozen, if it is, and the
    principal its checkpoint claims when that is not the one it is trusted as; ``seen``: the last :data:`_SEEN`
    (sequence number, head) pairs accepted, against which other writers' witnesses are checked without reading the
    stream again."""

    seq: int = 0
    head: str | None = None
    admitted: int | None = None
    frozen: str | None = None
    frozen_seq: int | None = None
    claimed: str | None = None
    seen: list[tuple[int, str]] = msgspec.field(default_factory=list)

    def shown(self) -> int:
        """The records ``1..shown()`` of the accepted stream the view holds."""
        return self.seq if self.admitted is None else min(self.admitted, self.seq)

    def pending(self) -> bool:
        """Whether accepted records still wait for the quotas to admit them."""
        return self.shown() < self.seq


def record_time() -> str:
    """Now, UTC to the second: the ``at`` a writer stamps on each new put."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def sync_lock(data_root: Path) -> Iterator[None]:
    directory = share_dir(data_root)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    fd = os.open(directory / "sync.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read_stream(mirror: Mirror, commit: str, shared: str, writer: str) -> Stream:
    checkpoint, records, payloads = mirror.read_stream(commit)
    return parse_stream(shared=shared, writer=writer, checkpoint=checkpoint, records=records, payloads=payloads)


def _own_base(mirror: Mirror, shared: str, key: SigningKey) -> tuple[Stream | None, str | None]:
    """This writer's stream to extend and its commit: the local ref, or the fetched one when it verifies and
    extends the local one (a data root restored from an older backup)."""
    local_commit = mirror.ref(f"{OWN}/{shared}/{key.key_id}")
    local = _read_stream(mirror, local_commit, shared, key.key_id) if local_commit else None
    remote_commit = mirror.ref(f"{FETCHED}/{shared}/{key.key_id}")
    if remote_commit and remote_commit != local_commit:
        with contextlib.suppress(StreamProblem):
            remote = _read_stream(mirror, remote_commit, shared, key.key_id)
            base_seq = local.checkpoint.seq if local else 0
            if remote.checkpoint.seq > base_seq and (
                local is None or remote.records[base_seq - 1].hash == local.checkpoint.head
            ):
                mirror.set_ref(f"{OWN}/{shared}/{key.key_id}", remote_commit, local_commit)
                return remote, remote_commit
    return local, local_commit


def extend_own(
    mirror: Mirror,
    shared: str,
    key: SigningKey,
    principal: str | None,
    items: dict[str, dict[str, Any]],
    witnesses: bytes = b"",
    at: str | None = None,
) -> tuple[str | None, dict[str, int]]:
    """Append what changed to this installation's stream and move its ref; ``(commit, counts)``. Every new put
    carries ``at`` (default: :func:`record_time`), which readers compare with this key's window. ``witnesses`` is
    the stream's ``witnesses`` file: a change of it alone writes a new commit (``counts["witnessed"]`` 1) with the
    same checkpoint."""
    stamp = at if at is not None else record_time()
    base, base_commit = _own_base(mirror, shared, key)
    records: list[Record] = list(base.records) if base else []
    blobs: dict[str, bytes] = {}
    live: dict[str, int] = base.live() if base else {}
    if base:
        for seq in live.values():
            body = base.bodies[seq]
            digest, blob = payload_blob(body, base.salts[seq])
            blobs[digest] = blob
    added = erased = 0

    def append(kind: str, **fields: Any) -> None:
        previous = records[-1].hash if records else None
        dated = stamp if kind == "put" else None  # an erase says nothing of its item, nor when it was forgotten
        records.append(make_record(len(records) + 1, previous, kind, at=dated, **fields))

    for item in sorted(live):
        seq = live[item]
        current = base.bodies[seq] if base else None
        if items.get(item) != current:
            append("erase", target=seq)
            blobs.pop(records[seq - 1].digest or "", None)
            erased += 1
    for item, body in items.items():
        if item in live and base is not None and base.bodies[live[item]] == body:
            continue
        digest, blob = payload_blob(body)
        blobs[digest] = blob
        append("put", item=item, digest=digest)
        added += 1
    counts = {"added": added, "erased": erased, "seq": len(records), "witnessed": 0}
    if not added and not erased:
        held = mirror.read_file({"own": base_commit}, WITNESSES_FILE).get("own", b"") if base_commit else b""
        if held == witnesses:
            return base_commit, counts
        counts["witnessed"] = 1
    if base is not None and not added and not erased:
        checkpoint = base.checkpoint
    else:
        checkpoint = sign_checkpoint(
            key.sign, shared=shared, writer=key.key_id, public_hex=key.public_hex, principal=principal, records=records
        )
    kept = mirror.payload_entries(base_commit) if base_commit else {}
    commit = mirror.write_stream(msgspec.json.encode(checkpoint), records_bytes(records), blobs, kept, witnesses)
    mirror.set_ref(f"{OWN}/{shared}/{key.key_id}", commit, mirror.ref(f"{OWN}/{shared}/{key.key_id}"))
    return commit, counts


def load_peers(data_root: Path, shared: str) -> dict[str, PeerState]:
    """What this installation accepted from each writer of ``shared`` (``peers.json``).

    Raises:
        StorageError: ``STORAGE_READ_FAILED`` (garbled).
    """
    path = project_dir(data_root, shared) / _PEERS_FILE
    try:
        return msgspec.json.decode(path.read_bytes(), type=dict[str, PeerState])
    except FileNotFoundError:
        return {}
    except (OSError, msgspec.DecodeError) as exc:
        raise StorageError("the record of accepted writers is unreadable", code="STORAGE_READ_FAILED") from exc


def _save_peers(data_root: Path, shared: str, peers: dict[str, PeerState]) -> None:
    write_json(project_dir(data_root, shared) / _PEERS_FILE, dict(sorted(peers.items())))


class _BlobReader:
    """The payload blobs of a group of streams, in the order the reader verifies them, read :data:`_BLOB_BATCH` at a
    time (one git process each), so memory holds one batch of payloads, never a whole stream; a batch spans writers,
    so many small streams cost one git process. A blob asked out of order (a writer skipped as tampered) starts a
    batch at its own position."""

    def __init__(self, mirror: Mirror, order: list[str]) -> None:
        self.mirror = mirror
        self.order = order
        self.position = {sha: at for at, sha in enumerate(order)}
        self.held: dict[str, bytes] = {}

    def get(self, sha: str) -> bytes:
        """The blob's bytes; empty when git does not have it (its digest then does not verify)."""
        if sha not in self.held and sha in self.position:
            at = self.position[sha]
            self.held = {}
            self.held = self.mirror.read_blobs(self.order[at : at + _BLOB_BATCH])
        return self.held.get(sha, b"")


def _verify_puts(
    stream: Stream,
    puts: list[Record],
    entries: dict[str, str],
    reader: _BlobReader,
    verified: dict[str, str] | None = None,
    known: dict[str, Any] | None = None,
) -> None:
    """Verify the payloads of ``puts`` (``entries``: payload name → blob id), :data:`_BLOB_BATCH` at a time: one
    held under the blob id verified before (``verified``) is taken from ``known``, any other read through ``reader``.

    Raises:
        StreamProblem: the first payload that is missing or does not verify.
    """
    verified = verified or {}
    for at in range(0, len(puts), _BLOB_BATCH):
        chunk = puts[at : at + _BLOB_BATCH]
        payloads: dict[str, bytes | None] = {}
        for record in chunk:
            digest = record.digest or ""
            if digest in entries:
                same = verified.get(digest) == entries[digest]
                payloads[digest] = None if same else reader.get(entries[digest])
        verify_payloads(stream, chunk, payloads, known)


def _head_groups(pending: list[str], sizes: dict[str, int]) -> Iterator[list[str]]:
    """``pending`` writers in order, in groups whose records files total about :data:`_HEADS_BYTES` (a writer is never
    split), so the heads read at once stay bounded whatever the number and length of the streams."""
    group: list[str] = []
    total = 0
    for writer in pending:
        size = sizes.get(writer, 0)
        if group and total + size > _HEADS_BYTES:
            yield group
            group, total = [], 0
        group.append(writer)
        total += size
    if group:
        yield group


def _first_look(
    writer: str,
    commit: str,
    accepted: str | None,
    trusted: dict[str, TrustedKey],
    peers: dict[str, PeerState],
    heads: dict[str, tuple[bytes, bytes, dict[str, str]]],
    revoked: Collection[str] = (),
) -> dict[str, Any]:
    """A writer's report entry, its status already set when there is nothing to verify: ``set_aside`` (a revoked
    key), ``unknown`` (not trusted: its checkpoint's claims are listed), ``frozen``, or ``unchanged`` (the accepted
    commit)."""
    state = peers.get(writer, PeerState())
    entry: dict[str, Any] = {"writer": writer, "principal": None, "status": "", "seq": state.seq}
    if writer in revoked or writer not in trusted:
        if writer in revoked:
            entry.update(status="set_aside", problem=REVOKED_WHY, problem_seq=None)
        else:
            entry["status"] = "unknown"
        with contextlib.suppress(msgspec.DecodeError, KeyError):
            claimed = msgspec.json.decode(heads[writer][0], type=Checkpoint)
            entry.update(seq=claimed.seq, principal_claimed=claimed.principal)
        return entry
    entry["principal"] = trusted[writer].principal
    if state.frozen is not None:
        entry.update(status="frozen", problem=state.frozen, problem_seq=state.frozen_seq)
    elif commit == accepted and not state.pending():
        entry["status"] = "unchanged"
    if state.admitted is not None:
        entry["admitted"] = state.shown()
    return entry


def _accept(
    peers: dict[str, PeerState], writer: str, stream: Stream, entry: dict[str, Any], admission: Admission
) -> bool:
    """Whether a verified stream extends the one last accepted from its writer: a lower sequence number is a
    rollback (reported), another head at an accepted number or a fork is equivocation (the writer is frozen);
    otherwise ``peers`` and ``entry`` record it as accepted, with the records the quotas admitted."""
    state = peers.get(writer, PeerState())
    seq, head = stream.checkpoint.seq, stream.checkpoint.head
    if seq < state.seq:
        entry.update(status="rollback", problem=f"sequence {seq} is below the accepted {state.seq}", problem_seq=seq)
        return False
    if seq == state.seq and head != state.head:
        _freeze(peers, writer, state, "equivocation: another head at an accepted sequence number", seq, entry)
        return False
    if state.seq and stream.records[state.seq - 1].hash != state.head:
        _freeze(peers, writer, state, "equivocation: the stream forks from the accepted one", state.seq, entry)
        return False
    grown = seq > state.seq or admission.upto > state.shown()
    entry.update(status="accepted" if grown else "unchanged", seq=seq, added=seq - state.seq)
    entry.update(admitted=admission.upto, admitted_now=max(0, admission.upto - state.shown()))
    if admission.quota:
        entry["quota"] = admission.quota
    seen = state.seen if seq == state.seq or head is None else [*state.seen, (seq, head)][-_SEEN:]
    peers[writer] = PeerState(seq=seq, head=head, admitted=admission.upto, seen=seen)
    return True


class _Judged(msgspec.Struct, kw_only=True):
    """One writer's verified records on their way to the view: what the quotas admit and which puts it shows."""

    stream: Stream
    puts: list[Record]
    verified: dict[str, str]
    known: dict[str, Any]
    admission: Admission


def _size_asks(
    stream: Stream, start: int, entries: dict[str, str], verified: dict[str, str], quotas: Quotas
) -> dict[int, str]:
    """put sequence number → payload blob id of the puts whose sizes the quotas need: every put of the window a sync
    may admit, and the shown puts before it whose blob was not verified before."""
    erased = stream.erased()
    end = min(len(stream.records), start + quotas.records_per_sync)
    asks: dict[int, str] = {}
    for seq in shown_puts(stream.records, erased, start).values():
        digest = stream.records[seq - 1].digest or ""
        if digest in entries and verified.get(digest) != entries[digest]:
            asks[seq] = entries[digest]
    for record in stream.records[start:end]:
        if record.kind == "put" and record.seq not in erased and (record.digest or "") in entries:
            asks[record.seq] = entries[record.digest or ""]
    return asks


def _judge_prefix(stream: Stream, start: int, sizes: dict[int, int], quotas: Quotas) -> tuple[Admission, list[Record]]:
    """What the quotas admit after ``start`` and the puts the view shows then (oversized payloads left out)."""
    erased = stream.erased()
    admission = admit(stream.records, erased, start, sizes, quotas)
    big = {seq for seq, size in sizes.items() if size > quotas.payload_bytes}
    shown = shown_puts(stream.records, erased, admission.upto)
    return admission, [stream.records[seq - 1] for seq in sorted(shown.values()) if seq not in big]


def judge_writers(
    data_root: Path,
    mirror: Mirror,
    shared: str,
    me: str,
    trusted: dict[str, TrustedKey],
    previous: View | None = None,
    revoked: Collection[str] = (),
    quotas: Quotas = QUOTAS,
    *,
    peers: dict[str, PeerState],
) -> tuple[list[dict[str, Any]], dict[str, ViewWriter]]:
    """Judge every fetched writer's ref against the last stream accepted from it; move ``refs/accepted`` and write
    the view file of each stream accepted now. ``peers`` (``peers.json``, :func:`load_peers`) is updated in place
    and saved.

    The heads (checkpoint, records, payload tree) of changed streams are read in groups of about
    :data:`_HEADS_BYTES` of records, one git process per group; payloads through :class:`_BlobReader`, about
    :data:`_BLOB_BATCH` blobs at a time, verified as they are read, so memory holds one group's heads and one batch
    of payloads, however long one writer's stream; a payload held under the blob id the previous view verified is not
    read again. An unknown or revoked writer's payloads are never read. Returns the report and the index entries of
    the writers accepted now."""
    fetched = mirror.refs(f"{FETCHED}/{shared}")
    accepted = mirror.refs(f"{ACCEPTED}/{shared}")
    before = {w.key_id: w for w in previous.writers} if previous is not None else {}

    def waits(writer: str, commit: str) -> bool:
        state = peers.get(writer, PeerState())
        return state.frozen is None and (commit != accepted.get(writer) or state.pending())

    changed = {w: c for w, c in fetched.items() if w != me and (w not in trusted or waits(w, c))}
    pending = [w for w in sorted(fetched) if w != me]
    report: list[dict[str, Any]] = []
    fresh: dict[str, ViewWriter] = {}
    erased: set[str] = set()
    for group in _head_groups(pending, mirror.records_sizes(changed)):
        heads = mirror.read_heads({w: changed[w] for w in group if w in changed})
        parsed: dict[str, _Judged | StreamProblem] = {}
        order: list[str] = []
        seen: dict[str, tuple[Stream, int, dict[str, str], dict[str, dict[str, Any]], dict[int, str]]] = {}
        for writer in group:
            if writer not in changed or writer not in trusted or writer in revoked:
                continue
            checkpoint, records, entries = heads[writer]
            heads[writer] = (checkpoint, b"", entries)  # the parsed records are all that is used from here on
            try:
                stream = parse_records(shared=shared, writer=writer, checkpoint=checkpoint, records=records)
            except StreamProblem as problem:
                parsed[writer] = problem
                continue
            del records
            held = before.get(writer)
            kept = writer_verified(data_root, shared, held) if held is not None else {}
            verified = {digest: blob for digest, (blob, _body) in kept.items()}
            known: dict[str, Any] = {digest: body for digest, (_blob, body) in kept.items()}  # bodies as JSON
            del kept
            start = min(peers.get(writer, PeerState()).shown(), stream.checkpoint.seq)
            seen[writer] = (stream, start, verified, known, _size_asks(stream, start, entries, verified, quotas))
        blob_sizes = mirror.blob_sizes(sorted({sha for *_, asks in seen.values() for sha in asks.values()}))
        for writer, (stream, start, verified, known, asks) in seen.items():
            sizes = {seq: blob_sizes.get(sha, 0) for seq, sha in asks.items()}
            admission, puts = _judge_prefix(stream, start, sizes, quotas)
            parsed[writer] = _Judged(stream=stream, puts=puts, verified=verified, known=known, admission=admission)
            entries = heads[writer][2]
            for record in puts:
                sha = entries.get(record.digest or "")
                if sha is not None and verified.get(record.digest or "") != sha:
                    order.append(sha)
        del seen
        reader = _BlobReader(mirror, order)
        for writer in group:
            entry = _first_look(writer, fetched[writer], accepted.get(writer), trusted, peers, heads, revoked)
            report.append(entry)
            if entry["status"]:
                continue
            found = parsed.pop(writer)
            try:
                if isinstance(found, StreamProblem):
                    raise found
                stream, puts = found.stream, found.puts
                entries = heads[writer][2]
                _verify_puts(stream, puts, entries, reader, found.verified, found.known)
                refuse_erased_payloads(stream, entries)
            except StreamProblem as problem:
                entry.update(status="tampered", problem=problem.reason, problem_seq=problem.seq)
                continue
            claimed = stream.checkpoint.principal
            if claimed != trusted[writer].principal:
                entry["principal_claimed"] = claimed
            if _accept(peers, writer, stream, entry, found.admission):
                commit = fetched[writer]
                if claimed != trusted[writer].principal:
                    peers[writer].claimed = claimed
                mirror.set_ref(f"{ACCEPTED}/{shared}/{writer}", commit, accepted.get(writer))
                view_writer = _view_writer(stream, commit, entries, trusted[writer], puts, found.admission.upto)
                if view_writer.ignored:
                    entry["out_of_window"] = view_writer.ignored
                fresh[writer] = write_writer(data_root, shared, view_writer)
                erased.update(_erased_statements(stream, found.known))
        del heads, parsed, reader
    _save_peers(data_root, shared, peers)
    if erased:
        key = load_or_create_hook_key(data_root)
        add_erased(data_root, shared, {erased_statement_digest(key, statement) for statement in erased})
    return report, fresh


def _erased_statements(stream: Stream, known: dict[str, Any]) -> set[str]:
    """The statements of the claims this reader showed before (``known``: their bodies by payload digest) that the
    stream now erases for good (the item is not put again): an import of an old export leaves them out."""
    if not known:  # a writer accepted for the first time: nothing of it was shown here
        return set()
    live = stream.live()
    found: set[str] = set()
    for record in stream.records:
        if record.kind != "erase" or record.target is None:
            continue
        put = stream.records[record.target - 1]
        raw = known.get(put.digest or "")
        if raw is None or put.item is None or put.item in live:
            continue
        body = msgspec.json.decode(raw) if isinstance(raw, msgspec.Raw | bytes) else raw
        claim = body.get("claim") if isinstance(body, dict) and body.get("type") == "claim" else None
        if isinstance(claim, dict) and isinstance(claim.get("statement"), str):
            found.add(claim["statement"])
    return found


def window_text(key: TrustedKey) -> str | None:
    """A key's window as the view records it (``after..before``; ``None`` without one)."""
    if key.valid_after is None and key.valid_before is None:
        return None
    return f"{key.valid_after or ''}..{key.valid_before or ''}"


def _window_cut(stream: Stream, key: TrustedKey) -> int | None:
    """The first put dated after the key's ``valid-before`` (or undated): it and every later put are ignored, so a
    record dated back after it does not slip in again; ``None`` without ``valid-before`` or such a put."""
    if key.valid_before is None:
        return None
    for record in stream.records:
        if record.kind == "put" and (record.at is None or record.at > key.valid_before):
            return record.seq
    return None


def _view_writer(
    stream: Stream,
    commit: str,
    blob_ids: dict[str, str],
    trusted: TrustedKey,
    puts: list[Record] | None = None,
    upto: int | None = None,
) -> ViewWriter:
    """The view's entry of a trusted writer's accepted stream: the shown ``puts`` (admitted by the quotas, their
    bodies verified; default: every live put) that lie in the key's window (``ignored`` counts the others; erases
    always apply, they only ever remove the writer's own items), and the retracts among records ``1..upto``
    (default: all) that lie in it too."""
    if puts is None:
        puts = [stream.records[seq - 1] for seq in sorted(stream.live().values())]
    if upto is None:
        upto = stream.checkpoint.seq
    items = []
    cut = _window_cut(stream, trusted)
    ignored = 0
    for record in puts:
        seq = record.seq
        if (cut is not None and seq >= cut) or not in_window(record.at, trusted):
            ignored += 1
            continue
        digest = record.digest or ""
        items.append(
            {"seq": seq, "item": record.item, "body": stream.bodies[seq], "digest": digest, "blob": blob_ids[digest]}
        )
    retracts = [
        r
        for r in retract_records(stream.records, upto)
        if (cut is None or r["seq"] < cut) and in_window(stream.records[r["seq"] - 1].at, trusted)
    ]
    return ViewWriter(
        key_id=stream.checkpoint.writer,
        principal=trusted.principal,
        seq=stream.checkpoint.seq,
        commit=commit,
        items=items,
        window=window_text(trusted),
        ignored=ignored,
        retracts=retracts,
    )


def _read_admitted(
    mirror: Mirror, commit: str, shared: str, writer: str, trusted: TrustedKey, upto: int, quotas: Quotas
) -> ViewWriter:
    """A writer's view file made again from its accepted stream: the records the quotas admitted (``1..upto``),
    payloads read :data:`_BLOB_BATCH` at a time, oversized ones neither read nor shown.

    Raises:
        StreamProblem: the accepted stream no longer verifies in the mirror.
    """
    checkpoint, records, entries = mirror.read_heads({writer: commit})[writer]
    stream = parse_records(shared=shared, writer=writer, checkpoint=checkpoint, records=records)
    upto = min(upto, stream.checkpoint.seq)
    shown = sorted(shown_puts(stream.records, stream.erased(), upto).values())
    asks = {seq: entries[digest] for seq in shown if (digest := stream.records[seq - 1].digest or "") in entries}
    blob_sizes = mirror.blob_sizes(sorted(set(asks.values())))
    big = {seq for seq, sha in asks.items() if blob_sizes.get(sha, 0) > quotas.payload_bytes}
    puts = [stream.records[seq - 1] for seq in shown if seq not in big]
    order = [entries[r.digest or ""] for r in puts if (r.digest or "") in entries]
    _verify_puts(stream, puts, entries, _BlobReader(mirror, order))
    return _view_writer(stream, commit, entries, trusted, puts, upto)


def _freeze(
    peers: dict[str, PeerState], writer: str, state: PeerState, why: str, seq: int, entry: dict[str, Any]
) -> None:
    peers[writer] = PeerState(
        seq=state.seq, head=state.head, admitted=state.admitted, frozen=why, frozen_seq=seq, seen=state.seen
    )
    entry.update(status="frozen", problem=why, problem_seq=seq)


def own_witnesses(mirror: Mirror, shared: str) -> bytes:
    """The ``witnesses`` file this installation publishes: the checkpoint of every stream it accepted."""
    return witnesses_bytes(list(mirror.read_file(mirror.refs(f"{ACCEPTED}/{shared}"), CHECKPOINT_FILE).values()))


def check_witnesses(
    data_root: Path,
    mirror: Mirror,
    shared: str,
    me: str,
    trusted: dict[str, TrustedKey],
    report: list[dict[str, Any]],
    fresh: dict[str, ViewWriter],
    peers: dict[str, PeerState],
) -> None:
    """Freeze every writer another writer's witnesses prove to have shown two histories: a checkpoint of it, signed
    by its key, at a sequence number this installation accepted but with another head. Only the witnesses of
    writers accepted now are read (the others' were read when they changed); a checkpoint is verified only where it
    contradicts what was accepted, and one past what was accepted proves nothing yet. ``peers`` (``peers.json``) is
    updated in place and saved."""
    files = mirror.read_file({w: fresh[w].commit for w in fresh}, WITNESSES_FILE)
    if not files:
        return
    entries = {e["writer"]: e for e in report}
    accepted = mirror.refs(f"{ACCEPTED}/{shared}")
    records: dict[str, list[bytes]] = {}
    seen = {writer: {tuple(pair) for pair in state.seen} for writer, state in peers.items()}
    for witness, data in sorted(files.items()):
        for point in witnessed(data):
            writer, state = point.writer, peers.get(point.writer)
            if writer in (me, witness) or writer not in trusted or state is None or state.frozen is not None:
                continue
            if point.seq > state.seq or point.seq < 1 or (point.seq, point.head) in seen[writer]:
                continue
            if point.seq == state.seq:
                ours = state.head
            else:
                if writer not in records:
                    found = mirror.read_file({writer: accepted[writer]}, RECORDS_FILE) if writer in accepted else {}
                    records[writer] = found.get(writer, b"").splitlines()
                lines = records[writer]
                ours = msgspec.json.decode(lines[point.seq - 1], type=Record).hash if point.seq <= len(lines) else None
            if ours is None or ours == point.head:
                continue
            try:
                check_checkpoint(point, shared=shared, writer=writer)
            except StreamProblem:
                continue
            why = f"equivocation: writer {witness[:12]} holds this writer's signed checkpoint with another head"
            _freeze(peers, writer, state, why, point.seq, entries.setdefault(writer, {"writer": writer}))
    _save_peers(data_root, shared, peers)


def build_view(
    mirror: Mirror,
    shared: str,
    principal: str | None,
    trusted: dict[str, TrustedKey],
    report: list[dict[str, Any]],
    fresh: dict[str, ViewWriter],
    previous: View | None,
    me: str | None = None,
    quotas: Quotas = QUOTAS,
    own_retracts: list[dict[str, Any]] | None = None,
    *,
    peers: dict[str, PeerState],
) -> View:
    """The combined view's index over the accepted streams of trusted writers (unknown writers are listed, never
    shown): the writers accepted now (``fresh``, their files written), the previous entries of the others whose
    files are still sealed, and any other accepted stream read again from the mirror (its file written again)."""
    before = {w.key_id: w for w in previous.writers} if previous is not None else {}
    writers: list[ViewWriter] = []
    for writer, commit in sorted(mirror.refs(f"{ACCEPTED}/{shared}").items()):
        if writer not in trusted:
            continue
        if writer in fresh:
            writers.append(fresh[writer])
            continue
        kept = before.get(writer)
        if (
            kept is not None
            and kept.commit == commit
            and kept.window == window_text(trusted[writer])
            and writer_file_sealed(mirror.data_root, shared, writer)
        ):
            writers.append(msgspec.structs.replace(kept, principal=trusted[writer].principal))
            continue
        upto = peers.get(writer, PeerState()).shown()
        view_writer = _read_admitted(mirror, commit, shared, writer, trusted[writer], upto, quotas)
        writers.append(write_writer(mirror.data_root, shared, view_writer))
    unknown = [
        {"writer": e["writer"], "seq": e["seq"], "principal_claimed": e.get("principal_claimed")}
        for e in report
        if e["status"] == "unknown"
    ]
    problems = [e for e in report if e["status"] in ("tampered", "rollback", "frozen", "set_aside")]
    mine = (
        [ViewWriter(key_id=me, principal=principal or "", seq=0, commit="", retracts=own_retracts or [])] if me else []
    )
    retracted, refused = judge_retracts(writers + mine, trusted, me, principal)
    return View(
        shared=shared,
        principal=principal,
        writers=writers,
        unknown=unknown,
        problems=problems + refused,
        retracted=retracted,
    )


def _own_retracts(mirror: Mirror, shared: str, me: str, commit: str | None) -> list[dict[str, Any]]:
    """The retract records of this installation's own stream (its view honours them as every reader does)."""
    if commit is None:
        return []
    checkpoint, records, _entries = mirror.read_heads({me: commit})[me]
    if b'"retract"' not in records:
        return []
    stream = parse_records(shared=shared, writer=me, checkpoint=checkpoint, records=records)
    return retract_records(stream.records, stream.checkpoint.seq)


def sync(data_root: Path, shared: str, principal: str | None, project_root: str | None = None) -> dict[str, Any]:
    """Fetch, extend and push this installation's stream, judge the others, write the view; returns the report.

    Who may write: the keys trusted here and, with ``project_root``, the keys its checkout's
    ``.intentloop/allowed_signers`` lists, less those ``.intentloop/revoked_signers`` lists (``signer_problems``
    reports the lines that do not count).

    Raises:
        ConflictError: ``SHARE_NOT_INITIALIZED`` (no remote), ``SHARE_REDACTION_HIT`` (nothing pushed).
        StorageError: ``SHARE_GIT_FAILED`` and storage errors.
    """
    with sync_lock(data_root):
        settings = read_settings(data_root, shared)
        remote = settings.remote
        if remote is None:
            raise ConflictError(
                "no remote is set for this shared project: `intentloop share remote URL`", code="SHARE_NOT_INITIALIZED"
            )
        found = publish_set(data_root, settings.locals, settings)
        if found.refused:
            raise ConflictError(
                f"{len(found.refused)} records would leave with text that still redacts "
                f"({', '.join(r.item for r in found.refused[:5])}); nothing was pushed",
                code="SHARE_REDACTION_HIT",
            )
        key = load_or_create_signing_key(data_root)
        mirror = Mirror(data_root)
        mirror.ensure()
        mirror.clear_stale_locks()  # a sync killed inside git left them; we hold the sync lock
        mirror.fetch(remote, shared)
        commit, counts = extend_own(mirror, shared, key, principal, found.items, own_witnesses(mirror, shared))
        remote_own = mirror.ref(f"{FETCHED}/{shared}/{key.key_id}")
        pushed = False
        if commit is not None and commit != remote_own:
            mirror.push(remote, shared, key.key_id, commit, remote_own)
            # the remote now holds it: the fetched copy of the old one would keep an erased payload reachable
            mirror.set_ref(f"{FETCHED}/{shared}/{key.key_id}", commit, remote_own)
            pushed = True
        team = read_team(project_root) if project_root is not None else Team(signers=[], revoked={}, problems=[])
        trusted, conflicts = trust_from(team, trusted_keys(data_root))
        signer_problems: list[SignerProblem] = [*team.problems, *conflicts]
        previous = read_view(data_root, shared, items=False)
        peers = load_peers(data_root, shared)  # one record of accepted writers, updated and saved by each step
        report, fresh = judge_writers(
            data_root, mirror, shared, key.key_id, trusted, previous, team.revoked, peers=peers
        )
        check_witnesses(data_root, mirror, shared, key.key_id, trusted, report, fresh, peers)
        mine = _own_retracts(mirror, shared, key.key_id, commit)
        view = build_view(
            mirror, shared, principal, trusted, report, fresh, previous, key.key_id, own_retracts=mine, peers=peers
        )
        view.refs = own_refs(found.items, principal)
        write_view(data_root, view)
    return {
        "shared_id": shared,
        "remote": remote,
        "writer": key.key_id,
        "own": {
            "added": counts["added"],
            "erased": counts["erased"],
            "seq": counts["seq"],
            "pushed": pushed,
            "healed": pushed
            and remote_own is not None
            and counts["added"] + counts["erased"] + counts["witnessed"] == 0,
        },
        "writers": report,
        "retracted": view.retracted,
        "retract_refused": [p for p in view.problems if p["status"] == "retract_refused"],
        "view": {"writers": len(view.writers), "items": sum(w.count for w in view.writers)},
        "signer_problems": [msgspec.to_builtins(p) for p in signer_problems],
    }


__all__ = [
    "REVOKED_WHY",
    "PeerState",
    "build_view",
    "check_witnesses",
    "extend_own",
    "judge_writers",
    "load_peers",
    "own_witnesses",
    "record_time",
    "sync",
    "sync_lock",
    "window_text",
]
