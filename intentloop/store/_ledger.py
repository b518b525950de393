"""The ledger while the lock is held: the one write path of CONTRACT §3 and everything that uses it.

Every change writes the complete next file to a fresh 0600 sibling, fsyncs it, checks the owner token, renames it
over the old one and fsyncs the directory. Nothing is ever appended in place, so a hard link can never be written
through and a crash leaves either the old or the new file, never a mix.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from intentloop.errors import CorruptLedgerError, InvalidInputError, StorageError
from intentloop.model.canonical import canonical_bytes, sha256_hex
from intentloop.model.events import Event, EventDraft, event_line, seal
from intentloop.model.ids import utc_now
from intentloop.store._controls import PrivateControl, check_session_hash, control_path, control_problem
from intentloop.store._fs import (
    atomic_replace,
    check_regular,
    fsync_dir,
    remove_tree_quietly,
    storage_error,
)
from intentloop.store._lock import LockHandle
from intentloop.store._names import control_temp_name, ledger_temp_name, quarantine_temp_name
from intentloop.store._paths import ProjectPaths
from intentloop.store._signing import sign_committed_head
from intentloop.store._verify import Verification, verify_continuation, verify_ledger_bytes
from intentloop.store._view import LedgerView

# Called after every commit with the new file's stat (None if unknown), bytes and verified view.
CommitHook = Callable[[os.stat_result | None, bytes, LedgerView], None]


class LockedLedger:
    """A project's ledger while this writer holds its lock; invalid once the lock is released.

    Attributes:
        view: the current, verified ledger (updated by every write).
        damage: the first error of a damaged ledger opened with ``verify=False`` (``None`` otherwise); while it is
            set, :meth:`append` is refused and :meth:`rewrite` (of the verified prefix, by recovery) is the way out.
    """

    def __init__(
        self,
        paths: ProjectPaths,
        handle: LockHandle,
        data: bytes,
        verification: Verification,
        view: LedgerView,
        on_commit: CommitHook,
    ) -> None:
        self._paths = paths
        self._handle = handle
        self._data = data if verification.ok else data[: verification.byte_length]
        self._raw = data
        self._verification = verification
        self.view = view
        self._on_commit = on_commit
        self._open = True
        self.damage: CorruptLedgerError | None = verification.error

    def close(self) -> None:
        self._open = False

    def append(self, drafts: Sequence[EventDraft]) -> list[Event]:
        """Seal ``drafts`` after the current head and commit them in one replace.

        Returns:
            The sealed events, as now stored.

        Raises:
            InvalidInputError: ``INVALID_ARGUMENTS`` when a draft would make a line the verifier rejects.
            CorruptLedgerError: the ledger is damaged (opened with ``verify=False``).
            StorageError: ``LOCK_COMPROMISED`` or ``STORAGE_WRITE_FAILED`` (retryable; the previous ledger is intact).
        """
        self._check_writable()
        if not drafts:
            return []
        events: list[Event] = []
        prev = self.view.head_hash
        try:
            for draft in drafts:
                event = seal(draft, project_id=self._paths.project_id, prev_hash=prev)
                events.append(event)
                prev = event.event_hash
            lines = b"".join(event_line(event) for event in events)
        except (ValueError, TypeError, msgspec.EncodeError) as exc:
            raise InvalidInputError("an event payload has no canonical JSON form", code="INVALID_ARGUMENTS") from exc
        check = verify_continuation(
            lines, project_id=self._paths.project_id, prev_hash=self.view.head_hash, first_line=len(self.view) + 1
        )
        if check.error is not None:
            raise InvalidInputError(
                f"refusing to store an event the verifier would reject: {check.error.reason}",
                code="INVALID_ARGUMENTS",
            )
        data = self._data + lines
        self._commit(data, "append", self.view.extended(events, len(data)))
        return events

    def rewrite(self, events: Sequence[Event]) -> None:
        """Replace the whole ledger with ``events`` (deletion: the caller passes the re-chained events; recovery: the
        verified prefix of a damaged ledger).

        Raises:
            StorageError: ``DELETE_VERIFICATION_FAILED`` when the new ledger would not verify; ``LOCK_COMPROMISED``,
                ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        try:
            data = b"".join(event_line(event) for event in events)
        except (ValueError, TypeError, msgspec.EncodeError) as exc:
            raise StorageError("a rewritten event cannot be encoded", code="DELETE_VERIFICATION_FAILED") from exc
        check = verify_ledger_bytes(data, project_id=self._paths.project_id)
        if check.error is not None:
            raise StorageError(
                f"the rewritten ledger would not verify: {check.error.reason}", code="DELETE_VERIFICATION_FAILED"
            )
        self._commit(data, "rewrite", LedgerView(check.events, check.head_hash, len(data)))

    def write_control(self, control: PrivateControl) -> None:
        """Create or replace the control file of ``control.host_session_hash`` (atomically, 0600).

        Raises:
            InvalidInputError: ``INVALID_SESSION_HASH`` or ``INVALID_ARGUMENTS`` for a malformed control.
            StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        target = control_path(self._paths, control.host_session_hash)
        problem = control_problem(control, session_hash=control.host_session_hash, project_id=self._paths.project_id)
        if problem:
            raise InvalidInputError(f"refusing a private control: {problem}", code="INVALID_ARGUMENTS")
        self._paths.ensure_subdir(self._paths.private_dir)
        self._check_replaceable(target)
        atomic_replace(
            target,
            control_temp_name(),
            control.to_bytes(),
            before_replace=self._handle.require_owner,
            on_commit=lambda _st: None,
        )

    def remove_control(self, session_hash: str) -> bool:
        """Remove one control file; ``False`` when there was none.

        Raises:
            InvalidInputError: ``INVALID_SESSION_HASH``.
            StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        check_session_hash(session_hash)
        if not self._paths.check_subdir(self._paths.private_dir):
            return False
        target = control_path(self._paths, session_hash)
        if not self._check_replaceable(target):
            return False
        self._handle.require_owner()
        try:
            os.unlink(target)
            fsync_dir(self._paths.private_dir)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise storage_error(exc, "removing a private control", code="STORAGE_WRITE_FAILED") from exc
        return True

    def remove_quarantine(self) -> None:
        """Remove the whole ``quarantine/`` directory (task or project deletion).

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        if not self._paths.check_subdir(self._paths.quarantine_dir):
            return
        self._handle.require_owner()
        aside = self._paths.project_dir / quarantine_temp_name()
        try:
            os.rename(self._paths.quarantine_dir, aside)
            fsync_dir(self._paths.project_dir)
        except OSError as exc:
            raise storage_error(exc, "removing quarantine", code="STORAGE_WRITE_FAILED") from exc
        remove_tree_quietly(aside)

    def repair_torn_tail(self) -> dict[str, Any]:
        """Record ``{byte_length, observed_at, sha256}`` of the torn last line and drop it (no raw bytes kept).

        Raises:
            StorageError: ``PATH_ESCAPE``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        torn = self._verification.torn_tail or b""
        record = {"byte_length": len(torn), "observed_at": utc_now(), "sha256": sha256_hex(torn)}
        name = f"partial-{int(time.time() * 1000)}-{uuid.uuid4()}.json"
        self.write_quarantine(name, canonical_bytes(record) + b"\n")
        self._commit(self._data, "repair", self.view)
        return record

    def write_quarantine(self, name: str, data: bytes) -> None:
        """Write one new file into ``quarantine/`` (created 0700 if needed) through the atomic write path.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        self._paths.ensure_subdir(self._paths.quarantine_dir)
        target = self._paths.quarantine_dir / name
        if os.path.lexists(target):
            raise StorageError("a quarantine record with this name exists", code="STORAGE_WRITE_FAILED")
        atomic_replace(
            target,
            quarantine_temp_name(),
            data,
            before_replace=self._handle.require_owner,
            on_commit=lambda _st: None,
        )

    def _commit(self, data: bytes, kind: str, view: LedgerView) -> None:
        def committed(st: os.stat_result | None) -> None:
            self._data = self._raw = data
            self.view = view
            self._verification = Verification(view.events, view.head_hash, len(data), len(view), None, None)
            self.damage = None
            self._on_commit(st, data, view)
            # Every commit (append, rewrite, repair) passes here, right after the ledger's rename and still under the
            # lock: its head is signed once, and the directory fsync that follows makes both renames durable.
            sign_committed_head(self._paths, view.head_hash, len(view), before_replace=self._handle.require_owner)

        if os.path.lexists(self._paths.ledger_path):
            self._check_replaceable(self._paths.ledger_path)
        atomic_replace(
            self._paths.ledger_path,
            ledger_temp_name(kind),
            data,
            before_replace=self._handle.require_owner,
            on_commit=committed,
        )

    def _check_replaceable(self, target: Path) -> bool:
        """Refuse to replace a symlink, a non-regular or hard-linked file; ``False`` when it does not exist."""
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise storage_error(exc, "checking a data file", code="STORAGE_READ_FAILED") from exc
        check_regular(target, st)
        return True

    def _check_open(self) -> None:
        if not self._open:
            raise StorageError("the ledger lock has been released", code="LOCK_COMPROMISED")

    def _check_writable(self) -> None:
        self._check_open()
        if self.damage is not None:
            raise CorruptLedgerError(
                self.damage.message, line=self.damage.line, reason=self.damage.reason, code=self.damage.code
            )


__all__ = ["CommitHook", "LockedLedger"]
