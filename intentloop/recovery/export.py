"""Export the verified prefix of a ledger: whole lines exactly as stored, never edited, never invented.

The export is lock-free (a read of one consistent file) and leaves the live ledger untouched. What was written is
read back and verified on its own before success is reported, so a file that exists after a successful export is
always a ledger that verifies for its project.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from intentloop.errors import InvalidInputError, StorageError
from intentloop.recovery._files import read_data_file, write_private_file
from intentloop.recovery.report import LedgerCheck, check_ledger

if TYPE_CHECKING:
    from intentloop.store import ProjectStore


class ExportResult(msgspec.Struct, frozen=True, kw_only=True):
    """What ``recover export`` wrote.

    Attributes:
        out: the absolute path of the written file (mode 0600).
        events: events in the file.
        bytes: its size.
        sha256: SHA-256 of its bytes.
        head_hash: ``event_hash`` of its last event, ``None`` for an empty export.
        ledger_intact: the live ledger verified completely (the export is then a full copy).
        omitted_bytes: bytes of the live ledger after the verified prefix, left out of the export.
        first_bad_line: first line of the live ledger that does not verify.
        reason: why it does not verify.
        code: the stable code of that problem.
    """

    out: str
    events: int
    bytes: int
    sha256: str
    head_hash: str | None
    ledger_intact: bool
    omitted_bytes: int
    first_bad_line: int | None
    reason: str | None
    code: str | None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


def export_verified_prefix(
    store: ProjectStore, out: Path, *, overwrite: bool = False, check: LedgerCheck | None = None
) -> ExportResult:
    """Write the verified prefix of ``store``'s ledger to ``out`` (0600), then verify the file on its own.

    Args:
        store: the project.
        out: destination file; its directory must exist and lie outside the data root's ``projects/``.
        overwrite: replace an existing ``out`` (atomically); otherwise an existing file is refused.
        check: a verification of the ledger made just before (read again when ``None``).

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` (``out``'s folder is missing or inside the data root's projects).
        StorageError: ``OUTPUT_EXISTS``, ``STORAGE_WRITE_FAILED``, or the read errors of
            :func:`recovery.report.check_ledger`.
    """
    out = Path(os.path.abspath(out))
    _check_destination(out, store)
    if check is None:
        check = check_ledger(store)
    prefix = check.prefix
    write_private_file(out, prefix, overwrite=overwrite)
    _verify_written(out, prefix, check, store)
    report = check.report
    return ExportResult(
        out=str(out),
        events=report.events,
        bytes=len(prefix),
        sha256=hashlib.sha256(prefix).hexdigest(),
        head_hash=report.head_hash,
        ledger_intact=report.intact,
        omitted_bytes=report.damaged_bytes,
        first_bad_line=report.first_bad_line,
        reason=report.reason,
        code=report.code,
    )


def _check_destination(out: Path, store: ProjectStore) -> None:
    parent = out.parent
    if not parent.is_dir():
        raise InvalidInputError(f"the folder of --out does not exist: {parent}")
    if out.is_dir():
        raise InvalidInputError(f"--out names a folder, not a file: {out}")
    projects = os.path.realpath(store.data_root / "projects")
    real_parent = os.path.realpath(parent)
    if real_parent == projects or real_parent.startswith(projects + os.sep):
        raise InvalidInputError("--out must lie outside the data root's projects/ folder (the live storage)")


def _verify_written(out: Path, prefix: bytes, check: LedgerCheck, store: ProjectStore) -> None:
    """Read the export back and verify it independently; remove it and fail if it is not what was meant."""
    from intentloop.store import verify_ledger_bytes

    written = read_data_file(out)
    verification = verify_ledger_bytes(written or b"", project_id=store.project_id)
    if (
        written != prefix
        or verification.error is not None
        or verification.head_hash != check.verification.head_hash
        or len(verification.events) != len(check.verification.events)
    ):
        out.unlink(missing_ok=True)
        raise StorageError(
            f"the export at {out} did not verify after writing; it was removed", code="STORAGE_WRITE_FAILED"
        )


__all__ = ["ExportResult", "export_verified_prefix"]
