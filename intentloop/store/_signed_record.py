"""This installation's record of the projects it signed: ``R/keys/signed-projects/<project_id>``, one file a project.

Why a record at all: without one, a program without the key could delete ``head.sig`` (or the key) and the ledger would
read like one the original implementation wrote. Each file holds the public key that first signed the project, so a
chain can still be checked when the key itself is gone. The record can be deleted like any file of the same user
(docs/STORAGE.md, "Signed heads": what stays undetectable).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

from intentloop.errors import StorageError
from intentloop.model.ids import is_hex64
from intentloop.store._fs import create_exclusive, fsync_dir, read_regular
from intentloop.store._keyfile import KEY_DIR, check_real_dir

RECORD_DIR: Final = "signed-projects"
_LABEL: Final = "the signed-projects folder"


def record_dir(data_root: Path) -> Path:
    return data_root / KEY_DIR / RECORD_DIR


def recorded_key(data_root: Path, project_id: str) -> str | None:
    """The public key (hex) recorded as having signed ``project_id`` here, ``None`` when there is no record.

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``STORAGE_READ_FAILED`` (also for a garbled record:
            a writer stops rather than take it for "never signed").
    """
    directory = record_dir(data_root)
    if not check_real_dir(directory, _LABEL):
        return None
    opened = read_regular(directory / project_id)
    if opened is None:
        return None
    text = opened[0].decode("ascii", "replace").strip()
    if not is_hex64(text):
        raise StorageError("a record of signed projects is garbled", code="STORAGE_READ_FAILED")
    return text


def signed_projects(data_root: Path) -> list[str]:
    """The ids of every project this installation recorded as signed (sorted; empty when none).

    Raises:
        StorageError: ``PATH_ESCAPE`` (the folder is a symlink or not a directory), ``STORAGE_READ_FAILED``.
    """
    directory = record_dir(data_root)
    if not check_real_dir(directory, _LABEL):
        return []
    try:
        return sorted(name for name in os.listdir(directory) if is_hex64(name))
    except OSError as exc:
        raise StorageError("listing the signed projects failed", code="STORAGE_READ_FAILED") from exc


def record_signed(data_root: Path, project_id: str, public_hex: str, *, replace: bool = False) -> None:
    """Record that this installation signed ``project_id`` with ``public_hex``: once, a record kept is never changed,
    unless ``replace`` (a key rotation re-signed the project under a new key).

    Raises:
        OSError: unchanged (the caller signs after its commit and maps it).
    """
    directory = record_dir(data_root)
    if not check_real_dir(directory, _LABEL):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
        os.chmod(directory, 0o700)
    target = directory / project_id
    if replace:
        from intentloop.store._fs import replace_file

        replace_file(target, f".{project_id}.tmp", public_hex.encode("ascii") + b"\n", durable=True)
        return
    if os.path.lexists(target):
        return
    with contextlib.suppress(FileExistsError):
        create_exclusive(target, public_hex.encode("ascii") + b"\n")
        fsync_dir(directory)


__all__ = ["RECORD_DIR", "record_dir", "record_signed", "recorded_key", "signed_projects"]
