"""Verify one project's ledger into a structured report, with the store's verifier (there is no second one).

The report describes bytes, not meaning: how many whole lines verify, where the first bad one is and why, and how
many bytes follow the verified prefix. Quarantine acts on exactly that prefix through :func:`check_ledger` (which
keeps the bytes); :func:`verify_project` and export stream the same verdict a chunk of lines at a time
(``ProjectStore.scan``), so their memory does not grow with the ledger.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from intentloop.errors import CorruptLedgerError, ErrorCode, StorageError
from intentloop.store import Damage

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from intentloop.model import Event
    from intentloop.store import ProjectStore, SignatureCheck, Verification

    Sink = Callable[[bytes, int, Sequence[Event]], None]

STATUS_BY_CODE = {
    "CORRUPT_TRAILING_EVENT": "torn_tail",
    "CORRUPT_LEDGER": "corrupt",
    "FUTURE_SCHEMA": "future_schema",
    "MIGRATION_UNAVAILABLE": "migration_unavailable",
}


class VerifyReport(msgspec.Struct, frozen=True, kw_only=True):
    """What verifying one ledger found. Field names are the ``--json`` output of ``intentloop verify``.

    Attributes:
        project_id: the project's id.
        ledger_path: where the ledger lives (it may not exist).
        project_exists: the project directory exists under the data root.
        ledger_exists: the ledger file exists (a missing ledger is an empty, intact one).
        status: ``intact``, ``torn_tail``, ``corrupt``, ``future_schema`` or ``migration_unavailable``.
        intact: every byte verified.
        events: number of verified events (the verified prefix).
        head_hash: ``event_hash`` of the last verified event, ``None`` when there is none.
        ledger_schema_version: highest ``schema_version`` among the verified events, ``None`` when there are none.
        byte_length: size of the ledger file in bytes.
        verified_bytes: length of the verified prefix (whole lines with their newlines).
        damaged_bytes: bytes after the verified prefix.
        damaged_sha256: SHA-256 of those bytes, ``None`` when there are none.
        first_bad_line: 1-based number of the first line that does not verify.
        reason: why it does not verify.
        code: the stable error code of that problem (``CORRUPT_LEDGER``, ``CORRUPT_TRAILING_EVENT``, ...).
        torn_tail: the file does not end with a newline (a crashed partial write).
        quarantine_records: summaries already kept in ``quarantine/``.
        signature: ``head.sig`` against the verified chain: ``valid``, ``invalid`` (a rewritten or truncated chain, a
            tampered, garbled or missing signature or one under another key on a project this installation signed),
            ``unsigned`` (none on a project never signed here: a ledger the original implementation wrote; or events
            appended after the signed head without the key) or ``unknown_key`` (another installation's signature on
            a project never signed here).
        signed_events: how many events the signature covers, when it verifies.
        signature_problem: why the signature is ``invalid`` (``None`` otherwise).
        signed_here: this installation recorded the project as signed by it (``R/keys/signed-projects``).
        adopted_events: how many events were appended without the key and signed later as adopted (by the next write
            or by ``verify --accept``), per the verified ``head.sig``.
        adopted: those adoptions, oldest first: ``{"after", "events", "at"}`` (``after``: the events signed before).
    """

    project_id: str
    ledger_path: str
    project_exists: bool
    ledger_exists: bool
    status: str
    intact: bool
    events: int
    head_hash: str | None
    ledger_schema_version: int | None
    byte_length: int
    verified_bytes: int
    damaged_bytes: int
    damaged_sha256: str | None
    first_bad_line: int | None
    reason: str | None
    code: ErrorCode | None
    torn_tail: bool
    quarantine_records: int
    signature: str
    signed_events: int | None
    signature_problem: str | None
    signed_here: bool
    adopted_events: int
    adopted: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready builtins, in field order."""
        return {name: getattr(self, name) for name in self.__struct_fields__}


@dataclass(frozen=True)
class LedgerCheck:
    """The bytes that were verified, the store's verification of them, and the report built from both.

    Attributes:
        data: the ledger's bytes as read (empty when the ledger is missing).
        verification: the store's verdict on ``data``.
        report: the structured report.
    """

    data: bytes
    verification: Verification
    report: VerifyReport

    @property
    def prefix(self) -> bytes:
        """The verified prefix: whole lines exactly as stored."""
        return self.data[: self.verification.byte_length]

    @property
    def suffix(self) -> bytes:
        """What the store read after the verified prefix: everything, unless a line was too long to hold (then
        ``report.damaged_bytes`` and ``damaged_sha256`` still describe all of it; ``recover quarantine --keep-bytes``
        copies it from the file in chunks)."""
        return self.data[self.verification.byte_length :]


