"""The observation spool ``spool/``: where a hook that cannot take the lock in time leaves its observation.

A hook has 2.5 s; under contention (40 hooks on a 14 MB ledger) most of them used to give up on the lock and drop
their observation (2 of 40 were recorded). Instead such a hook writes the event draft it would have appended — the
same content-free observation (keyed digests, a character count, never text) — to ``spool/obs-<uuid>.json``
(temp file, fsync, rename: a visible entry is always complete), and the next writer, under the lock, appends every
spooled draft through the one write path before its own change. Exactly once: a draft whose ``(task_id,
request_id)`` is already in the ledger is skipped, and entries are removed only after the append committed, so a
crash mid-drain or a second drain records nothing twice. The spool is bounded (``SPOOL_MAX_ENTRIES`` entries of at
most ``SPOOL_MAX_ENTRY_BYTES``); a hook finding it full drops its observation as before.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

from intentloop.errors import StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.events import OBSERVATION_EVENT_TYPES, EventDraft
from intentloop.model.ids import UUID_TEXT
from intentloop.store._fs import create_exclusive, fsync_dir, read_regular, storage_error, unlink_quietly
from intentloop.store._paths import ProjectPaths

SPOOL_MAX_ENTRIES = 512
SPOOL_MAX_ENTRY_BYTES = 8192
SPOOL_ENTRY_RE = LazyPattern(rf"^obs-{UUID_TEXT}\.json$")
SPOOL_TEMP_RE = LazyPattern(rf"^obs-{UUID_TEXT}\.tmp$")
_FIELDS = ("event_type", "task_id", "actor", "request_id", "payload", "occurred_at")
_encoder = msgspec.json.Encoder(order="sorted")


class _Spooled(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    event_type: str
    task_id: str
    actor: str
    request_id: str
    payload: dict[str, Any]
    occurred_at: str


_decoder = msgspec.json.Decoder(_Spooled)


def spool_draft(paths: ProjectPaths, draft: EventDraft) -> bool:
    """Leave ``draft`` (an observation) for the next writer; lock-free. ``False`` when the spool is full, the draft is
    not an observation or too large, or the project does not exist.

    Raises:
        StorageError: ``PATH_ESCAPE``/``INVALID_DATA_DIR`` (unsafe directories), ``STORAGE_WRITE_FAILED``.
    """
    if draft.event_type not in OBSERVATION_EVENT_TYPES or draft.occurred_at is None or not paths.check_project():
        return False
    data = _encoder.encode({name: getattr(draft, name) for name in _FIELDS}) + b"\n"
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


def read_spool(paths: ProjectPaths) -> list[tuple[Path, EventDraft | None]]:
    """Every complete spool entry, oldest observation first; ``None`` for an entry that is not a valid observation
    (it is removed by the drain like any other). Creates nothing.

    Raises:
        StorageError: ``PATH_ESCAPE``/``INVALID_DATA_DIR`` for an unsafe ``spool/``.
    """
    if not paths.check_subdir(paths.spool_dir):
        return []
    try:
        names = sorted(name for name in os.listdir(paths.spool_dir) if SPOOL_ENTRY_RE.match(name))
    except OSError:
        return []
    entries: list[tuple[str, Path, EventDraft | None]] = []
    for name in names:
        path = paths.spool_dir / name
        draft = _read_entry(path)
        entries.append((draft.occurred_at or "" if draft is not None else "", path, draft))
    entries.sort(key=lambda entry: (entry[0], entry[1].name))
    return [(path, draft) for _when, path, draft in entries]


def _read_entry(path: Path) -> EventDraft | None:
    try:
        read = read_regular(path)
    except StorageError:
        return None
    if read is None or len(read[0]) > SPOOL_MAX_ENTRY_BYTES:
        return None
    try:
        spooled = _decoder.decode(read[0])
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if spooled.event_type not in OBSERVATION_EVENT_TYPES:
        return None
    return EventDraft(
        event_type=spooled.event_type,
        task_id=spooled.task_id,
        actor=spooled.actor,
        request_id=spooled.request_id,
        payload=spooled.payload,
        occurred_at=spooled.occurred_at,
    )


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
    "read_spool",
    "remove_entries",
    "remove_stale_temps",
    "spool_draft",
]
