"""The ledger while the lock is held: the one write path (docs/STORAGE.md, "Writing") and everything that uses it.

Every change goes through :meth:`LockedLedger._commit`. New events are appended in place to the file that was
verified (refused through a symlink, a hard-linked file, another inode or a file that changed size since), after an
owner-token check, then the file is fsynced (and the directory, when the append created the file); a crash leaves the
old ledger or the old one plus a torn tail that the next writer repairs. A torn tail is cut off in place (truncate to
the verified length, fsync). Deletion and recovery's rewrites still write the complete next file to a fresh 0600
sibling, fsync it, check the token, rename it over the old one and fsync the directory. After every commit the
verified checkpoint beside the ledger is updated (see ``_checkpoint``).

Why in place: a rewrite costs the whole file on every write (measured before: 117 ms per ``intent_add_inference`` at
100,000 events, 96 MB); an append costs the new line and one fsync, whatever the ledger's size.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from intentloop.errors import CorruptLedgerError, InvalidInputError, StorageError
from intentloop.model.canonical import canonical_bytes, sha256_hex
from intentloop.model.events import Event, EventDraft, event_line, seal
from intentloop.model.ids import is_hex64, utc_now
from intentloop.store._checkpoint import write_checkpoint
from intentloop.store._controls import PrivateControl, check_session_hash, control_path, control_problem
from intentloop.store._fs import (
    append_durably,
    atomic_replace,
    check_regular,
    fsync_dir,
    open_regular,
    read_regular,
    remove_tree_quietly,
    storage_error,
    truncate_durably,
    write_all,
)
from intentloop.store._injected import prepare_injection_memory
from intentloop.store._lock import LockHandle
from intentloop.store._names import control_temp_name, ledger_temp_name, quarantine_temp_name
from intentloop.store._paths import ProjectPaths
from intentloop.store._verify import MAX_LINE_BYTES, Verification, verify_continuation, verify_ledger_bytes
from intentloop.store._view import LedgerView

if TYPE_CHECKING:  # a hook's append never loads the rewrite machinery
    from intentloop.model.projection import TaskState
    from intentloop.store._rewrite import Edit, Streamed
    from intentloop.store._sessions import SessionTask
    from intentloop.store._vouch import HeadSigner

# Called after every commit with the new file's stat (None if unknown) and verified view.
CommitHook = Callable[[os.stat_result | None, Verification, LedgerView], None]


def _nothing(_st: os.stat_result | None) -> None:
    """The commit hook of a side file: nothing to remember."""


def read_tombstones(paths: ProjectPaths) -> frozenset[str]:
    """The request tombstones of a project (empty when there is no file).

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED`` (also for a garbled file: writes
            that could replay a deleted claim stop until it is repaired, rather than resurrect one).
    """
    if not paths.check_project():
        return frozenset()
    opened = read_regular(paths.tombstones_path)
    if opened is None:
        return frozenset()
    try:
        record = msgspec.json.decode(opened[0])
    except msgspec.DecodeError as exc:
        raise StorageError("deleted-requests.json is not valid JSON", code="STORAGE_READ_FAILED") from exc
    digests = record.get("digests") if isinstance(record, dict) else None
    if not isinstance(digests, list) or not all(isinstance(d, str) and is_hex64(d) for d in digests):
        raise StorageError("deleted-requests.json is malformed", code="STORAGE_READ_FAILED")
    return frozenset(digests)


class _Unchanged(Exception):
    """A streamed rewrite whose edit changed nothing: the temp file is dropped and the ledger left as it is."""


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
        *,
        st: os.stat_result | None,
        verification: Verification,
        view: LedgerView | None,
        on_commit: CommitHook,
        index: tuple[str, int] | None = None,
        head: tuple[str | None, int, int] | None = None,
        loader: Callable[[], tuple[Verification, LedgerView, os.stat_result | None]] | None = None,
    ) -> None:
        self._paths = paths
        # The task index that covers the ledger as verified and its binding records (None: rebuild it after the
        # next commit).
        self._index: str | None = None if index is None else index[0]
        self._bindings = 0 if index is None else index[1]
        self._handle = handle
        # The verified file (device, inode, size): appends and truncation go only into it; None: there is no ledger.
        self._identity = None if st is None else (st.st_dev, st.st_ino, st.st_size)
        self._verification = verification
        # The chain's head: (head hash, line count, byte length). A writer that trusted the checkpoint (``head``)
        # holds no view until something asks for one (``loader`` then reads and verifies the ledger).
        self._view = view
        self._loader = loader
        if view is not None:
            self._head = (view.head_hash, len(view), view.byte_length)
        else:
            assert head is not None
            self._head = head
        self._on_commit = on_commit
        self._open = True
        self.damage: CorruptLedgerError | None = verification.error
        self._signer: HeadSigner | None = None

    def vouch(self, *, strict: bool = True, public: str | None = None) -> HeadSigner:
        """Check that this installation's ``head.sig`` vouches for the chain this writer extends (see ``_vouch``);
        ``ProjectStore.enter_locked`` calls it before any repair or append.

        Raises:
            CorruptLedgerError: ``SIGNATURE_INVALID`` (when ``strict``).
            StorageError: ``SIGNING_KEY_MISSING``, an unsafe key file or record.
        """
        # ``public``: check head.sig against that key instead of the installation's (a key rotation).
        from intentloop.store._vouch import vouch

        head, count = self._head[0], self._head[1]
        prefix = (head, count)
        torn = self._verification.torn_tail
        if torn is not None:  # a whole last event lacking only its newline is part of the chain head.sig signed
            kept = verify_continuation(
                torn + b"\n", project_id=self._paths.project_id, prev_hash=head, first_line=count + 1
            )
            if kept.error is None and kept.line_count == 1:
                head, count = kept.head_hash, count + 1

        def hash_at(position: int) -> str | None:
            if position == count - 1:
                return head
            return prefix[0] if position == prefix[1] - 1 else self.view.events[position].event_hash

        self._signer = vouch(self._paths, (head, count), hash_at, strict=strict, public=public)
        return self._signer

    def sign_head(self, *, accept: bool) -> int:
        """Sign the chain as it is now, without a commit: ``accept`` (``intentloop verify --accept``) whatever
        ``head.sig`` says, recording events no valid signature of this installation covers as adopted now (all of them
        when none verifies); otherwise (a key rotation, after :meth:`vouch` against the previous key) with the
        adoptions :meth:`vouch` settled.

        Returns:
            How many events this signature adopts.

        Raises:
            StorageError: ``SIGNING_KEY_MISSING``, ``STORAGE_WRITE_FAILED``, ``LOCK_COMPROMISED``.
        """
        from intentloop.store._vouch import accept_signer

        self._check_writable()
        head = (self._head[0], self._head[1])
        signer = self._signer if self._signer is not None else self.vouch(strict=False)
        if accept:
            signer = accept_signer(self._paths, head, signer)
        owner = self._handle.require_owner
        signer.before(head, head, owner)
        signer.after(head, owner)
        self._signer = signer
        return signer.fresh

    def close(self) -> None:
        self._open = False

    def session_task(self, session_hash: str, since: SessionTask | None = None) -> TaskState | None:
        """The task bound to the host session ``session_hash``, as of this lock: ``since`` (a lock-free answer) when
        it provably still holds, else through the task index, else from :attr:`view`.

        Raises:
            CorruptLedgerError: as :attr:`view`, when it has to be read.
        """
        from intentloop.store._sessions import session_task_locked

        return session_task_locked(self._paths, lambda: self.view, session_hash, since)

    @property
    def head(self) -> tuple[str | None, int]:
        """The chain's head hash and line count, known without reading the ledger (even by a lazy writer)."""
        return self._head[0], self._head[1]

    @property
    def view(self) -> LedgerView:
        """The verified ledger; read on first use by a writer that entered on the checkpoint alone.

        Raises:
            CorruptLedgerError: the ledger no longer verifies (a foreign program changed it under the lock).
            StorageError: ``TRANSIENT_FILE_RACE`` when it is not the file the checkpoint described.
        """
        if self._view is None:
            assert self._loader is not None
            verification, view, st = self._loader()
            if verification.error is not None:
                raise CorruptLedgerError(
                    verification.error.message,
                    line=verification.error.line,
                    reason=verification.error.reason,
                    code=verification.error.code,
                )
            if st is None or self._identity != (st.st_dev, st.st_ino, st.st_size) or view.head_hash != self._head[0]:
                raise StorageError("the ledger changed under the lock", code="TRANSIENT_FILE_RACE")
            self._view, self._verification = view, verification
        return self._view

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
        head, count, length = self._head
        prev = head
        try:
            for draft in drafts:
                event = seal(draft, project_id=self._paths.project_id, prev_hash=prev)
                events.append(event)
                prev = event.event_hash
            encoded = [event_line(event) for event in events]
        except (ValueError, TypeError, msgspec.EncodeError) as exc:
            raise InvalidInputError("an event payload has no canonical JSON form", code="INVALID_ARGUMENTS") from exc
        lines = b"".join(encoded)
        if max(map(len, encoded)) > MAX_LINE_BYTES:
            raise InvalidInputError(f"an event would be longer than {MAX_LINE_BYTES} bytes", code="INVALID_ARGUMENTS")
        check = verify_continuation(lines, project_id=self._paths.project_id, prev_hash=head, first_line=count + 1)
        if check.error is not None:
            raise InvalidInputError(
                f"refusing to store an event the verifier would reject: {check.error.reason}",
                code="INVALID_ARGUMENTS",
            )
        view = None if self._view is None else self._view.extended(events, length + len(lines))
        self._commit("append", view, lines, events)
        if any(event.payload.get("host_session_hash") is not None for event in events):
            prepare_injection_memory(self._paths)  # SessionStart notes its injection only where the file exists
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
        self._commit("rewrite", LedgerView(check.events, check.head_hash, len(data)), data, check.events)

    def rewrite_each(
        self,
        edit: Edit | None,
        *,
        touches: Sequence[bytes] | None = None,
        forbidden: Sequence[bytes] = (),
        source: LockedLedger | None = None,
    ) -> bool:
        """Rewrite the ledger in one streaming pass over the verified file of ``source`` (this ledger by default):
        events go through ``edit`` and the chain is recomputed as it goes (see ``_rewrite``); the new file is verified
        chunk by chunk, indexed, and replaces the old one through the atomic write path. Deletion passes its edit;
        relink passes the old project's ledger as ``source`` and no edit.

        Args:
            touches: bytes that every line ``edit`` may change holds (``None``: any line); the other lines are not
                decoded.
            forbidden: bytes no written line may hold.

        Returns:
            Whether the ledger was replaced: ``False`` when ``source`` is this ledger and ``edit`` changed nothing.

        Raises:
            CorruptLedgerError: ``source`` is damaged (opened with ``verify=False``), or a line is not the one
                verified.
            StorageError: ``DELETE_VERIFICATION_FAILED`` when a written line would not verify or holds one of
                ``forbidden``; ``TRANSIENT_FILE_RACE`` (``source`` is not the file verified), ``LOCK_COMPROMISED``,
                ``STORAGE_READ_FAILED``, ``STORAGE_WRITE_FAILED``.
        """
        from intentloop.store._rewrite import Streamed, line_chunks, write_rewrite

        self._check_open()
        origin = self if source is None else source
        origin._check_writable()
        opened = None if origin._identity is None else open_regular(origin._paths.ledger_path)
        if origin._identity is not None and (
            opened is None or (opened[1].st_dev, opened[1].st_ino, opened[1].st_size) != origin._identity
        ):
            if opened is not None:
                os.close(opened[0])
            raise StorageError("the ledger changed under the lock", code="TRANSIENT_FILE_RACE")
        streamed = Streamed()

        def write(out: int) -> None:
            path = origin._paths.ledger_path
            chunks = iter(()) if opened is None else line_chunks(opened[0], opened[1].st_size, path=path)
            write_rewrite(
                out,
                chunks,
                edit,
                source_id=origin._paths.project_id,
                touches=touches,
                paths=self._paths,
                forbidden=forbidden,
                result=streamed,
                summaries=None if origin._index is None else origin._paths.project_dir / origin._index,
            )
            if (streamed.read_head, streamed.read_lines) != origin._head[:2]:
                raise StorageError("the ledger changed under the lock", code="TRANSIENT_FILE_RACE")
            if origin is self and not streamed.changed:
                raise _Unchanged

        committed = False
        try:
            self._commit("stream", None, write, (), streamed=streamed)
            committed = True
        except _Unchanged:
            return False
        finally:
            if opened is not None:
                os.close(opened[0])
            if not committed and streamed.index is not None:
                remove_tree_quietly(self._paths.project_dir / streamed.index)
        return True

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

    def drain_spool(self) -> list[Event]:
        """Append the observations hooks spooled while the lock was busy (see ``_spool``), then remove their entries.

        Exactly once: a spooled draft whose ``(task_id, request_id)`` is already in the ledger (an earlier drain that
        crashed before removing its entries, or the same turn spooled twice) is skipped, as is one of a task the
        ledger does not hold (deleted since) and one the verifier would reject; entries go only after the commit.

        Returns:
            The events appended.

        Raises:
            CorruptLedgerError: the ledger is damaged (opened with ``verify=False``).
            StorageError: ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED`` (the entries stay for the next drain).
        """
        from intentloop.store._spool import read_spool, remove_entries

        self._check_writable()
        entries = read_spool(self._paths)
        if not entries:
            return []
        known = set(self.view.task_ids())
        seen: set[tuple[str, str]] = set()
        drafts: list[EventDraft] = []
        for _path, found, by_session in entries:
            draft = found if by_session is None or found is None else self._for_session(found, by_session)
            if draft is None or draft.task_id not in known:
                continue
            key = (draft.task_id, draft.request_id)
            if key in seen or self.view.find_request(*key) is not None:
                continue
            seen.add(key)
            drafts.append(draft)
        appended: list[Event] = []
        try:
            appended = self.append(drafts)
        except InvalidInputError:  # one bad entry must not hold back the others: one at a time
            for draft in drafts:
                try:
                    appended += self.append([draft])
                except InvalidInputError:
                    continue
        remove_entries(self._paths, [entry.path for entry in entries])
        return appended

    def _for_session(self, draft: EventDraft, session_hash: str) -> EventDraft | None:
        """A spooled observation that names its session: the draft for the task bound to it, or ``None`` when the
        hook would not have recorded it now (no bound task, a private control, a task not ``on``)."""
        from intentloop.store._controls import read_control, read_controls
        from intentloop.store._spool import observed_task

        try:
            control = read_control(self._paths, session_hash)
            controls = read_controls(self._paths)
        except (InvalidInputError, StorageError):
            return None  # an unreadable control: record nothing rather than what a private session saw
        task = observed_task(self.session_task(session_hash), controls, control)
        return None if task is None else msgspec.structs.replace(draft, task_id=task.task_id)

    def strip_quarantine(self, needles: Sequence[bytes]) -> list[str]:
        """Remove the lines that hold any of ``needles`` from every file in ``quarantine/`` (deletion).

        A file without them is left byte for byte (an admin's kept raw bytes of other events survive); a file with
        them is rewritten without those lines through the atomic write path, or removed when nothing else is left.
        A line is the unit of a ledger event, so an event that names the deleted item goes whole.

        Returns:
            The names of the files rewritten or removed.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``INVALID_DATA_DIR``, ``LOCK_COMPROMISED``,
                ``STORAGE_READ_FAILED``, ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        directory = self._paths.quarantine_dir
        if not needles or not self._paths.check_subdir(directory):
            return []
        changed: list[str] = []
        try:
            names = sorted(os.listdir(directory))
        except OSError as exc:
            raise storage_error(exc, "listing quarantine", code="STORAGE_READ_FAILED") from exc
        for name in names:
            target = directory / name
            opened = read_regular(target)
            if opened is None:
                continue
            data = opened[0]
            if not any(needle in data for needle in needles):
                continue
            kept = b"".join(line for line in data.splitlines(keepends=True) if not any(n in line for n in needles))
            self._handle.require_owner()
            if kept:
                atomic_replace(
                    target, quarantine_temp_name(), kept, before_replace=self._handle.require_owner, on_commit=_nothing
                )
            else:
                try:
                    os.unlink(target)
                    fsync_dir(directory)
                except OSError as exc:
                    raise storage_error(exc, "removing a quarantine file", code="STORAGE_WRITE_FAILED") from exc
            changed.append(name)
        return changed

    def add_tombstones(self, digests: Sequence[str]) -> None:
        """Add request tombstones (hex digests) to ``deleted-requests.json`` through the atomic write path.

        Raises:
            InvalidInputError: ``INVALID_ARGUMENTS`` for a digest that is not 64 lowercase hex.
            StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``LOCK_COMPROMISED``, ``STORAGE_READ_FAILED``,
                ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        if not digests:
            return
        if not all(is_hex64(d) for d in digests):
            raise InvalidInputError("a tombstone must be 64 lowercase hex digits", code="INVALID_ARGUMENTS")
        target = self._paths.tombstones_path
        self._check_replaceable(target)
        known = read_tombstones(self._paths)
        data = canonical_bytes({"digests": sorted(known | set(digests)), "version": 1}) + b"\n"
        atomic_replace(
            target, ledger_temp_name("tombstones"), data, before_replace=self._handle.require_owner, on_commit=_nothing
        )

    def repair_torn_tail(self) -> dict[str, Any]:
        """Repair a last line without its newline.

        A last line that is a whole event chaining after the head, lacking only its newline (a writer killed between
        writing it and its newline, or an editor that strips the final newline), is kept: only the newline is
        restored. Anything else is dropped after recording ``{byte_length, observed_at, sha256}`` of it in
        ``quarantine/`` (no raw bytes kept; a tail too large to hold was summarised by streaming).

        Returns:
            ``{"restored": "newline", "events": 1}`` or the quarantine record.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        torn = self._verification.torn_tail
        if torn is not None:
            line = torn + b"\n"
            check = verify_continuation(
                line, project_id=self._paths.project_id, prev_hash=self.view.head_hash, first_line=len(self.view) + 1
            )
            if check.error is None and check.line_count == 1:
                view = self.view.extended(check.events, self.view.byte_length + len(line))
                self._commit("append", view, b"\n", check.events)
                return {"restored": "newline", "events": 1}
        damage = self._verification.damage
        length, digest = (damage.length, damage.sha256) if damage else (len(torn or b""), sha256_hex(torn or b""))
        record = {"byte_length": length, "observed_at": utc_now(), "sha256": digest}
        name = f"partial-{int(time.time() * 1000)}-{uuid.uuid4()}.json"
        self.write_quarantine(name, canonical_bytes(record) + b"\n")
        self._commit("truncate", self.view, b"", ())
        return record

    def keep_damaged_bytes(self, name: str) -> int:
        """Copy the ledger's bytes after the verified prefix into a new ``quarantine/`` file, in chunks (a huge
        damaged tail is never held whole); returns how many bytes were kept.

        Raises:
            StorageError: ``TRANSIENT_FILE_RACE`` (the ledger is not the one verified), ``PATH_ESCAPE``,
                ``INVALID_DATA_DIR``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        offset = self._verification.byte_length
        expected = self._verification.damage.length if self._verification.damage else 0
        opened = open_regular(self._paths.ledger_path)
        if opened is None:
            raise StorageError("the ledger vanished", code="TRANSIENT_FILE_RACE")
        fd, st = opened
        try:
            if st.st_size != offset + expected:
                raise StorageError("the ledger changed since it was verified", code="TRANSIENT_FILE_RACE")

            def copy(out: int) -> None:
                position = offset
                while chunk := os.pread(fd, 1 << 20, position):
                    write_all(out, chunk)
                    position += len(chunk)

            self._new_quarantine_file(name, copy)
        finally:
            os.close(fd)
        return expected

    def write_quarantine(self, name: str, data: bytes) -> None:
        """Write one new file into ``quarantine/`` (created 0700 if needed) through the atomic write path.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR``, ``LOCK_COMPROMISED``, ``STORAGE_WRITE_FAILED``.
        """
        self._check_open()
        self._new_quarantine_file(name, data)

    def _new_quarantine_file(self, name: str, data: bytes | Callable[[int], None]) -> None:
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

    def _commit(
        self,
        kind: str,
        view: LedgerView | None,
        data: bytes | Callable[[int], None],
        events: Sequence[Event],
        *,
        streamed: Streamed | None = None,
    ) -> None:
        """The one commit every ledger change goes through; ``view`` is the ledger after it (``None``: a writer that
        holds no view appends ``events``).

        ``append``: add ``data`` (the lines of ``events``) at the end of the verified file, in place (creating it when
        there is none). ``truncate``: cut the verified file to ``view.byte_length`` (a torn tail). ``rewrite``:
        replace the whole file with ``data`` (temp file + rename). ``stream``: the same with ``data`` writing the
        file itself and reporting the new chain in ``streamed`` (which brings its own task index). The owner token is
        checked right before the file changes; the task index and the checkpoint are updated right after.

        Raises:
            StorageError: ``LOCK_COMPROMISED``, ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``TRANSIENT_FILE_RACE`` (not
                the verified file), ``STORAGE_WRITE_FAILED``.
        """
        _head, before_lines, before_length = self._head

        def committed(st: os.stat_result | None) -> None:
            self._identity = None if st is None else (st.st_dev, st.st_ino, st.st_size)
            if streamed is not None:
                # No view: whoever asks for one after a streamed rewrite reads the new file (``view``'s loader).
                self._view = None
                self._head = (streamed.head, streamed.lines, streamed.length)
                self._verification = Verification(
                    events=(),
                    head_hash=streamed.head,
                    byte_length=streamed.length,
                    line_count=streamed.lines,
                    error=None,
                    torn_tail=None,
                )
            elif view is not None:
                self._view = view
                self._head = (view.head_hash, len(view), view.byte_length)
                self._verification = Verification(
                    events=view.events,
                    head_hash=view.head_hash,
                    byte_length=view.byte_length,
                    line_count=len(view),
                    error=None,
                    torn_tail=None,
                )
            else:
                assert isinstance(data, bytes)
                self._head = (events[-1].event_hash, before_lines + len(events), before_length + len(data))
            self.damage = None
            if streamed is not None:
                from intentloop.store._index import remove_stale_indexes

                self._index, self._bindings = streamed.index, streamed.bindings
                remove_stale_indexes(self._paths, keep=streamed.index)
            else:
                self._update_index(kind, events, before_length, view)
            write_checkpoint(self._paths, st, self._head[1], self._head[0], self._index, self._bindings)
            # Every commit (append, truncation, rewrite) passes here, still under the lock: its head is signed alone
            # (``before`` signed it beside the old head already, so a lost or crashed write here changes nothing).
            signer.after((self._head[0], self._head[1]), self._handle.require_owner)
            if view is not None:
                self._on_commit(st, self._verification, view)

        target = self._paths.ledger_path
        signer = self._signer if self._signer is not None else self.vouch()
        current = (_head, before_lines)

        def owner() -> None:
            self._handle.require_owner()
            if streamed is not None:
                new = (streamed.head, streamed.lines)
            elif view is not None:
                new = (view.head_hash, len(view))
            else:
                new = (events[-1].event_hash, before_lines + len(events))
            signer.before(current, new, self._handle.require_owner)

        if kind in ("rewrite", "stream"):
            if os.path.lexists(target):
                self._check_replaceable(target)
            atomic_replace(target, ledger_temp_name("rewrite"), data, before_replace=owner, on_commit=committed)
        elif kind == "truncate":
            if self._identity is None or view is None:
                raise StorageError("there is no ledger to repair", code="TRANSIENT_FILE_RACE")
            truncate_durably(target, view.byte_length, expected=self._identity, before_write=owner, on_commit=committed)
        else:
            assert isinstance(data, bytes)
            append_durably(target, data, expected=self._identity, before_write=owner, on_commit=committed)

    def _update_index(self, kind: str, events: Sequence[Event], start: int, view: LedgerView | None) -> None:
        """Extend the task index by an append's events, or rebuild it (after a rewrite, a truncation, or when it did
        not cover the ledger as found); a failure, or a rebuild without a view, leaves no index recorded, which costs
        readers a full read and makes the next writer with a view rebuild it."""
        from intentloop.store._index import count_bindings, extend_index, rebuild_index

        end = self._head[2]  # the ledger's length after this commit
        if self._index is not None and kind == "append" and extend_index(self._paths, self._index, events, start, end):
            self._bindings += count_bindings(events)
            from intentloop.store._summary import update_summaries

            update_summaries(self._paths, self._index, events, start, end)
            return
        if view is None:
            self._index, self._bindings = None, 0
            return
        self._index = rebuild_index(self._paths, view.events, view.byte_length)
        self._bindings = count_bindings(view.events)

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


__all__ = ["CommitHook", "LockedLedger", "read_tombstones"]
