"""Per-installation key files under ``R/keys/``: created once, crash-safely, and shared by every process.

Both keys of an installation (the hook's digest key, ``intentloop/service/_hookkey.py``, and the Ed25519 signing seed,
``intentloop/store/_signing.py``) are made here. Why rename-no-replace: the key is written completely to a private
temporary file, fsynced, and published with ``renameat2(RENAME_NOREPLACE)``, which fails if another process published
first, so every process ends up using the same key, no reader ever sees a partial one, and no crash point leaves
anything but the key or a stray temporary file (never a second link). Where that call is unavailable the key is
published with ``link()`` then ``unlink()`` of the temporary file; a kill between the two leaves a second link whose
other name is our own strictly named temporary file (same inode, in ``keys/``): a load recognises exactly that
leftover, removes it and uses the key. Any other second link is refused. Stray temporary files older than a minute are
removed on creation. (The signing key once used ``link()`` + ``unlink()`` only, without that recovery: a kill between
them stopped signing for good; ``tests/crash/test_hook_key_crash_points.py`` kills both creators at every step.)
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
from intentloop.model._lazyre import LazyPattern
from intentloop.store._fs import create_exclusive, fsync_dir, rename_noreplace

KEY_DIR: Final = "keys"


class KeyFile:
    """One key file: its name under ``R/keys/``, its exact size, and how messages name it.

    Attributes:
        name: the file name, e.g. ``hook-digest.key``.
        size: the exact number of bytes it holds.
        label: what messages call it, e.g. ``"the hook key"``.
        temp_re: the only temporary names a load or a creation of it ever removes.
    """

    __slots__ = ("label", "name", "size", "temp_re")

    def __init__(self, name: str, size: int, label: str) -> None:
        self.name = name
        self.size = size
        self.label = label
        self.temp_re = LazyPattern(rf"^\.{re.escape(name)}\.[0-9a-f]{{32}}\.tmp$")

    def path(self, data_root: Path) -> Path:
        return data_root / KEY_DIR / self.name

    def temp_name(self) -> str:
        return f".{self.name}.{uuid.uuid4().hex}.tmp"


#: The installation's key sealing the store's caches to what they describe (the task index to its checkpoint, a
#: remembered evidence digest to its file's stat): a program without it cannot make a cache vouch for an edit.
CACHE_KEY = KeyFile("cache-seal.key", 32, "the cache seal key")

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
_STRAY_TEMP_S: Final = 60.0  # a creator writes and publishes its temporary file within milliseconds


def _error(key: KeyFile, exc: OSError, action: str, code: ErrorCode) -> StorageError:
    if exc.errno == errno.ELOOP:
        return StorageError(f"{action}: {key.label} is a symbolic link", code="PATH_ESCAPE")
    return StorageError(f"{action} failed ({errno.errorcode.get(exc.errno or 0, 'OSError')})", code=code)


def check_real_dir(directory: Path, label: str = "the key folder") -> bool:
    """Whether a folder of ``R/keys`` (``label`` in messages) exists as a real directory; a symlink or a file there is
    refused.

    Raises:
        StorageError: ``PATH_ESCAPE``, ``STORAGE_READ_FAILED``.
    """
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StorageError(f"checking {label} failed", code="STORAGE_READ_FAILED") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise StorageError(f"{label} is not a directory", code="PATH_ESCAPE")
    return True


def load_key(data_root: Path, key: KeyFile) -> bytes | None:
    """The bytes of ``key``, or ``None`` when none was created yet; lock-free, creates nothing.

    The file must be a regular 0600 file of this user holding exactly ``key.size`` bytes, with one link. A second link
    that is our own temporary file (same inode, strict name, in ``keys/``) is a creator killed between ``link`` and
    ``unlink`` (or one between them right now): it is removed and the key used. Any other second link is refused.

    Raises:
        StorageError: ``PATH_ESCAPE`` (symlink), ``UNSAFE_DATA_FILE`` (wrong type, owner, mode, size or links),
            ``STORAGE_READ_FAILED``.
    """
    if not check_real_dir(data_root / KEY_DIR):
        return None
    path = key.path(data_root)
    for _attempt in range(25):
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _error(key, exc, f"opening {key.label}", "STORAGE_READ_FAILED") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise StorageError(f"{key.label} is not a regular file", code="UNSAFE_DATA_FILE")
            if st.st_nlink > 1:
                if not _remove_own_links(data_root / KEY_DIR, key, st):
                    time.sleep(0.002)
                continue
            if os.name == "posix" and (st.st_uid != os.getuid() or st.st_mode & 0o077):
                raise StorageError(f"{key.label} is not a private (0600) file of this user", code="UNSAFE_DATA_FILE")
            data = os.read(fd, key.size + 1)
        except OSError as exc:
            raise _error(key, exc, f"reading {key.label}", "STORAGE_READ_FAILED") from exc
        finally:
            with contextlib.suppress(OSError):  # a failed close of a read descriptor changes nothing
                os.close(fd)
        if len(data) != key.size:
            raise StorageError(f"{key.label} has the wrong size", code="UNSAFE_DATA_FILE")
        return data
    raise StorageError(f"{key.label} has more than one hard link", code="UNSAFE_DATA_FILE")


def _remove_own_links(directory: Path, key: KeyFile, found: os.stat_result) -> bool:
    """Remove the extra links of the key that are our own temporary files (a creator killed between ``link`` and
    ``unlink``, or one between them right now: its ``unlink`` tolerates this); ``False`` when there are none."""
    removed = False
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    for name in names:
        if not key.temp_re.match(name):
            continue
        with contextlib.suppress(OSError):
            st = os.lstat(directory / name)
            if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == (found.st_dev, found.st_ino):
                os.unlink(directory / name)
                removed = True
    if removed:
        with contextlib.suppress(OSError):
            fsync_dir(directory)
    return removed


def _remove_stray_temps(directory: Path, key: KeyFile) -> None:
    """Remove temporary files of creators killed before publishing (single-linked, older than a minute)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if key.temp_re.match(name):
                with contextlib.suppress(OSError):
                    st = os.lstat(directory / name)
                    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and time.time() - st.st_mtime > _STRAY_TEMP_S:
                        os.unlink(directory / name)


