"""The per-installation secret of the hook's keyed digests (docs/HOOKS.md): ``R/keys/hook-digest.key``.

Why rename-no-replace: the key is written completely to a private temporary file, fsynced, and published with
``renameat2(RENAME_NOREPLACE)``, which fails if another process published first, so every process ends up using the
same key, no reader ever sees a partial one, and no crash point leaves anything but the key or a stray temporary file
(never a second link). Where that call is unavailable the key is published with ``link()`` then ``unlink()`` of the
temporary file, as older versions always did; a kill between the two leaves a second link whose other name is our own
strictly named temporary file (same inode, in ``keys/``): a load recognises exactly that leftover, removes it and uses
the key. Any other second link is still refused. Stray temporary files older than a minute are removed on creation.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
import uuid
from pathlib import Path
from typing import Final

from intentloop.errors import ErrorCode, StorageError
from intentloop.store import rename_noreplace

KEY_DIR: Final = "keys"
KEY_NAME: Final = "hook-digest.key"
KEY_BYTES: Final = 32
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
#: ``.hook-digest.key.<32 hex>.tmp``: the only names a load or a creation ever removes from ``keys/``.
TEMP_RE: Final = re.compile(r"^\.hook-digest\.key\.[0-9a-f]{32}\.tmp$")
_STRAY_TEMP_S: Final = 60.0  # a creator writes and publishes its temporary file within milliseconds


def _temp_name() -> str:
    return f".{KEY_NAME}.{uuid.uuid4().hex}.tmp"


def key_path(data_root: Path) -> Path:
    return data_root / KEY_DIR / KEY_NAME


def _error(exc: OSError, action: str, code: ErrorCode) -> StorageError:
    if exc.errno == errno.ELOOP:
        return StorageError(f"{action}: the hook key is a symbolic link", code="PATH_ESCAPE")
    return StorageError(f"{action} failed ({errno.errorcode.get(exc.errno or 0, 'OSError')})", code=code)


def _check_key_dir(directory: Path) -> bool:
    """Whether ``R/keys`` exists as a real directory (a symlink or a file there is refused)."""
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise _error(exc, "checking the key folder", "STORAGE_READ_FAILED") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise StorageError("the key folder is not a directory", code="PATH_ESCAPE")
    return True


def load_hook_key(data_root: Path) -> bytes | None:
    """The key, or ``None`` when none was created yet; lock-free, creates nothing.

    The file must be a regular 0600 file of this user holding exactly 32 bytes, with one link. A second link that is
    our own temporary file (same inode, strict name, in ``keys/``) is a creator killed between ``link`` and
    ``unlink`` (or one between them right now): it is removed and the key used. Any other second link is refused.

    Raises:
        StorageError: ``PATH_ESCAPE`` (symlink), ``UNSAFE_DATA_FILE`` (wrong type, owner, mode, size or links),
            ``STORAGE_READ_FAILED``.
    """
    if not _check_key_dir(data_root / KEY_DIR):
        return None
    path = key_path(data_root)
    for _attempt in range(25):
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _error(exc, "opening the hook key", "STORAGE_READ_FAILED") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StorageError("the hook key is not a regular file", code="UNSAFE_DATA_FILE")
            if st.st_nlink > 1:
                if not _remove_own_links(data_root / KEY_DIR, st):
                    time.sleep(0.002)
                continue
            if os.name == "posix" and (st.st_uid != os.getuid() or st.st_mode & 0o077):
                raise StorageError("the hook key is not a private (0600) file of this user", code="UNSAFE_DATA_FILE")
            data = os.read(fd, KEY_BYTES + 1)
        except OSError as exc:
            raise _error(exc, "reading the hook key", "STORAGE_READ_FAILED") from exc
        finally:
            os.close(fd)
        if len(data) != KEY_BYTES:
            raise StorageError("the hook key has the wrong size", code="UNSAFE_DATA_FILE")
        return data
    raise StorageError("the hook key has more than one hard link", code="UNSAFE_DATA_FILE")


def _remove_own_links(directory: Path, key: os.stat_result) -> bool:
    """Remove the extra links of the key that are our own temporary files (a creator killed between ``link`` and
    ``unlink``, or one between them right now: its ``unlink`` tolerates this); ``False`` when there are none."""
    removed = False
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    for name in names:
        if not TEMP_RE.match(name):
            continue
        with contextlib.suppress(OSError):
            st = os.lstat(directory / name)
            if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (key.st_dev, key.st_ino):
                os.unlink(directory / name)
                removed = True
    if removed:
        with contextlib.suppress(OSError):
            _fsync_dir(directory)
    return removed


def _remove_stray_temps(directory: Path) -> None:
    """Remove temporary files of creators killed before publishing (single-linked, older than a minute)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if TEMP_RE.match(name):
                with contextlib.suppress(OSError):
                    st = os.lstat(directory / name)
                    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and time.time() - st.st_mtime > _STRAY_TEMP_S:
                        os.unlink(directory / name)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | _CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish(tmp: Path, key: Path) -> None:
    """Make the complete ``tmp`` the key unless one exists (then ours is dropped: every process uses the first).

    Raises:
        OSError: unchanged.
    """
    try:
        renamed = rename_noreplace(tmp, key)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if renamed:
        return
    if renamed is None:  # no RENAME_NOREPLACE here: link, then unlink (a kill between them is recovered on load)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, key)
    with contextlib.suppress(FileNotFoundError):  # a loader may have removed it as a leftover already
        os.unlink(tmp)


def load_or_create_hook_key(data_root: Path) -> bytes:
    """The key, created (32 random bytes, 0600, folder 0700) if there is none yet.

    Call it under a ledger lock; publication is atomic across processes and projects regardless.

    Raises:
        StorageError: as :func:`load_hook_key`, or ``STORAGE_WRITE_FAILED``.
    """
    existing = load_hook_key(data_root)
    if existing is not None:
        return existing
    directory = data_root / KEY_DIR
    tmp = directory / _temp_name()
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        if not _check_key_dir(directory):
            raise StorageError("the key folder vanished", code="STORAGE_WRITE_FAILED")
        os.chmod(directory, 0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(os.urandom(KEY_BYTES))
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        _publish(tmp, key_path(data_root))
        _fsync_dir(directory)
        _remove_stray_temps(directory)
    except OSError as exc:
        raise _error(exc, "creating the hook key", "STORAGE_WRITE_FAILED") from exc
    key = load_hook_key(data_root)
    if key is None:
        raise StorageError("the hook key vanished after it was created", code="STORAGE_WRITE_FAILED")
    return key


__all__ = ["KEY_BYTES", "KEY_DIR", "KEY_NAME", "TEMP_RE", "key_path", "load_hook_key", "load_or_create_hook_key"]