def check_bytes(
    data: bytes,
    *,
    store: ProjectStore,
    ledger_exists: bool = True,
    verification: Verification | None = None,
    head_record: Any = None,
) -> LedgerCheck:
    """Build the report of ``data`` as the ledger of ``store``'s project, verifying it unless ``verification`` (of
    exactly these bytes) is given (pure but for the quarantine count).

    Raises:
        StorageError: ``PATH_ESCAPE`` or ``INVALID_DATA_DIR`` when ``quarantine/`` is unsafe.
    """
    if verification is None:
        from intentloop.store import verify_ledger_bytes

        verification = verify_ledger_bytes(data, project_id=store.project_id)
    from intentloop.store import check_chain, read_head_signature

    damage = verification.damage  # all bytes after the verified prefix; the store may not have held them (too long)
    if damage is None and len(data) > verification.byte_length:
        suffix = data[verification.byte_length :]
        damage = Damage(length=len(suffix), sha256=hashlib.sha256(suffix).hexdigest(), torn=not data.endswith(b"\n"))
    record = read_head_signature(store.paths) if head_record is None else head_record[0]  # check_ledger: read first
    events = verification.events
    signature = check_chain(store.paths, len(events), lambda position: events[position].event_hash, record)
    versions = {event.schema_version for event in verification.events}
    report = _report(
        store,
        ledger_exists=ledger_exists,
        events=len(verification.events),
        head_hash=verification.head_hash,
        schema_version=max(versions) if versions else None,
        verified_bytes=verification.byte_length,
        error=verification.error,
        damage=damage,
        torn_tail=damage.torn if damage else bool(data) and not data.endswith(b"\n"),
        signature=signature,
    )
    return LedgerCheck(data=data, verification=verification, report=report)


def _report(
    store: ProjectStore,
    *,
    ledger_exists: bool,
    events: int,
    head_hash: str | None,
    schema_version: int | None,
    verified_bytes: int,
    error: CorruptLedgerError | None,
    damage: Damage | None,
    torn_tail: bool,
    signature: SignatureCheck,
) -> VerifyReport:
    return VerifyReport(
        project_id=store.project_id,
        ledger_path=str(store.ledger_path),
        project_exists=store.exists(),
        ledger_exists=ledger_exists,
        status="intact" if error is None else STATUS_BY_CODE.get(error.code, "corrupt"),
        intact=error is None,
        events=events,
        head_hash=head_hash,
        ledger_schema_version=schema_version,
        byte_length=verified_bytes + (damage.length if damage else 0),
        verified_bytes=verified_bytes,
        damaged_bytes=damage.length if damage else 0,
        damaged_sha256=damage.sha256 if damage and damage.length else None,
        first_bad_line=error.line if error is not None else None,
        reason=error.reason if error is not None else None,
        code=error.code if error is not None else None,
        torn_tail=torn_tail,
        quarantine_records=count_quarantine_records(store),
        signature=signature.status,
        signed_events=signature.signed_events,
        signature_problem=signature.problem,
        signed_here=signature.recorded,
        adopted_events=signature.adopted_events,
        adopted=[{"after": a.after, "events": a.events, "at": a.at} for a in signature.adopted],
    )


def check_ledger(store: ProjectStore) -> LedgerCheck:
    """Read ``store``'s ledger lock-free (creating nothing) and verify it, keeping its bytes (quarantine compares
    and counts them; a report alone is :func:`verify_project`, which streams).

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``INVALID_DATA_DIR``, ``TRANSIENT_FILE_RACE`` or
            ``STORAGE_READ_FAILED`` when the ledger cannot be read safely.
    """
    from intentloop.store import read_head_signature

    for _attempt in range(_RACE_RETRIES):
        # head.sig first: a writer signs its next head beside the current one before its commit, so the ledger read
        # after it holds a head it signs, unless head.sig changed meanwhile (then both are read again).
        before = _ledger_identity(store)
        record = read_head_signature(store.paths)
        stored = store.read_raw()
        if stored is None:
            return check_bytes(b"", store=store, ledger_exists=False)
        data, verification = stored
        check = check_bytes(data, store=store, verification=verification, head_record=(record,))
        if _settled(store, record, before, check.report):
            return check
    return check


#: How often a report is read again when a writer changed the ledger or head.sig while it was read.
_RACE_RETRIES = 50


def _ledger_identity(store: ProjectStore) -> tuple[int, int] | None:
    try:
        st = os.lstat(store.ledger_path)
    except OSError:
        return None
    return st.st_ino, st.st_size


