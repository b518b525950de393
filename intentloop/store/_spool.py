"""The observation spool ``spool/``: where a hook that cannot take the lock in time leaves its observation.

A hook has 2.5 s; under contention (40 hooks on a 14 MB ledger) most of them used to give up on the lock and drop
their observation (2 of 40 were recorded). Instead such a hook writes the event draft it would have appended — the
same content-free observation (keyed digests, a character count, never text) — to ``spool/obs-<uuid>.json``
(temp file, fsync, rename: a visible entry is always complete), and the next writer, under the lock, appends every
spooled draft through the one write path before its own change. Exactly once: a draft whose ``(task_id,
request_id)`` is already in the ledger is skipped, and entries are removed only after the append committed, so a
crash mid-drain or a second drain records nothing twice. The spool is bounded (``SPOOL_MAX_ENTRIES`` entries of at
most ``SPOOL_MAX_ENTRY_BYTES``); a hook finding it full drops its observation as before.

An entry may name the host session (its salted hash) instead of a task: a hook that could not find out in time which
task the session is bound to (a killed child, a large ledger another hook's child is already reading). The drain then
records it into the session's task under the same rules as the hook (:func:`observed_task`), or drops it.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from intentloop.errors import StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.events import OBSERVATION_EVENT_TYPES, EventDraft
from intentloop.model.ids import UUID_TEXT, is_hex64
from intentloop.store._controls import PrivateControl
from intentloop.store._fs import create_exclusive, fsync_dir, read_regular, storage_error, unlink_quietly
from intentloop.store._paths import ProjectPaths

if TYPE_CHECKING:
    from intentloop.model.projection import TaskState

SPOOL_MAX_ENTRIES = 512
SPOOL_MAX_ENTRY_BYTES = 8192
SPOOL_ENTRY_RE = LazyPattern(rf"^obs-{UUID_TEXT}\.json$")
SPOOL_TEMP_RE = LazyPattern(rf"^obs-{UUID_TEXT}\.tmp$")
_FIELDS = ("event_type", "actor", "request_id", "payload", "occurred_at")
_encoder = msgspec.json.Encoder(order="sorted")


class _Spooled(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    event_type: str
    actor: str
    request_id: str
    payload: dict[str, Any]
    occurred_at: str
    task_id: str | None = None
    session_hash: str | None = None


_decoder = msgspec.json.Decoder(_Spooled)


class SpoolEntry(NamedTuple):
    """One complete spool file: its path, its observation (``None``: not a valid one, removed by the drain like any
    other) and, for an entry that names the session instead of the task, the session's hash (the draft's
    ``task_id`` is then empty)."""

    path: Path
    draft: EventDraft | None
    session_hash: str | None = None


def observed_task(
    task: TaskState | None, controls: list[PrivateControl], control: PrivateControl | None
) -> TaskState | None:
    """The task a hook observation of a session may be recorded into (docs/HOOKS.md, "Observations"): the session's
    bound task (``task``), unless the session has a private control (``control``), the task has one (among
    ``controls``) or its mode is not ``on``."""
    if control is not None or task is None or any(c.task_id == task.task_id for c in controls):
        return None
    return task if task.mode == "on" else None


def spool_draft(paths: ProjectPaths, draft: EventDraft, *, session_hash: str | None = None) -> bool:
    """Leave ``draft`` (an observation) for the next writer; lock-free. ``False`` when the spool is full, the draft is
    not an observation or too large, or the project does not exist. With ``session_hash`` the draft's ``task_id`` is
    not stored: the drain records it into the task bound to that session, if it may (:func:`observed_task`).

    Raises:
        StorageError: ``PATH_ESCAPE``/``INVALID_DATA_DIR`` (unsafe directories), ``STORAGE_WRITE_FAILED``.
    """
    if draft.event_type not in OBSERVATION_EVENT_TYPES or draft.occurred_at is None or not paths.check_project():
        return False
    fields: dict[str, Any] = {name: getattr(draft, name) for name in _FIELDS}
    if session_hash is not None:
        if not is_hex64(session_hash):
            return False
        fields["session_hash"] = session_hash
    else:
        fields["task_id"] = draft.task_id
    data = _encoder.encode(fields) + b"\n"
    if len(data) > SPOOL_MAX_ENTRY_BYTES:
        return False
    directory = paths.spool_dir
    paths.ensure_subdir(directory)
    try:
        if sum(1 for name in os.listdir(directory) if SPOOL_ENTRY_RE.match(name)) >= SPOOL_MAX_ENTRIES:
            return False
        stem = f"obs-{uuid.uuid4()}"
        temp = directory / f"{stem}.tmp"
        try:
            create_exclusive(temp, data)
            os.rename(temp, directory / f"{stem}.json")
        except OSError:
            unlink_quietly(temp)
            raise
        fsync_dir(directory)
    except OSError as exc:
        raise storage_error(exc, "spooling an observation", code="STORAGE_WRITE_FAILED") from exc
    return True


def read_spool(paths: ProjectPaths) -> list[SpoolEntry]:
    """Every complete spool entry, oldest observation first. Creates nothing.

    Raises:
        StorageError: ``PATH_ESCAPE``/``INVALID_DATA_DIR`` for an unsafe ``spool/``.
    """
    if not paths.check_subdir(paths.spool_dir):
        return []
    try:
        names = sorted(name for name in os.listdir(paths.spool_dir) if SPOOL_ENTRY_RE.match(name))
    except OSError:
        return []
    entries = [_read_entry(paths.spool_dir / name) for name in names]
    entries.sort(key=lambda entry: ((entry.draft.occurred_at or "") if entry.draft else "", entry.path.name))
    return entries


def _read_entry(path: Path) -> SpoolEntry:
    try:
        read = read_regular(path)
    except StorageError:
        return SpoolEntry(path, None)
    if read is None or len(read[0]) > SPOOL_MAX_ENTRY_BYTES:
        return SpoolEntry(path, None)
    try:
        spooled = _decoder.decode(read[0])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return SpoolEntry(path, None)
    by_session = spooled.session_hash is not None and is_hex64(spooled.session_hash)
    if spooled.event_type not in OBSERVATION_EVENT_TYPES or by_session == (spooled.task_id is not None):
        return SpoolEntry(path, None)
    draft = EventDraft(
        event_type=spooled.event_type,
        task_id=spooled.task_id or "",
        actor=spooled.actor,
        request_id=spooled.request_id,
        payload=spooled.payload,
        occurred_at=spooled.occurred_at,
    )
    return SpoolEntry(path, draft, spooled.session_hash if by_session else None)


def remove_entries(paths: ProjectPaths, entries: list[Path]) -> None:
    """Remove drained entries (after their events committed); failures are left for the next drain, which skips
    what is already recorded."""
    for path in entries:
        unlink_quietly(path)
    with contextlib.suppress(OSError):
        fsync_dir(paths.spool_dir)


def remove_stale_temps(paths: ProjectPaths, stale_s: float) -> list[str]:
    """Remove ``spool/obs-<uuid>.tmp`` files older than ``stale_s`` (a hook killed mid-spool; a live one renames its
    temp file within milliseconds). Call under the lock."""
    removed: list[str] = []
    try:
        names = os.listdir(paths.spool_dir)
    except OSError:
        return removed
    for name in names:
        if SPOOL_TEMP_RE.match(name):
            path = paths.spool_dir / name
            with contextlib.suppress(OSError):
                if time.time() - os.lstat(path).st_mtime >= stale_s:
                    os.unlink(path)
                    removed.append(f"{paths.spool_dir.name}/{name}")
    return removed


__all__ = [
    "SPOOL_ENTRY_RE",
    "SPOOL_MAX_ENTRIES",
    "SPOOL_MAX_ENTRY_BYTES",
    "SPOOL_TEMP_RE",
    "SpoolEntry",
    "observed_task",
    "read_spool",
    "remove_entries",
    "remove_stale_temps",
    "spool_draft",
]
