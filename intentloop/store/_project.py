"""``ProjectStore``: lock-free verified reads, and the synchronous way into the lock (hooks, CLI).

Verified ledgers are cached per process (events and view, never the file's bytes) by (device, inode, size, mtime_ns,
ctime_ns) of the file: any write changes that key, and ctime cannot be set back. A file whose key differs is only
read from where the cache ends when the shared checkpoint (``_checkpoint``) matches the file's stat exactly and the
new lines chain from the cached head to the checkpoint's head; anything else is read and verified whole.

Every view a store hands out holds offsets, not events (``_lines``): a file is verified in chunks, and a view made of
decoded events (the one a rewrite or the ledger's first append leaves) is not cached but read back as offsets on the
next read, once. Only a damaged ledger's verified prefix is held decoded (recovery reads it whole for its report).
A ``resident`` store (a long-running server's) keeps that view between calls, with the folds of the tasks last asked
for; a one-call process's store verifies a ledger no checkpoint vouches for a chunk at a time on entering the lock,
rebuilding the checkpoint and task index as it goes, and reads tasks through the index.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from intentloop.errors import CorruptLedgerError
from intentloop.store._checkpoint import Checkpoint, read_checkpoint
from intentloop.store._config import LockConfig
from intentloop.store._controls import PrivateControl, read_control, read_controls
from intentloop.store._fs import Overflow, file_key, hash_from, open_regular, read_lines_open
from intentloop.store._lines import LineEvents, stream_verify
from intentloop.store._paths import ProjectPaths
from intentloop.store._scan import Scan, Sink, scan_file, scan_open
from intentloop.store._verify import (
    MAX_LINE_BYTES,
    Damage,
    Verification,
    overlong_error,
    trailing_error,
    verify_continuation,
    verify_ledger_bytes,
)
from intentloop.store._view import EMPTY_VIEW, LedgerView

if TYPE_CHECKING:  # the lock machinery is imported on the way into the lock: a reader never loads it
    from intentloop.model.events import Event, EventDraft
    from intentloop.model.projection import TaskState
    from intentloop.store._index import IndexedLedger
    from intentloop.store._inventory import ProjectEntry
    from intentloop.store._ledger import LockedLedger
    from intentloop.store._lock import Acquirer, LockHandle
    from intentloop.store._sessions import SessionTask
    from intentloop.store._task_queries import TaskListing

_CACHE_SIZE = 16
_SETTLE_ATTEMPTS = 4


class _Verified:
    """A verified ledger and the file key it was read under (a plain class: the hook never imports dataclasses)."""

    __slots__ = ("key", "verification", "view")

    def __init__(self, key: tuple[int, int, int, int, int], verification: Verification, view: LedgerView) -> None:
        self.key = key
        self.verification = verification
        self.view = view


class _LedgerCache:
    """A small per-process LRU of verified ledgers, shared by every ``ProjectStore`` of the same ledger path."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, _Verified] = OrderedDict()
        self._mutex = threading.Lock()

    def get(self, path: str) -> _Verified | None:
        with self._mutex:
            entry = self._entries.get(path)
            if entry is not None:
                self._entries.move_to_end(path)
            return entry

    def put(self, path: str, entry: _Verified) -> None:
        with self._mutex:
            self._entries[path] = entry
            self._entries.move_to_end(path)
            while len(self._entries) > _CACHE_SIZE:
                self._entries.popitem(last=False)

    def drop(self, path: str) -> None:
        with self._mutex:
            self._entries.pop(path, None)


_cache = _LedgerCache()


def _fresh(error: CorruptLedgerError) -> CorruptLedgerError:
    """A new exception object per raise, so tracebacks of cached errors do not pile up."""
    return CorruptLedgerError(error.message, line=error.line, reason=error.reason, code=error.code)


