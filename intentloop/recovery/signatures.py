"""The admin's explicit signing acts: accept a chain this installation's signature does not vouch for, and replace a
missing signing key. Writers refuse both situations (``intentloop/store/_vouch.py``); only these lift the refusal,
after the CLI has shown the verification report of what they sign.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from intentloop.errors import CorruptLedgerError, InvalidInputError, StorageError
from intentloop.recovery.report import VerifyReport, verify_project
from intentloop.store import ProjectStore


def accept_chain(store: ProjectStore, report: VerifyReport) -> int:
    """Sign the intact chain ``report`` describes (``intentloop verify --accept``), if the ledger is still that chain.

    Returns:
        How many events were recorded as adopted.

    Raises:
        CorruptLedgerError: the ledger is damaged (recover it first).
        StorageError: ``TRANSIENT_FILE_RACE`` (the ledger changed since the report), ``SIGNING_KEY_MISSING``,
            ``LOCK_TIMEOUT``, ``STORAGE_WRITE_FAILED``.
    """
    with store.locked(verify=False) as ledger:
        if ledger.damage is not None:
            raise CorruptLedgerError(
                ledger.damage.message, line=ledger.damage.line, reason=ledger.damage.reason, code=ledger.damage.code
            )
        if ledger.head != (report.head_hash, report.events):
            raise StorageError("the ledger changed since it was verified: verify it again", code="TRANSIENT_FILE_RACE")
        return ledger.sign_head(accept=True)


@dataclass(frozen=True)
class RotationPlan:
    """What ``intentloop keys rotate`` found: each project this installation signed, verified under the public key
    recorded for it (the missing key's), and the projects whose chain that key vouches for."""

    reports: tuple[tuple[VerifyReport, str], ...]  # (report, recorded public key)

    @property
    def resignable(self) -> tuple[tuple[VerifyReport, str], ...]:
        return tuple((r, key) for r, key in self.reports if r.intact and r.signature in ("valid", "unsigned"))


def plan_rotation(data_root: Path) -> RotationPlan:
    """Verify every project this installation signed, under the key recorded for it.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` when the signing key is present (only a missing key is replaced).
        StorageError: path-safety refusals and I/O failures.
    """
    from intentloop.store._signed_record import recorded_key, signed_projects
    from intentloop.store._signing import key_path, load_signing_key

    if load_signing_key(data_root) is not None:
        raise InvalidInputError(
            f"the signing key {key_path(data_root)} is present: `keys rotate` replaces a missing key only",
            code="INVALID_ARGUMENTS",
        )
    reports = []
    for project_id in signed_projects(data_root):
        public = recorded_key(data_root, project_id)
        if public is not None:
            reports.append((verify_project(ProjectStore(data_root, project_id)), public))
    return RotationPlan(tuple(reports))


def rotate_key(data_root: Path, plan: RotationPlan) -> tuple[str, list[str]]:
    """Create the new key and re-sign, under it, every chain of ``plan`` the previous key vouches for; the others stay
    refused until ``intentloop verify --accept``.

    Returns:
        The new key's id and the projects re-signed.

    Raises:
        StorageError: ``STORAGE_WRITE_FAILED``, an unsafe key file, ``LOCK_TIMEOUT``.
    """
    from intentloop.store._signed_record import record_signed
    from intentloop.store._signing import load_or_create_signing_key

    key = load_or_create_signing_key(data_root)
    resigned = []
    for report, public in plan.resignable:
        store = ProjectStore(data_root, report.project_id)
        with store.locked(verify=False) as ledger:
            if ledger.damage is not None or ledger.head != (report.head_hash, report.events):
                continue
            ledger.vouch(public=public)
            ledger.sign_head(accept=False)
        record_signed(data_root, report.project_id, key.public_hex, replace=True)
        resigned.append(report.project_id)
    return key.key_id, resigned


__all__ = ["RotationPlan", "accept_chain", "plan_rotation", "rotate_key"]