def _publish(tmp: Path, target: Path) -> None:
    """Make the complete ``tmp`` the key unless one exists (then ours is dropped: every process uses the first).

    Raises:
        OSError: unchanged.
    """
    try:
        renamed = rename_noreplace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if renamed:
        return
    if renamed is None:  # no RENAME_NOREPLACE here: link, then unlink (a kill between them is recovered on load)
        with contextlib.suppress(FileExistsError):
            os.link(tmp, target)
    with contextlib.suppress(FileNotFoundError):  # a loader may have removed it as a leftover already
        os.unlink(tmp)


def load_or_create_key(data_root: Path, key: KeyFile) -> bytes:
    """The bytes of ``key``, created (``key.size`` random bytes, 0600, folder 0700) if there is none yet.

    Call it under a ledger lock; publication is atomic across processes and projects regardless.

    Raises:
        StorageError: as :func:`load_key`, or ``STORAGE_WRITE_FAILED``.
    """
    existing = load_key(data_root, key)
    if existing is not None:
        return existing
    from intentloop.store._paths import ensure_data_root

    directory = data_root / KEY_DIR
    tmp = directory / key.temp_name()
    ensure_data_root(data_root)  # `share keys` may be an installation's first step
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        if not check_real_dir(directory):
            raise StorageError("the key folder vanished", code="STORAGE_WRITE_FAILED")
        os.chmod(directory, 0o700)
        create_exclusive(tmp, os.urandom(key.size))
        _publish(tmp, key.path(data_root))
        fsync_dir(directory)
        _remove_stray_temps(directory, key)
    except OSError as exc:
        raise _error(key, exc, f"creating {key.label}", "STORAGE_WRITE_FAILED") from exc
    data = load_key(data_root, key)
    if data is None:
        raise StorageError(f"{key.label} vanished after it was created", code="STORAGE_WRITE_FAILED")
    return data


__all__ = ["CACHE_KEY", "KEY_DIR", "KeyFile", "check_real_dir", "load_key", "load_or_create_key"]
