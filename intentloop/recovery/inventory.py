"""An inventory of a data root for ``intentloop status``: every project, its verification and a few counts.

Read-only and lock-free: listing a missing data root or an empty one creates nothing. Counts come from the verified
prefix only, so a damaged ledger still shows what can be trusted; no claim content is ever returned.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from intentloop.errors import StorageError
from intentloop.recovery.report import STATUS_BY_CODE, count_json_records, count_quarantine_records

if TYPE_CHECKING:
    from intentloop.store import ProjectStore


class ProjectSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One project as ``status`` shows it.

    Attributes:
        project_id: the project's id.
        project_exists: the project directory exists.
        status: the verification status (``intact``, ``torn_tail``, ``corrupt``, ...), or ``unreadable``.
        intact: the ledger verified completely.
        events: verified events.
        tasks: tasks started in the verified prefix.
        candidates: hook and long-term candidates recorded in the verified prefix.
        private_controls: private-mode control markers in ``private-sessions/``.
        lock_held: a ``ledger.lock/`` directory exists (a writer holds it or died holding it).
        quarantine_records: summaries in ``quarantine/``.
        first_bad_line: first line that does not verify.
        reason: why.
        code: the stable code of the problem (also for an unreadable project).
        signature: ``head.sig`` against the ledger (as ``intentloop verify`` reports it; ``None`` when the ledger
            does not verify or could not be read).
        adopted_events: events appended without the key and signed later as adopted.
        adopted_at: when the last of those adoptions happened (``None``: none).
    """

    project_id: str
    project_exists: bool
    status: str
    intact: bool
    events: int
    tasks: int
    candidates: int
    private_controls: int
    lock_held: bool
    quarantine_records: int
    first_bad_line: int | None
    reason: str | None
    code: str | None
    signature: str | None = None
    adopted_events: int = 0
    adopted_at: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


def list_project_ids(data_root: Path) -> list[str]:
    """The ids of the projects under ``data_root/projects`` (sorted); empty when it does not exist.

    Entries that are not a 64-hex-named real directory are ignored (a symlink is never followed).

    Raises:
        StorageError: ``PATH_ESCAPE`` (``projects`` is a symlink), ``INVALID_DATA_DIR`` (not a directory) or
            ``STORAGE_READ_FAILED``.
    """
    from intentloop.model import is_hex64

    projects = data_root / "projects"
    try:
        st = os.lstat(projects)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise StorageError(f"cannot inspect {projects}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
    if stat.S_ISLNK(st.st_mode):
        raise StorageError(f"{projects} is a symbolic link", code="PATH_ESCAPE")
    if not stat.S_ISDIR(st.st_mode):
        raise StorageError(f"{projects} is not a directory", code="INVALID_DATA_DIR")
    try:
        entries = list(os.scandir(projects))
    except OSError as exc:
        raise StorageError(f"cannot list {projects}: {exc.strerror}", code="STORAGE_READ_FAILED") from exc
    return sorted(e.name for e in entries if is_hex64(e.name) and e.is_dir(follow_symlinks=False))


def summarize_project(store: ProjectStore) -> ProjectSummary:
    """Count what one project's ledger (its verified prefix) holds, from the store's task listing: the task index
    when the checkpoint vouches for the file, else a full verification. Never raises for a damaged or unsafe
    project: the problem becomes the summary's ``status`` and ``code``."""
    lock_held = os.path.lexists(store.lock_path)
    try:
        listing = store.tasks()
        controls = count_json_records(store.private_dir)
        quarantine = count_quarantine_records(store)
        exists = store.exists()
    except StorageError as exc:
        return ProjectSummary(
            project_id=store.project_id,
            project_exists=os.path.lexists(store.project_dir),
            status="unreadable",
            intact=False,
            events=0,
            tasks=0,
            candidates=0,
            private_controls=0,
            lock_held=lock_held,
            quarantine_records=0,
            first_bad_line=None,
            reason=exc.message,
            code=exc.code,
        )
    error = listing.damage
    from intentloop.store import read_check

    try:
        check = read_check(store)
    except StorageError:
        check = None
    return ProjectSummary(
        project_id=store.project_id,
        project_exists=exists,
        status="intact" if error is None else STATUS_BY_CODE.get(error.code, "corrupt"),
        intact=error is None,
        events=listing.events,
        tasks=len(listing.started()),
        candidates=listing.candidate_count,
        private_controls=controls,
        lock_held=lock_held,
        quarantine_records=quarantine,
        first_bad_line=error.line if error is not None else None,
        reason=error.reason if error is not None else None,
        code=error.code if error is not None else None,
        signature=None if check is None else check.status,
        adopted_events=0 if check is None else check.adopted_events,
        adopted_at=check.adopted[-1].at if check is not None and check.adopted else None,
    )


def summarize_all(data_root: Path, project_ids: Iterable[str]) -> Iterator[ProjectSummary]:
    """:func:`summarize_project` for each id, lazily (so a caller can show progress)."""
    from intentloop.store import ProjectStore

    for project_id in project_ids:
        yield summarize_project(ProjectStore(data_root, project_id))


__all__ = [
    "ProjectSummary",
    "list_project_ids",
    "summarize_all",
    "summarize_project",
]
