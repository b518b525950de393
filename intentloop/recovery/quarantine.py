"""Quarantine a damaged ledger suffix: record what was removed, then keep the verified prefix as the ledger.

Everything happens under the ledger lock, entered without the store's own verification (which refuses a damaged
ledger). The summary goes into ``quarantine/`` before the ledger is replaced, so damage is never removed without a
record; a run interrupted between the two reuses that record, and a repeat run finds an intact ledger and changes
nothing. Both writes go through the store's atomic write path (``write_quarantine``, ``rewrite``), never by hand.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model import canonical_bytes, utc_now
from intentloop.recovery._files import read_data_file
from intentloop.recovery.report import LedgerCheck, check_ledger
from intentloop.recovery.salvaging import count_suffix

if TYPE_CHECKING:
    from intentloop.store import LockedLedger, ProjectStore

RECORD_PREFIX = "damaged-"

_REFUSED_CODES = frozenset({"FUTURE_SCHEMA"})


class QuarantineResult(msgspec.Struct, frozen=True, kw_only=True):
    """What ``recover quarantine`` did.

    Attributes:
        action: ``"quarantined"`` when a damaged suffix was set aside, ``"none"`` when the ledger was intact.
        events: events in the ledger afterwards (the verified prefix).
        head_hash: its head.
        verified_bytes: its size in bytes.
        quarantined_bytes: bytes removed from the ledger.
        sha256: SHA-256 of the removed bytes.
        first_bad_line: first line that did not verify.
        reason: why.
        code: its stable code.
        record: path of the summary record in ``quarantine/``.
        kept_bytes_file: path of the raw removed bytes (only with ``keep_bytes``), mode 0600.
        reused_record: the summary was left by an earlier run interrupted before the ledger was replaced.
    """

    action: str
    events: int
    head_hash: str | None
    verified_bytes: int
    quarantined_bytes: int
    sha256: str | None
    first_bad_line: int | None
    reason: str | None
    code: str | None
    record: str | None
    kept_bytes_file: str | None
    reused_record: bool

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


def refusal(check: LedgerCheck) -> CorruptLedgerError | None:
    """Why quarantine must not touch this ledger, if it must not: a record written by a newer intentloop
    (``FUTURE_SCHEMA``) is not damage, and removing it would destroy another version's data. (An unknown older or
    missing version, ``MIGRATION_UNAVAILABLE``, can be quarantined: no version can read it.)"""
    report = check.report
    if report.code in _REFUSED_CODES:
        return CorruptLedgerError(
            f"line {report.first_bad_line}: {report.reason}; quarantine refuses to remove another version's records",
            line=report.first_bad_line,
            reason=report.reason or "",
            code=report.code,
        )
    return None


def quarantine_damaged_suffix(
    store: ProjectStore,
    *,
    keep_bytes: bool = False,
    deadline: float | None = None,
    expected_sha256: str | None = None,
) -> QuarantineResult:
    """Under the ledger lock, summarise the damaged suffix into ``quarantine/`` and make the verified prefix the ledger.

    Args:
        store: the project.
        keep_bytes: also keep the raw removed bytes in a 0600 file inside ``quarantine/`` (off by default: damaged
            bytes may hold anything, and the contract keeps raw bytes only when an admin asks).
        deadline: give up waiting for the lock at this ``time.monotonic()`` value (``LOCK_TIMEOUT``).
        expected_sha256: the SHA-256 of the suffix the admin confirmed; if the damage under the lock differs,
            nothing is changed (``TRANSIENT_FILE_RACE``).

    Returns:
        What was done; ``action == "none"`` when the ledger verified (a repeat run changes nothing).

    Raises:
        StorageError: ``LOCK_TIMEOUT`` (another live process holds the lock), ``TRANSIENT_FILE_RACE``, the write
            and read codes of the store.
        CorruptLedgerError: ``FUTURE_SCHEMA`` (refused, see :func:`refusal`).
    """
    with store.locked(deadline, verify=False) as ledger:
        check = check_ledger(store)
        report = check.report
        if ledger.damage is None and report.intact:
            return _result(check, action="none", record=None, kept=None, reused=False)
        refused = refusal(check)
        if refused is not None:
            raise refused
        stale = expected_sha256 is not None and report.damaged_sha256 != expected_sha256
        if stale or ledger.view.head_hash != report.head_hash or report.intact:
            raise StorageError(
                "the ledger changed since the damage was shown; nothing was changed", code="TRANSIENT_FILE_RACE"
            )
        record, kept, reused = _write_record(ledger, store.quarantine_dir, check, keep_bytes=keep_bytes)
        ledger.rewrite(check.verification.events)
        after = check_ledger(store)
        if not after.report.intact or after.data != check.prefix:
            raise StorageError(
                "the ledger is not the expected verified prefix after quarantine", code="STORAGE_WRITE_FAILED"
            )
    return _result(check, action="quarantined", record=record, kept=kept, reused=reused)


def _result(
    check: LedgerCheck, *, action: str, record: Path | None, kept: Path | None, reused: bool
) -> QuarantineResult:
    report = check.report
    return QuarantineResult(
        action=action,
        events=report.events,
        head_hash=report.head_hash,
        verified_bytes=report.verified_bytes,
        quarantined_bytes=report.damaged_bytes,
        sha256=report.damaged_sha256,
        first_bad_line=report.first_bad_line,
        reason=report.reason,
        code=report.code,
        record=str(record) if record else None,
        kept_bytes_file=str(kept) if kept else None,
        reused_record=reused,
    )


def _write_record(
    ledger: LockedLedger, directory: Path, check: LedgerCheck, *, keep_bytes: bool
) -> tuple[Path, Path | None, bool]:
    """Write the summary (and the raw bytes when asked) through the store, or reuse the record an interrupted run
    left for exactly this damage."""
    report = check.report
    found = _find_record(directory, report.damaged_sha256, report.damaged_bytes, report.first_bad_line)
    if found is not None and (not keep_bytes or found[1] is not None):
        return found[0], found[1], True
    stem = f"{RECORD_PREFIX}{int(time.time() * 1000)}-{uuid.uuid4()}"
    kept = directory / f"{stem}.bytes" if keep_bytes else None
    if kept is not None:
        ledger.keep_damaged_bytes(kept.name)  # streamed from the file: a huge damaged tail is never held whole
    summary = {
        "byte_length": report.damaged_bytes,
        "sha256": report.damaged_sha256,
        "observed_at": utc_now(),
        "first_bad_line": report.first_bad_line,
        "reason": report.reason,
        "code": report.code,
        "torn_tail": report.torn_tail,
        "kept_prefix": {"events": report.events, "byte_length": report.verified_bytes, "head_hash": report.head_hash},
        "contents": count_suffix(
            check.suffix, project_id=report.project_id, first_line=report.first_bad_line or 1
        ).to_dict(),
        "raw_bytes_file": kept.name if kept is not None else None,
    }
    ledger.write_quarantine(f"{stem}.json", canonical_bytes(summary) + b"\n")
    return directory / f"{stem}.json", kept, False


def _find_record(
    directory: Path, sha256: str | None, byte_length: int, line: int | None
) -> tuple[Path, Path | None] | None:
    """A summary of exactly this damage, left by an earlier run that was interrupted before the rewrite."""
    if not directory.is_dir():
        return None
    for path in sorted(directory.glob(f"{RECORD_PREFIX}*.json")):
        try:
            summary = json.loads(read_data_file(path) or b"null")
        except (StorageError, ValueError):
            continue
        if (
            isinstance(summary, dict)
            and summary.get("sha256") == sha256
            and summary.get("byte_length") == byte_length
            and summary.get("first_bad_line") == line
        ):
            name = summary.get("raw_bytes_file")
            kept = directory / name if isinstance(name, str) and "/" not in name else None
            return path, kept if kept is not None and kept.is_file() else None
    return None


__all__ = ["RECORD_PREFIX", "QuarantineResult", "quarantine_damaged_suffix", "refusal"]