class _Heartbeat:
    """The sync face's heartbeat: a daemon thread refreshing ``owner.json`` every ``interval`` seconds."""

    def __init__(self, handle: LockHandle, interval: float) -> None:
        self._handle = handle
        self._interval = interval
        self._stop = threading.Event()
        self.lost = False
        self._thread = threading.Thread(target=self._run, name="intentloop-lock-heartbeat", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            if not self._handle.heartbeat():
                self.lost = True
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class ProjectStore:
    """The storage of one project under a data root.

    Args:
        data_root: the storage root ``R`` (see :func:`resolve_data_root`).
        project_id: 64 lowercase hex digits.
        config: lock timings (default :meth:`LockConfig.from_env`).
        deadline: a ``time.monotonic()`` value after which no lock wait of this store continues, whichever loop waits
            (a short-lived process such as a hook passes its own deadline; ``None``: only the lock timings).
        resident: a long-running process (a server): a writer entering the lock keeps the verified view (offsets)
            for the calls after it, instead of streaming the file to rebuild the checkpoint and index and keeping
            nothing (a one-call process).

    Raises:
        StorageError: ``INVALID_PROJECT_ID``.
    """

    def __init__(
        self,
        data_root: str | os.PathLike[str],
        project_id: str,
        config: LockConfig | None = None,
        *,
        deadline: float | None = None,
        resident: bool = False,
    ) -> None:
        self.paths = ProjectPaths(Path(data_root), project_id)
        self.config = LockConfig.from_env() if config is None else config
        self.deadline = deadline
        self.resident = resident

    @property
    def data_root(self) -> Path:
        return self.paths.data_root

    @property
    def project_id(self) -> str:
        return self.paths.project_id

    @property
    def project_dir(self) -> Path:
        return self.paths.project_dir

    @property
    def ledger_path(self) -> Path:
        return self.paths.ledger_path

    @property
    def lock_path(self) -> Path:
        return self.paths.lock_path

    @property
    def private_dir(self) -> Path:
        return self.paths.private_dir

    @property
    def quarantine_dir(self) -> Path:
        return self.paths.quarantine_dir

    def exists(self) -> bool:
        """Whether the project directory exists (creates nothing).

        Raises:
            StorageError: ``PATH_ESCAPE``, ``INVALID_DATA_DIR``.
        """
        return self.paths.check_project()

    def verify(self) -> Verification:
        """Verify the ledger without raising for damage (recovery, ``intentloop verify``); lock-free, creates nothing.

        Raises:
            StorageError: path-safety refusals (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``INVALID_DATA_DIR``), I/O.
        """
        return self._load()[0]

    def scan(self, sink: Sink | None = None) -> Scan | None:
        """Verify the ledger a chunk of lines at a time, keeping nothing per event (``intentloop verify``, recovery's
        export): ``sink`` sees each run of verified lines as stored. ``None`` when there is no ledger file. Damage is
        reported, not raised; lock-free, creates nothing.

        Raises:
            StorageError: path-safety refusals, ``TRANSIENT_FILE_RACE``, ``STORAGE_READ_FAILED``.
        """
        if not self.paths.check_project():
            return None
        return scan_file(self.paths.ledger_path, self.paths.project_id, sink)

    def read_raw(self) -> tuple[bytes, Verification] | None:
        """The ledger's bytes exactly as stored, with their verification (damage is reported, not raised); ``None``
        when there is no ledger file. Lock-free, creates nothing, shares the verified cache (recovery's export and
        reports need the stored bytes, not only the events).

        Raises:
            StorageError: path-safety refusals (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``INVALID_DATA_DIR``), I/O.
        """
        if not self.paths.check_project():
            return None
        opened = open_regular(self.paths.ledger_path)
        if opened is None:
            return None
        fd, st = opened
        try:
            data, verification, _view = self._read_whole(fd, st)
        finally:
            os.close(fd)
        return data, verification

    def read(self) -> LedgerView:
        """The verified ledger; lock-free and creates nothing. A missing ledger is an empty view.

        Raises:
            CorruptLedgerError: ``CORRUPT_LEDGER`` (with the line), ``CORRUPT_TRAILING_EVENT`` (retryable; the next
                write repairs it), ``FUTURE_SCHEMA``, ``MIGRATION_UNAVAILABLE``.
            StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``INVALID_DATA_DIR``, ``TRANSIENT_FILE_RACE``.
        """
        verification, view, _st = self._load(settle=True)
        if verification.error is not None:
            raise _fresh(verification.error)
        return view

    def is_cached(self) -> bool:
        """Whether :meth:`read` would now be answered from this process's cache without reading the ledger (the file
        is as it was when last verified here, or there is none); a cheap ``lstat``, lock-free, never raises."""
        try:
            st = os.lstat(self.paths.ledger_path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        cached = _cache.get(str(self.paths.ledger_path))
        return cached is not None and cached.key == file_key(st)

    def session_task(self, session_hash: str, *, whole_read_limit: int | None = None) -> SessionTask:
        """The task bound to the host session ``session_hash`` (lock-free, creates nothing): through the task index
        when the checkpoint vouches for the file, else from a whole verified read — unless the file is larger than
        ``whole_read_limit`` bytes, when the answer only says so (``SessionTask.whole_read_bytes``).

        A torn last line (a crashed write, never acknowledged) is answered from the verified prefix: the hooks read
        what was committed, and the write that follows repairs the tail under the lock, as every mutation does.

        Raises:
            CorruptLedgerError, StorageError: as :meth:`read` (but ``CORRUPT_TRAILING_EVENT``), when the whole ledger
                is read.
        """
        from intentloop.store._sessions import session_task

        return session_task(self.paths, self._read_committed, session_hash, whole_read_limit=whole_read_limit)

    def _read_committed(self) -> LedgerView:
        """:meth:`read`, but the verified prefix of a ledger whose only damage is a torn last line, with that line
        when it is a whole event chaining after the prefix and lacks only its newline (the repair keeps it)."""
        try:
            return self.read()
        except CorruptLedgerError as exc:
            if exc.code != "CORRUPT_TRAILING_EVENT":
                raise
        verification, view, _st = self._load(settle=True)  # the verdict just cached: the verified prefix
        if verification.error is not None and verification.error.code != "CORRUPT_TRAILING_EVENT":
            raise _fresh(verification.error)  # the file changed meanwhile
        torn = verification.torn_tail
        if torn is not None:
            whole = verify_continuation(
                torn + b"\n", project_id=self.project_id, prev_hash=view.head_hash, first_line=len(view) + 1
            )
            if whole.error is None and whole.line_count == 1:
                return view.extended(whole.events, view.byte_length + len(torn))
        return view

    def read_controls(self) -> list[PrivateControl]:
        """Every private-mode control of the project (lock-free).

        Raises:
            StorageError: ``CORRUPT_PRIVATE_CONTROL``, ``INVALID_SESSION_HASH``, ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``.
        """
        return read_controls(self.paths)

    def read_control(self, session_hash: str) -> PrivateControl | None:
        """The control of one session, or ``None`` (lock-free).

        Raises:
            InvalidInputError: ``INVALID_SESSION_HASH``.
            StorageError: ``CORRUPT_PRIVATE_CONTROL``, ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``.
        """
        return read_control(self.paths, session_hash)

    def persistent_entries(self, *, skip: frozenset[str] = frozenset()) -> Iterator[ProjectEntry]:
        """Every persistent file and directory of the project (what deletion searches; ``_inventory``), lock-free.

        Raises:
            StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED``.
        """
        from intentloop.store._inventory import project_entries

        return project_entries(self.paths, skip=skip)

    def rewritten_by_deletion(self) -> frozenset[str]:
        """The top-level entries a deletion replaces under the lock (searched after it, not before)."""
        from intentloop.store._inventory import rewritten_by_deletion

        return rewritten_by_deletion(self.paths)

    def read_tombstones(self) -> frozenset[str]:
        """The keyed digests of requests whose claims were deleted (``deleted-requests.json``; lock-free).

        Raises:
            StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED``.
        """
        from intentloop.store._ledger import read_tombstones

        return read_tombstones(self.paths)

    @contextmanager
    def locked(
        self, deadline: float | None = None, *, verify: bool = True, lazy: bool = False
    ) -> Iterator[LockedLedger]:
        """Hold the ledger lock (synchronously) for one mutation.

        Without a ``deadline`` (or one further away than the heartbeat interval) a daemon thread keeps the heartbeat;
        a caller whose deadline is closer than one heartbeat interval (a hook: 2.5 s against 10 s) finishes before a
        heartbeat would be due, so none is started. Either way the owner token is checked right before every replace
        and before release.

        Args:
            deadline: a ``time.monotonic()`` value at which to give up waiting.
            verify: when false (recovery), a damaged ledger is opened instead of refused and a torn tail is left as
                it is: ``ledger.damage`` holds the first error, ``ledger.view`` the verified prefix, ``append`` is
                refused and ``rewrite`` is the way out.
            lazy: a cold writer (a hook) whose checkpoint matches the ledger exactly and whose task index covers it
                trusts them and appends after its head without reading the ledger; ``ledger.view`` is then read only
                if something asks for it. Any other cold writer of a store that is not resident verifies the ledger
                a chunk at a time and rebuilds the checkpoint and index on entering (see ``_enter_cold``).

        Raises:
            StorageError: ``LOCK_TIMEOUT`` (retryable), path-safety refusals, ``STORAGE_WRITE_FAILED``.
            CorruptLedgerError: the ledger is damaged (unless ``verify`` is false).
        """
        self.paths.ensure()
        acquirer = self.acquirer(now=time.monotonic(), deadline=deadline)
        while (handle := acquirer.attempt(time.monotonic())) is None:
            time.sleep(acquirer.delay(time.monotonic()))
        heartbeat: _Heartbeat | None = None
        try:
            if deadline is None or deadline - time.monotonic() >= self.config.heartbeat_s:
                heartbeat = _Heartbeat(handle, self.config.heartbeat_s)
            ledger = self.enter_locked(handle, verify=verify, lazy=lazy)
            try:
                yield ledger
            finally:
                ledger.close()
        finally:
            if heartbeat is not None:
                heartbeat.stop()
            handle.release()

    def acquirer(self, *, now: float, deadline: float | None) -> Acquirer:
        """A lock acquirer for this project: call ``attempt(now)`` until it returns a handle, sleeping ``delay(now)``
        between tries (the seam :mod:`intentloop.store.aio` waits through without blocking its event loop).

        Args:
            now: the current time in the clock of the loop that waits (``time.monotonic()`` or ``trio.current_time()``).
            deadline: when to give up, in that clock; the store's own deadline applies too.
        """
        from intentloop.store._lock import Acquirer

        if self.deadline is not None:  # the store's monotonic deadline, in the clock of the loop that waits (``now``)
            own = now + (self.deadline - time.monotonic())
            deadline = own if deadline is None else min(deadline, own)
        return Acquirer(self.paths, self.config, now=now, deadline=deadline)

    def spool(self, draft: EventDraft, *, session_hash: str | None = None) -> bool:
        """Leave an observation for the next writer when the lock cannot be had in time (a hook at its deadline);
        lock-free. ``False`` when it was not spooled (the spool is full, the draft is no observation or too large).
        With ``session_hash``, the writer records it into the task bound to that session (``_spool``).

        Raises:
            StorageError: path-safety refusals, ``STORAGE_WRITE_FAILED``.
        """
        from intentloop.store._spool import spool_draft

        return spool_draft(self.paths, draft, session_hash=session_hash)

    def enter_locked(self, handle: LockHandle, *, verify: bool, lazy: bool = False) -> LockedLedger:
        """Inside the lock just taken with ``handle``: remove orphans, verify the chain (or trust the checkpoint when
        ``lazy``), repair a torn tail and append the spooled observations (all unless ``verify`` is false). The seam
        both :meth:`locked` and :func:`intentloop.store.aio.open_locked_ledger` go through.

        Raises:
            CorruptLedgerError: a damaged ledger, unless ``verify`` is false.
            StorageError: path-safety refusals and I/O failures (mapped).
        """
        from intentloop.store._ledger import LockedLedger
        from intentloop.store._liveness import current_identity
        from intentloop.store._names import remove_orphans

        remove_orphans(self.paths, self.config, current_identity())
        if verify:
            cold = self._enter_cold(handle, lazy=lazy)
            if cold is not None:
                cold.vouch()
                cold.drain_spool()
                return cold
        verification, view, st = self._load()
        ledger = LockedLedger(
            self.paths,
            handle,
            st=st,
            verification=verification,
            view=view,
            on_commit=self._remember,
            index=self._index_for(st),
            loader=self._load,  # a streamed rewrite leaves no view: the next ask reads the new file
        )
        error = verification.error
        if verify and error is not None and error.code != "CORRUPT_TRAILING_EVENT":
            raise _fresh(error)
        ledger.vouch(strict=verify)  # this installation's signature vouches for the chain (``_vouch``)
        if not verify:
            return ledger
        if error is not None:
            ledger.repair_torn_tail()
        ledger.drain_spool()
        return ledger

    def _enter_cold(self, handle: LockHandle, *, lazy: bool) -> LockedLedger | None:
        """A writer that has not verified the ledger in this process holds no view of it (one is read if something
        asks): ``lazy``, it trusts a checkpoint that matches the file exactly and names a
        covering index; otherwise (a store that is not resident) it verifies the file a chunk at a time, rebuilding the
        task index on the way unless the checkpoint covers one, and records the checkpoint at once. ``None``: read it
        as before (verified here already, a resident store's cached view, no ledger, or a torn tail to repair).

        Why: a writer that read the whole ledger held every decoded event (4.0 GB at 1,000,000 events) until it let
        go of the lock; streaming keeps the chunk and a record count per task (docs/BENCHMARK.md).

        Raises:
            CorruptLedgerError: the ledger is damaged (other than a torn tail).
            StorageError: path-safety refusals, ``TRANSIENT_FILE_RACE``, ``STORAGE_READ_FAILED``, ``LOCK_COMPROMISED``.
        """
        from intentloop.store._checkpoint import write_checkpoint
        from intentloop.store._index import IndexBuilder
        from intentloop.store._ledger import LockedLedger

        if (self.resident and not lazy) or not self.paths.check_project():
            return None  # a resident store's view is kept (cached) for its reads: verified by ``_load``
        opened = open_regular(self.paths.ledger_path)
        if opened is None:
            return None
        fd, st = opened
        try:
            cached = _cache.get(str(self.paths.ledger_path))
            if cached is not None and cached.key == file_key(st):
                return None  # verified in this process already: the view costs nothing
            checkpoint = read_checkpoint(self.paths)
            index = self._index_for(st, checkpoint)
            if lazy and checkpoint is not None and index is not None:  # it matches the file and its index is whole
                head = (checkpoint.head, checkpoint.lines, checkpoint.size)
            elif self.resident:
                return None
            else:
                builder = None if index is not None else IndexBuilder(self.paths)
                scan = scan_open(self.paths.ledger_path, fd, st, self.paths.project_id, builder)
                if not scan.ok:
                    if builder is not None:
                        builder.abandon()
                    assert scan.error is not None
                    if scan.error.code == "CORRUPT_TRAILING_EVENT":
                        return None  # repaired from a whole read of the verified prefix, as before
                    raise _fresh(scan.error)
                head = (scan.head_hash, scan.line_count, scan.byte_length)
                if builder is not None:
                    index = builder.finish()
                    handle.require_owner()
                    built = (None, 0) if index is None else index
                    write_checkpoint(self.paths, st, scan.line_count, scan.head_hash, built[0], built[1])
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
        verified = Verification(
            events=(), head_hash=head[0], byte_length=head[2], line_count=head[1], error=None, torn_tail=None
        )
        return LockedLedger(
            self.paths,
            handle,
            st=st,
            verification=verified,
            view=None,
            on_commit=self._remember,
            index=index,
            head=head,
            loader=self._load,
        )

    def _index_for(self, st: os.stat_result | None, checkpoint: Checkpoint | None = None) -> tuple[str, int] | None:
        """The task index a writer may extend: the checkpoint's, when it matches the file as found, covers it, is
        sealed to it and is whole (its task summaries written: an index built before them is rebuilt, not
        extended)."""
        from intentloop.store._summary import SUMMARIES_MARK

        if st is None:
            return None
        checkpoint = read_checkpoint(self.paths) if checkpoint is None else checkpoint
        if checkpoint is None or not checkpoint.matches(st):
            return None
        vouched = checkpoint.vouched_index(self.paths)  # an index edited since is rebuilt, never extended
        if vouched is None or not os.path.lexists(self.paths.project_dir / vouched[0] / SUMMARIES_MARK):
            return None
        return vouched[0], vouched[1]

    def indexed(self) -> IndexedLedger | None:
        """The ledger through its task index (lock-free, creates nothing), or ``None`` when the checkpoint does not
        match the file exactly or the index does not cover it: then read it whole. Close the result after use."""
        from intentloop.store._index import open_indexed

        return open_indexed(self.paths)

    def tasks(self) -> TaskListing:
        """Every task of the ledger (of its verified prefix, when damaged) with what listings count: label, mode,
        times, claims by status, candidates (lock-free, creates nothing). Answered from the task index and its
        per-task summaries when the checkpoint vouches for the file, else by reading and verifying it whole.

        Raises:
            StorageError: path-safety refusals and I/O failures (``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ...).
        """
        from intentloop.store._task_queries import list_tasks

        return list_tasks(self)

    def task_events(self, task_id: str) -> tuple[Event, ...]:
        """The verified events of one task in ledger order (empty: the ledger has none); lock-free, creates nothing.
        Read through the task index when the checkpoint vouches for the file, else from the whole verified ledger.

        Raises:
            CorruptLedgerError: as :meth:`read`, when the whole ledger is read.
            StorageError: as :meth:`read`.
        """
        from intentloop.store._task_queries import task_events

        return task_events(self, task_id)

    def task(self, task_id: str) -> TaskState | None:
        """The fold of one task's events (:meth:`task_events`); ``None`` when the ledger has none of them.

        Raises:
            CorruptLedgerError: as :meth:`read`, when the whole ledger is read.
            StorageError: as :meth:`read`.
        """
        from intentloop.store._task_queries import task

        return task(self, task_id)

    def _remember(self, st: os.stat_result | None, verification: Verification, view: LedgerView) -> None:
        path = str(self.paths.ledger_path)
        if st is None or not isinstance(view.events, LineEvents):
            _cache.drop(path)
            return
        _cache.put(path, _Verified(file_key(st), verification, view))

    def _load(self, *, settle: bool = False) -> tuple[Verification, LedgerView, os.stat_result | None]:
        """Read and verify the ledger (``None`` stat: no ledger file), trusting the cache only for an unchanged file
        or, through the checkpoint, for a file that only grew.

        Args:
            settle: a lock-free reader that finds a torn last line while the file is still growing (a writer's
                append in flight) looks again, a few times, before reporting it.

        Raises:
            StorageError: path-safety refusals, ``TRANSIENT_FILE_RACE``, ``STORAGE_READ_FAILED``.
        """
        empty = Verification(events=(), head_hash=None, byte_length=0, line_count=0, error=None, torn_tail=None)
        if not self.paths.check_project():
            return empty, EMPTY_VIEW, None
        for _attempt in range(_SETTLE_ATTEMPTS if settle else 1):
            opened = open_regular(self.paths.ledger_path)
            if opened is None:
                return empty, EMPTY_VIEW, None
            fd, st = opened
            try:
                verification, view = self._load_open(fd, st)
                if verification.error is None or verification.error.code != "CORRUPT_TRAILING_EVENT":
                    return verification, view, st
                try:
                    grown = os.fstat(fd).st_size != st.st_size
                except OSError:
                    grown = False
            finally:
                with contextlib.suppress(OSError):  # a failed close of a read descriptor changes nothing
                    os.close(fd)
            if not grown:
                break
        return verification, view, st

    def _load_open(self, fd: int, st: os.stat_result) -> tuple[Verification, LedgerView]:
        path = str(self.paths.ledger_path)
        key = file_key(st)
        cached = _cache.get(path)
        if cached is not None and cached.key == key:
            return cached.verification, cached.view
        grown = self._grown(fd, st, cached)
        streamed = None if grown is not None else stream_verify(fd, st, self.paths.project_id)
        if grown is not None:
            verification, view = grown
        elif streamed is not None:
            verification, view = streamed[0], LedgerView(streamed[1], streamed[0].head_hash, st.st_size)
        else:
            _data, verification, view = self._read_whole(fd, st)
        _cache.put(path, _Verified(key, verification, view))
        return verification, view

    def _grown(self, fd: int, st: os.stat_result, cached: _Verified | None) -> tuple[Verification, LedgerView] | None:
        """The cached chain extended by the file's new lines, when the checkpoint vouches for the file exactly and
        those lines chain from the cached head to the checkpoint's head; ``None`` otherwise (read it whole)."""
        if cached is None or not cached.verification.ok:
            return None
        base = cached.verification
        dev, ino, size = cached.key[0], cached.key[1], cached.key[2]
        if (st.st_dev, st.st_ino) != (dev, ino) or st.st_size < size or st.st_size - size > MAX_LINE_BYTES * 4:
            return None
        checkpoint = read_checkpoint(self.paths)
        if checkpoint is None or not checkpoint.matches(st):
            return None
        try:
            suffix = os.pread(fd, st.st_size - size, size)
        except OSError:
            return None
        more = verify_continuation(
            suffix, project_id=self.paths.project_id, prev_hash=base.head_hash, first_line=base.line_count + 1
        )
        if (
            more.error is not None
            or len(suffix) != st.st_size - size
            or more.head_hash != checkpoint.head
            or base.line_count + more.line_count != checkpoint.lines
        ):
            return None
        view = cached.view.extended(more.events, base.byte_length + more.byte_length)
        verification = Verification(
            events=view.events,
            head_hash=more.head_hash,
            byte_length=base.byte_length + more.byte_length,
            line_count=base.line_count + more.line_count,
            error=None,
            torn_tail=None,
            damage=None,
        )
        return verification, view

    def _read_whole(self, fd: int, st: os.stat_result) -> tuple[bytes, Verification, LedgerView]:
        """Read the first ``st.st_size`` bytes of the opened ledger and verify the whole chain.

        Raises:
            StorageError: ``TRANSIENT_FILE_RACE``, ``STORAGE_READ_FAILED``.
        """
        data, overflow = read_lines_open(self.paths.ledger_path, fd, st, MAX_LINE_BYTES, growing=True)
        verification = verify_ledger_bytes(data, project_id=self.paths.project_id)
        view = LedgerView(verification.events, verification.head_hash, verification.byte_length)
        if overflow is not None:
            verification = self._past_overflow(verification, overflow, fd, st)
        return data, verification, view

    def _past_overflow(
        self, verification: Verification, overflow: Overflow, fd: int, st: os.stat_result
    ) -> Verification:
        """The verdict on a file whose line at ``overflow.offset`` was too long to hold (``MAX_LINE_BYTES``): that line
        is the first error unless an earlier one is, and the damage summary covers everything after the verified
        prefix (hashed from the file in chunks, never held whole).

        Raises:
            StorageError: ``TRANSIENT_FILE_RACE``, ``STORAGE_READ_FAILED``.
        """
        error = verification.error
        if error is None:
            line_no = verification.line_count + 1
            error = overlong_error(line_no) if overflow.newline else trailing_error(line_no)
            damage = Damage(length=overflow.length, sha256=overflow.sha256, torn=overflow.torn)
        else:
            length, digest = hash_from(self.paths.ledger_path, fd, st, verification.byte_length)
            damage = Damage(length=length, sha256=digest, torn=overflow.torn)
        return Verification(
            events=verification.events,
            head_hash=verification.head_hash,
            byte_length=verification.byte_length,
            line_count=verification.line_count,
            error=error,
            torn_tail=None,
            damage=damage,
        )


__all__ = ["ProjectStore"]
