"""The directory lock ``ledger.lock/`` (docs/STORAGE.md): acquire, prove ownership, heartbeat, reclaim, release.

The lock appears with its owner record already inside: the record is written into a private staging directory that
is renamed into place with ``RENAME_NOREPLACE``, so a crash never leaves an anonymous empty lock that only the stale
window could break. Reclaim and release move the whole directory away with one rename; a ``reclaim.json`` marker
linked into a dead lock makes sure only one waiter reclaims it, and inode checks catch the rest.

Why an unreadable ``owner.json`` (empty, garbled, missing) is abandoned after ``UNREADABLE_OWNER_GRACE_S`` (3 s) and
not the 30 s stale window: every acquirer writes its record right after creating the lock directory (our staging
rename publishes it complete; the original implementation and the ``mkdir`` fallback write it just after ``mkdir``),
so only an acquirer stopped between those two system calls can leave one. Measured on the loaded 2-core development
machine (4 busy processes, 20,000 ``mkdir`` + write + close): the longest gap was 35 ms, the 99.9th percentile 0.8 ms.
3 s is ~85 times that longest gap, and below ``wait_s`` (5 s), so a waiter behind such a lock takes it instead of
timing out (an unreadable ``reclaim.json`` gets the same grace; ours is always linked in complete).
A readable record of unknown liveness (another host) still gets the whole stale window.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
import uuid
from pathlib import Path

import msgspec

from intentloop.errors import StorageError
from intentloop.model.ids import utc_now
from intentloop.store._config import LockConfig
from intentloop.store._fs import (
    DIR_MODE,
    create_exclusive,
    read_marker,
    remove_tree_quietly,
    rename_noreplace,
    storage_error,
    unlink_quietly,
)
from intentloop.store._liveness import (
    Liveness,
    OwnerRecord,
    current_identity,
    judge,
    new_owner_record,
    parse_owner,
)
from intentloop.store._names import OWNER_NAME, released_lock_name, staged_lock_name, stale_lock_name
from intentloop.store._paths import ProjectPaths

RECLAIM_NAME = "reclaim.json"
UNREADABLE_OWNER_GRACE_S = 3.0
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_RETRY = object()  # the lock changed under us: look again at once


def _read_record(name: str, dir_fd: int) -> tuple[OwnerRecord | None, float | None]:
    marker = read_marker(name, dir_fd=dir_fd)
    if marker is None:
        return None, None
    return parse_owner(marker[0]), marker[1].st_mtime


_IO_ATTEMPTS = 3


def _token() -> str:
    """32 hex digits from the OS's random source: what ``secrets.token_hex(16)`` returns, without importing
    ``secrets`` and ``random`` (~1.5 ms of a writing hook's start-up, `python -X importtime`)."""
    return os.urandom(16).hex()


def _uniform(low: float, high: float) -> float:
    """A uniform draw from ``[low, high)`` for the polling jitter (53 random bits, as ``random.random``)."""
    return low + (high - low) * (int.from_bytes(os.urandom(7), "big") >> 3) / (1 << 53)


class LockHandle:
    """Proof of holding ``ledger.lock``: its token, and a descriptor of the very directory we created."""

    def __init__(self, paths: ProjectPaths, record: OwnerRecord, dir_fd: int, dir_id: tuple[int, int]) -> None:
        self.paths = paths
        self.record = record
        self.token = record.token
        self._dir_fd = dir_fd
        self._dir_id = dir_id
        self._mutex = threading.Lock()  # a heartbeat thread and the releasing thread never interleave
        self._released = False

    def is_owner(self) -> bool:
        """Whether ``ledger.lock`` is still our directory and its ``owner.json`` still carries our token.

        A failed look (an I/O error) is tried again, up to ``_IO_ATTEMPTS`` times, before it counts as not ours:
        otherwise one transient error at release would leave a lock held by this live process for every waiter.
        """
        try:
            return self._look()
        except OSError:
            return False

    def _look(self) -> bool:
        """:meth:`is_owner`, raising the last ``OSError`` when every look failed."""
        failed: OSError | None = None
        for _attempt in range(_IO_ATTEMPTS):
            try:
                st = os.lstat(self.paths.lock_path)
                if (st.st_dev, st.st_ino) != self._dir_id:
                    return False
                record, _ = _read_record(OWNER_NAME, self._dir_fd)
            except FileNotFoundError:
                return False
            except OSError as exc:
                failed = exc
                continue
            return record is not None and record.token == self.token
        assert failed is not None
        raise failed

    def require_owner(self) -> None:
        """The owner-token check right before a replace.

        Raises:
            StorageError: ``LOCK_COMPROMISED`` (retryable) when the lock is no longer ours; ``STORAGE_READ_FAILED``
                when the owner record could not be read at all (a process that may open no more files, say): the
                lock was not seen to change hands, so the failure is named, not reported as a lost lock.
        """
        try:
            ours = self._look()
        except OSError as exc:
            name = errno.errorcode.get(exc.errno or 0, "OSError")
            hint = (
                ": the process may open no more files, raise the limit (`ulimit -n`)"
                if exc.errno
                in (
                    errno.EMFILE,
                    errno.ENFILE,
                )
                else ""
            )
            raise StorageError(
                f"reading the ledger lock's owner record failed ({name}){hint}", code="STORAGE_READ_FAILED"
            ) from exc
        if not ours:
            raise StorageError("the ledger lock is no longer held by this writer", code="LOCK_COMPROMISED")

    def heartbeat(self) -> bool:
        """Refresh ``heartbeat_at``; ``False`` when the lock has been lost (a failed refresh alone is not a loss)."""
        with self._mutex:
            if self._released or not self.is_owner():
                return False
            record = msgspec.structs.replace(self.record, heartbeat_at=utc_now())
            temp = f"owner-{uuid.uuid4()}.tmp"
            try:
                create_exclusive(temp, record.to_json(), dir_fd=self._dir_fd, sync=False)
                os.replace(temp, OWNER_NAME, src_dir_fd=self._dir_fd, dst_dir_fd=self._dir_fd)
            except OSError:
                unlink_quietly(temp, dir_fd=self._dir_fd)
                return self.is_owner()
            self.record = record
            return True

    def release(self) -> None:
        """Validate the token, move the lock aside with one rename and remove it; never raises.

        A lock that is no longer ours is left alone. Whatever fails here happens after the commit point, so it is
        never reported: leftovers are strictly named and removed by the next holder.
        """
        with self._mutex:
            if self._released:
                return
            self._released = True
            try:
                if self.is_owner():
                    destination = self.paths.project_dir / released_lock_name(self.token)
                    if _move_aside(self.paths, self._dir_id, destination):
                        remove_tree_quietly(destination)
            finally:
                with contextlib.suppress(OSError):
                    os.close(self._dir_fd)


def _move_aside(paths: ProjectPaths, expected: tuple[int, int], destination: Path) -> bool:
    """Rename ``ledger.lock`` to ``destination``; if what moved was not ``expected``, try to put it back."""
    for attempt in range(3):
        try:
            os.rename(paths.lock_path, destination)
            break
        except FileNotFoundError:
            return False
        except OSError:
            time.sleep(0.005 * (attempt + 1))
    else:
        return False
    try:
        moved = os.lstat(destination)
    except OSError:
        return False
    if (moved.st_dev, moved.st_ino) != expected:
        with contextlib.suppress(OSError):
            rename_noreplace(destination, paths.lock_path)
        return False
    return True


class Acquirer:
    """One writer's attempt to take the lock, driven by a sync (``time.sleep``) or trio (``trio.sleep``) loop.

    ``attempt(now)`` never sleeps: it returns the handle, ``None`` (poll again after ``delay(now)``), or raises
    ``LOCK_TIMEOUT`` once ``wait_s`` passed without owner progress, or the ceiling or the caller's deadline is reached.
    """

    def __init__(self, paths: ProjectPaths, config: LockConfig, *, now: float, deadline: float | None) -> None:
        self.paths = paths
        self.config = config
        self.me = current_identity()
        self._limit = now + config.ceiling_s if deadline is None else min(now + config.ceiling_s, deadline)
        self._last_progress = now
        self._last_seen: object = None
        self._failures = 0

    def attempt(self, now: float) -> LockHandle | None:
        """One non-blocking try.

        Raises:
            StorageError: ``LOCK_TIMEOUT`` (retryable); ``PATH_ESCAPE``/``INVALID_DATA_DIR`` for an unsafe lock path;
                ``STORAGE_WRITE_FAILED`` when the lock cannot be created.
        """
        seen: object = _RETRY
        for _ in range(4):
            if not os.path.lexists(self.paths.lock_path):
                handle = self._create()
                if handle is not None:
                    return handle
            seen = self._inspect()
            if seen is not _RETRY:
                break
        if seen != self._last_seen:
            self._last_seen = seen
            self._last_progress = now
        if now >= self._limit:
            raise StorageError("gave up waiting for the ledger lock (deadline or ceiling)", code="LOCK_TIMEOUT")
        if now - self._last_progress >= self.config.wait_s:
            raise StorageError("gave up waiting for the ledger lock: its owner made no progress", code="LOCK_TIMEOUT")
        self._failures += 1
        return None

    def delay(self, now: float) -> float:
        """Randomised, growing pause before the next attempt, never past the limit."""
        high = min(self.config.poll_max_s, self.config.poll_min_s * 2 ** min(self._failures, 10))
        return max(0.0, min(_uniform(self.config.poll_min_s, high), self._limit - now))

    def _create(self) -> LockHandle | None:
        record = new_owner_record(_token(), self.me)
        staging = self.paths.project_dir / staged_lock_name()
        try:
            os.mkdir(staging, DIR_MODE)
            try:
                os.chmod(staging, DIR_MODE)
                create_exclusive(staging / OWNER_NAME, record.to_json(), sync=False)
                renamed = rename_noreplace(staging, self.paths.lock_path)
            finally:
                if os.path.lexists(staging):
                    remove_tree_quietly(staging)
            if renamed is None:  # no RENAME_NOREPLACE here: the original's mkdir, then the record
                self._create_by_mkdir(record)
            elif not renamed:
                return None
        except FileExistsError:
            return None
        except OSError as exc:
            raise storage_error(exc, "creating the ledger lock", code="STORAGE_WRITE_FAILED") from exc
        return self._adopt(record)

    def _create_by_mkdir(self, record: OwnerRecord) -> None:
        """The fallback: a crash between ``mkdir`` and the record leaves a lock of unknown liveness.

        Raises:
            OSError: ``FileExistsError`` when the lock exists; anything else after removing our empty directory.
        """
        os.mkdir(self.paths.lock_path, DIR_MODE)
        try:
            os.chmod(self.paths.lock_path, DIR_MODE)
            create_exclusive(self.paths.lock_path / OWNER_NAME, record.to_json(), sync=False)
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(self.paths.lock_path)
            raise

    def _adopt(self, record: OwnerRecord) -> LockHandle | None:
        """Open the lock directory we just published and confirm it carries our token; an I/O error is tried again
        (up to ``_IO_ATTEMPTS`` times), so a transient one does not leave our own lock standing for every waiter."""
        for _attempt in range(_IO_ATTEMPTS):
            try:
                dir_fd = os.open(self.paths.lock_path, _DIR_FLAGS)
            except FileNotFoundError:
                return None
            except OSError:
                continue
            try:
                st = os.fstat(dir_fd)
                current = os.lstat(self.paths.lock_path)
                owner, _ = _read_record(OWNER_NAME, dir_fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.close(dir_fd)
                continue
            same = (st.st_dev, st.st_ino) == (current.st_dev, current.st_ino)
            if owner is None or owner.token != record.token or not same:
                with contextlib.suppress(OSError):
                    os.close(dir_fd)
                return None
            return LockHandle(self.paths, record, dir_fd, (st.st_dev, st.st_ino))
        return None

    def _inspect(self) -> object:
        """Judge the current owner; reclaim a dead or stale lock. Returns what counts as owner progress."""
        try:
            dir_fd = os.open(self.paths.lock_path, _DIR_FLAGS)
        except FileNotFoundError:
            return _RETRY
        except OSError as exc:
            self._refuse_unsafe_lock(exc)
            return _RETRY
        try:
            st = os.fstat(dir_fd)
            record, owner_mtime = _read_record(OWNER_NAME, dir_fd)
            verdict = judge(record, self.me)
            # an unreadable record is one no live acquirer can still be writing after the grace (module docstring)
            window = self.config.stale_s if record is not None else min(UNREADABLE_OWNER_GRACE_S, self.config.stale_s)
            if verdict is Liveness.DEAD or (
                verdict is Liveness.UNKNOWN and time.time() - max(st.st_mtime, owner_mtime or 0.0) >= window
            ):
                self._reclaim(dir_fd, (st.st_dev, st.st_ino))
                return _RETRY
        except OSError as exc:
            raise storage_error(exc, "inspecting the ledger lock", code="STORAGE_READ_FAILED") from exc
        finally:
            os.close(dir_fd)
        return (st.st_ino, record.token if record else None, record.heartbeat_at if record else None, owner_mtime)

    def _refuse_unsafe_lock(self, exc: OSError) -> None:
        try:
            st = os.lstat(self.paths.lock_path)
        except FileNotFoundError:
            return
        except OSError as inner:
            raise storage_error(inner, "inspecting the ledger lock", code="STORAGE_READ_FAILED") from exc
        if stat.S_ISLNK(st.st_mode):
            raise StorageError("ledger.lock is a symbolic link", code="PATH_ESCAPE")
        if not stat.S_ISDIR(st.st_mode):
            raise StorageError("ledger.lock is not a directory", code="INVALID_DATA_DIR")
        raise storage_error(exc, "opening the ledger lock", code="STORAGE_READ_FAILED") from exc

    def _reclaim(self, dir_fd: int, dir_id: tuple[int, int]) -> None:
        """Move a dead (or stale, unknown) lock aside, unless another live waiter is already doing so."""
        marker = new_owner_record(_token(), self.me).to_json()
        temp = f"reclaim-{uuid.uuid4()}.tmp"
        try:
            create_exclusive(temp, marker, dir_fd=dir_fd, sync=False)
            os.link(temp, RECLAIM_NAME, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except FileExistsError:
            other, mtime = _read_record(RECLAIM_NAME, dir_fd)
            abandoned = judge(other, self.me) is Liveness.DEAD
            window = self.config.stale_s if other is not None else min(UNREADABLE_OWNER_GRACE_S, self.config.stale_s)
            if not abandoned and time.time() - (mtime or 0.0) < window:
                return  # a live waiter is reclaiming it right now
        except FileNotFoundError:
            return  # the lock directory went away meanwhile
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            # no hard links on this file system: go on without the marker; the inode checks below still hold
        finally:
            unlink_quietly(temp, dir_fd=dir_fd)
        try:
            current = os.lstat(self.paths.lock_path)
        except FileNotFoundError:
            return
        if (current.st_dev, current.st_ino) != dir_id:
            return
        destination = self.paths.project_dir / stale_lock_name()
        if _move_aside(self.paths, dir_id, destination):
            remove_tree_quietly(destination)


__all__ = ["RECLAIM_NAME", "UNREADABLE_OWNER_GRACE_S", "Acquirer", "LockHandle"]
