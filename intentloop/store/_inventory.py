"""The persistent files of a project: everything intentloop keeps under its directory, as the store knows it.

Deletion proves a deleted item gone by reading every one of these files; it asks the store for them rather than
walking the directory by rules of its own, so a file the store adds is searched without deletion being told.
Skipped: the lock directory and renamed lock remnants (owner records only) and ``head.sig`` (hashes, a count, the key
id and a signature, rewritten after every commit).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from intentloop.errors import StorageError
from intentloop.store._checkpoint import CHECKPOINT_NAME
from intentloop.store._index import INDEX_DIR_RE
from intentloop.store._paths import ProjectPaths
from intentloop.store._signing import HEAD_SIG_NAME


class ProjectEntry(NamedTuple):
    """One entry under a project directory.

    Attributes:
        name: its path relative to the project directory, with ``/`` separators.
        path: its path.
        derived: a cache the store rebuilds from the ledger (the checkpoint, the task index).
        directory: a directory (its files follow it).
    """

    name: str
    path: Path
    derived: bool
    directory: bool


def is_derived(name: str) -> bool:
    """Whether a top-level entry is one of the store's derived caches: the checkpoint or a task index directory."""
    return name == CHECKPOINT_NAME or bool(INDEX_DIR_RE.match(name))


def rewritten_by_deletion(paths: ProjectPaths) -> frozenset[str]:
    """The top-level entries a deletion replaces under the lock (the ledger, the private controls, the quarantine
    and, with the ledger, the derived caches): searched after the deletion, not before it."""
    return frozenset({paths.ledger_path.name, paths.private_dir.name, paths.quarantine_dir.name, CHECKPOINT_NAME})


def project_entries(paths: ProjectPaths, *, skip: frozenset[str] = frozenset()) -> Iterator[ProjectEntry]:
    """Every persistent entry under the project directory, directories before their files, in a stable order.

    Args:
        skip: top-level entries to leave out; when it is not empty, the derived caches are left out too (they are
            rebuilt with what is skipped).

    Raises:
        StorageError: ``PATH_ESCAPE`` for a symlink, ``UNSAFE_DATA_FILE`` for a file that is not regular or has more
            than one link, ``STORAGE_READ_FAILED`` when a directory cannot be listed.
    """
    project_dir = paths.project_dir
    if not project_dir.exists():
        return
    lock = paths.lock_path.name
    stack = [(project_dir, False)]
    while stack:
        current, derived = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            raise StorageError(f"cannot list {current.name}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
        top = current == project_dir
        for entry in entries:
            if entry.name == lock or entry.name.startswith(lock + ".") or entry.name == HEAD_SIG_NAME:
                continue
            if top and (entry.name in skip or (skip and is_derived(entry.name))):
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StorageError(f"cannot stat {entry.name}", code="STORAGE_READ_FAILED") from exc
            if stat.S_ISLNK(info.st_mode):
                raise StorageError(f"{entry.name} must not be a symbolic link", code="PATH_ESCAPE")
            is_cache = derived or (top and is_derived(entry.name))
            name = Path(entry.path).relative_to(project_dir).as_posix()
            if stat.S_ISDIR(info.st_mode):
                yield ProjectEntry(name, Path(entry.path), is_cache, True)
                stack.append((Path(entry.path), is_cache))
                continue
            if not stat.S_ISREG(info.st_mode):
                raise StorageError(f"{entry.name} is not a regular file", code="UNSAFE_DATA_FILE")
            if info.st_nlink != 1:
                raise StorageError(f"{entry.name} has more than one link", code="UNSAFE_DATA_FILE")
            yield ProjectEntry(name, Path(entry.path), is_cache, False)


__all__ = ["ProjectEntry", "is_derived", "project_entries", "rewritten_by_deletion"]
