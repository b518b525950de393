"""Careful file primitives for recovery: read files it wrote (quarantine summaries, an export read back) without
following links, write an export durably, and keep exports out of the data root.

The ledger itself is read through the store (``ProjectStore.read_raw``, ``ProjectStore.scan``); these are for files the
store does not own (an export lives anywhere the admin chooses). Both follow the store's rules: no symlinks, no
hard-linked data files, 0600 files created exclusively, fsync of the file and of its directory.
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

from intentloop.errors import InvalidInputError, StorageError
from intentloop.store import fsync_dir, write_all

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def read_data_file(path: Path) -> bytes | None:
    """Read a regular, single-link file under the data root without following a symlink.

    Returns:
        The bytes, or ``None`` when the file does not exist.

    Raises:
        StorageError: ``PATH_ESCAPE`` (a symlink), ``UNSAFE_DATA_FILE`` (not regular, several links),
            ``TRANSIENT_FILE_RACE`` (replaced while opening), ``STORAGE_READ_FAILED`` (any other I/O failure).
    """
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot inspect {path.name}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
    _require_safe(path, before)
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot open {path.name}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
    try:
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise StorageError(f"{path.name} was replaced while being opened", code="TRANSIENT_FILE_RACE")
        _require_safe(path, after)
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise StorageError(f"cannot read {path.name}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
    finally:
        os.close(fd)


def _require_safe(path: Path, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise StorageError(f"{path.name} is a symbolic link", code="PATH_ESCAPE")
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        raise StorageError(f"{path.name} is not a regular single-link file", code="UNSAFE_DATA_FILE")


def refuse_inside_data_root(path: Path, data_root: Path) -> None:
    """Refuse to write ``path`` when its folder is the data root or lies inside it: deletion reads back only what
    intentloop itself keeps there, so a copy of the memory written beside it would keep a forgotten statement.

    The folder is resolved as the file would be created (relative to the working directory, through every symlink)
    and each of its ancestors is compared with the data root by device and inode, so no other spelling of the same
    folder (a link, ``..``, a bind mount, another case) gets past. A data root that does not exist holds nothing.

    Raises:
        InvalidInputError: ``OUTPUT_INSIDE_DATA_ROOT``.
    """
    try:
        root = os.stat(data_root)
    except OSError:
        return
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    while True:
        try:
            if os.path.samestat(os.stat(folder), root):
                raise InvalidInputError(
                    f"{path} is inside the data root {data_root}: a copy there would outlive a later `forget`; "
                    "write it outside the data root",
                    code="OUTPUT_INSIDE_DATA_ROOT",
                )
        except OSError:
            pass  # a folder that cannot be inspected is not the data root's (its own write then fails if need be)
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def write_private_file(path: Path, data: bytes | Callable[[int], None], *, overwrite: bool = False) -> None:
    """Write ``data`` durably to a new 0600 file at ``path`` (``data`` may be a function that writes to the open
    descriptor it is given: an export streams the ledger's verified lines as they verify).

    Without ``overwrite`` the file is created exclusively (an existing file or symlink is never touched). With it,
    the bytes go to a sibling temporary file that atomically replaces ``path`` (a symlink there is replaced, never
    followed). Either way the file and its directory are fsynced before this returns; a failure (of the writing
    function too) leaves no file behind.

    Raises:
        StorageError: ``OUTPUT_EXISTS`` (exists and not ``overwrite``), ``STORAGE_WRITE_FAILED`` (I/O failure), or
            what the writing function raises.
        InvalidInputError: ``INVALID_ARGUMENTS`` when the file's folder does not exist.
    """
    target = path if not overwrite else path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
    try:
        fd = os.open(target, flags, 0o600)
    except FileExistsError as exc:
        raise StorageError(f"{path} already exists", code="OUTPUT_EXISTS") from exc
    except (FileNotFoundError, NotADirectoryError) as exc:  # a mistyped folder is not a full disk
        raise InvalidInputError(f"the folder of --out does not exist: {path.parent}") from exc
    except OSError as exc:
        raise StorageError(f"cannot create {path}: {exc.strerror}", code="STORAGE_WRITE_FAILED") from exc
    try:
        try:
            os.fchmod(fd, 0o600)  # a umask can only remove bits, but be explicit about the result
            if callable(data):
                data(fd)
            else:
                write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if overwrite:
            os.replace(target, path)
        fsync_dir(path.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise StorageError(f"cannot write {path}: {exc.strerror}", code="STORAGE_WRITE_FAILED") from exc
    except StorageError:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise


__all__ = ["read_data_file", "refuse_inside_data_root", "write_private_file"]