def _settled(store: ProjectStore, record: object, before: tuple[int, int] | None, report: VerifyReport) -> bool:
    """Whether ``report`` stands. A valid signature on an intact chain always does (it signs exactly what was read).
    Anything else only when neither file changed while they were read (``before``: the ledger's inode and size when
    reading began): a writer may have replaced the ledger and then put back a ``head.sig`` equal to the one read
    first (a deletion of the event just appended), and a torn last line may be a write still in progress."""
    from intentloop.store import read_head_signature

    if report.intact and report.signature == "valid":
        return True
    if read_head_signature(store.paths) != record:
        return False
    after = _ledger_identity(store)
    return after == before and (after is None or after[1] == report.byte_length)


class _Tally:
    """What a report needs of the events streaming past: the highest schema version and the hashes ``head.sig`` may
    name (its signed head, and the previous one while a commit is in flight)."""

    def __init__(self, marks: Sequence[int]) -> None:
        self.marked: dict[int, str | None] = dict.fromkeys(marks)  # 0-based positions asked for
        self.version: int | None = None
        self.seen = 0

    def hash_at(self, position: int) -> str | None:
        return self.marked.get(position)

    def __call__(self, _lines: bytes, _start: int, events: Sequence[Event]) -> None:
        if not events:
            return
        highest = max(event.schema_version for event in events)
        self.version = highest if self.version is None else max(self.version, highest)
        for position in self.marked:
            if self.seen <= position < self.seen + len(events):
                self.marked[position] = events[position - self.seen].event_hash
        self.seen += len(events)


def verify_project(store: ProjectStore, sink: Sink | None = None) -> VerifyReport:
    """The report of :func:`check_ledger`, verified a chunk of lines at a time (what ``intentloop verify`` prints):
    memory does not grow with the ledger. ``sink`` also sees each run of verified lines (an export writes them), of
    every attempt: a writer changing ``head.sig`` meanwhile makes the report read again.

    Raises:
        StorageError: as :func:`check_ledger`.
    """
    from intentloop.store import check_chain, read_head_signature, signed_positions

    report: VerifyReport | None = None
    for _attempt in range(_RACE_RETRIES):
        before = _ledger_identity(store)
        record = read_head_signature(store.paths)  # before the ledger, as check_ledger reads it
        tally = _Tally(signed_positions(record))

        def both(lines: bytes, start: int, events: Sequence[Event], tally: _Tally = tally) -> None:
            tally(lines, start, events)
            if sink is not None:
                sink(lines, start, events)

        try:
            scan = store.scan(both)
        except StorageError as exc:  # replaced while read (TRANSIENT_FILE_RACE): read again
            if exc.code != "TRANSIENT_FILE_RACE":
                raise
            continue
        if scan is None:
            return check_bytes(b"", store=store, ledger_exists=False).report
        signature = check_chain(store.paths, scan.line_count, tally.hash_at, record)
        report = _report(
            store,
            ledger_exists=True,
            events=scan.line_count,
            head_hash=scan.head_hash,
            schema_version=tally.version,
            verified_bytes=scan.byte_length,
            error=scan.error,
            damage=scan.damage,
            torn_tail=scan.damage.torn if scan.damage else False,
            signature=signature,
        )
        if _settled(store, record, before, report):
            return report
    if report is None:
        raise StorageError("the ledger kept changing while it was verified", code="TRANSIENT_FILE_RACE")
    return report


def count_quarantine_records(store: ProjectStore) -> int:
    """How many summary records ``quarantine/`` holds (``*.json``); 0 when it does not exist.

    Raises:
        StorageError: as :func:`count_json_records`.
    """
    return count_json_records(store.quarantine_dir)


def count_json_records(directory: Path) -> int:
    """How many ``*.json`` records a data directory (``quarantine/``, ``private-sessions/``) holds; 0 when absent.

    Raises:
        StorageError: ``PATH_ESCAPE`` (a symlink), ``INVALID_DATA_DIR`` (not a directory), ``STORAGE_READ_FAILED``.
    """
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise StorageError(f"cannot inspect {directory.name}/: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
    if stat.S_ISLNK(st.st_mode):
        raise StorageError(f"{directory.name}/ is a symbolic link", code="PATH_ESCAPE")
    if not stat.S_ISDIR(st.st_mode):
        raise StorageError(f"{directory.name} is not a directory", code="INVALID_DATA_DIR")
    try:
        return sum(1 for name in os.listdir(directory) if name.endswith(".json"))
    except OSError as exc:
        raise StorageError(f"cannot list {directory.name}/: {exc.strerror}", code="STORAGE_READ_FAILED") from exc


__all__ = [
    "STATUS_BY_CODE",
    "LedgerCheck",
    "VerifyReport",
    "check_bytes",
    "check_ledger",
    "count_json_records",
    "count_quarantine_records",
    "verify_project",
]
