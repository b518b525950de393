"""Relink: move a project's memory to the id of its new root, after the project folder was moved or renamed.

A project's id is the hash of its folder's real path and every event carries it inside its hash, so a moved folder
finds an empty memory. Relink re-chains the old ledger's events for the new id — ``project_id``, ``prev_hash`` and
``event_hash`` are recomputed; ``event_id``, type, task, actor, request id, time and payload stay as they were — and
writes them as the new project's ledger through the store's lock and streamed rewrite (one pass over the old file,
each written chunk verified before anything is replaced; memory does not grow with the ledger). Only then is the old
ledger emptied, under its own lock, after a record of the move (``quarantine/relinked-<ms>-<uuid>.json``: both ids,
event count, both heads, time) is written beside it. Both ledgers stay verifiable v1 chains at every step; a run
interrupted between the two writes is finished by running it again.
"""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from collections.abc import Iterator
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

import msgspec

from intentloop.errors import ConflictError, InvalidInputError, StorageError
from intentloop.model import canonical_bytes, utc_now

if TYPE_CHECKING:
    from intentloop.model import Event
    from intentloop.store import ProjectStore

RELINK_PREFIX = "relinked-"


class RelinkResult(msgspec.Struct, frozen=True, kw_only=True):
    """What ``relink`` did.

    Attributes:
        from_project_id: the old id.
        to_project_id: the new id.
        events: events moved.
        tasks: distinct tasks among them.
        from_head_hash: the old chain's head before the move.
        to_head_hash: the new chain's head.
        record: the record of the move, in the old project's ``quarantine/``.
        resumed: the new ledger already held exactly these events (a run interrupted before the old one was emptied).
    """

    from_project_id: str
    to_project_id: str
    events: int
    tasks: int
    from_head_hash: str | None
    to_head_hash: str | None
    record: str | None
    resumed: bool

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__struct_fields__}


def _events(store: ProjectStore) -> Iterator[Event]:
    from intentloop.store import stream_events

    for chunk in stream_events(store.paths, torn_ok=False):
        yield from chunk


def _same_events(a: ProjectStore, b: ProjectStore) -> bool:
    """Whether two ledgers hold the same events (ids, types, tasks, payloads), read side by side a chunk at a time."""
    for x, y in zip_longest(_events(a), _events(b)):
        if x is None or y is None:
            return False
        if (x.event_id, x.event_type, x.task_id, x.payload) != (y.event_id, y.event_type, y.task_id, y.payload):
            return False
    return True


def relink_project(old: ProjectStore, new: ProjectStore, *, deadline: float | None = None) -> RelinkResult:
    """Move every event of ``old`` into ``new`` (which must have no events), then empty ``old``.

    Raises:
        IntentLoopError: ``INVALID_ARGUMENTS`` (same project), ``RELINK_TARGET_EXISTS`` (``new`` holds events),
            ``PRIVATE_SESSION_ACTIVE`` (a private session of the old project is live: its controls name the old id).
        CorruptLedgerError: either ledger is damaged (recover it first).
        StorageError: ``LOCK_TIMEOUT``, path-safety refusals, write failures.
    """
    if old.project_id == new.project_id:
        raise InvalidInputError("the old and the new root are the same project", code="INVALID_ARGUMENTS")
    with old.locked(deadline, lazy=True) as source:
        if old.read_controls():
            raise ConflictError(
                "a private session of the old project holds a control; end private mode first",
                code="PRIVATE_SESSION_ACTIVE",
            )
        before, count = source.head
        if not count:  # nothing to move (already moved, or never used): touch neither project
            return RelinkResult(
                from_project_id=old.project_id,
                to_project_id=new.project_id,
                events=0,
                tasks=0,
                from_head_hash=None,
                to_head_hash=None,
                record=None,
                resumed=False,
            )
        with new.locked(deadline, lazy=True) as target:
            resumed = False
            if target.head[1]:
                if not _same_events(new, old):
                    raise ConflictError(
                        f"the new root already has a memory ({target.head[1]} events)", code="RELINK_TARGET_EXISTS"
                    )
                resumed = True
            else:
                target.rewrite_each(None, source=source)
            after = target.head[0]
            if not _same_events(new, old):
                raise StorageError("the moved ledger does not hold the old events", code="STORAGE_WRITE_FAILED")
        tasks = len({event.task_id for event in _events(old)})
        name = _retire(source, old, new.project_id, count, before, after, how="moved")
    return RelinkResult(
        from_project_id=old.project_id,
        to_project_id=new.project_id,
        events=count,
        tasks=tasks,
        from_head_hash=before,
        to_head_hash=after,
        record=str(old.quarantine_dir / name),
        resumed=resumed,
    )


def _retire(
    source: Any, old: ProjectStore, to_project_id: str, events: int, before: str | None, after: str | None, *, how: str
) -> str:
    """Under the old project's lock: record the move in its ``quarantine/``, then empty its ledger."""
    name = f"{RELINK_PREFIX}{int(time.time() * 1000)}-{uuid.uuid4()}.json"
    body = {
        "relinked_at": utc_now(),
        "how": how,
        "from_project_id": old.project_id,
        "to_project_id": to_project_id,
        "events": events,
        "from_head_hash": before,
        "to_head_hash": after,
    }
    source.write_quarantine(name, canonical_bytes(body) + b"\n")
    source.rewrite([])
    return name


def retire_after_merge(
    old: ProjectStore, new: ProjectStore, *, expected_head: str | None, deadline: float | None = None
) -> str:
    """Empty the old ledger after its tasks were imported into ``new`` (``relink --merge``), if it is still exactly
    the ledger that was imported; returns the record's path.

    Raises:
        StorageError: ``TRANSIENT_FILE_RACE`` when the old ledger changed since it was exported (nothing is emptied).
    """
    from intentloop.errors import StorageError

    with old.locked(deadline, lazy=True) as source:
        if source.head[0] != expected_head:
            raise StorageError(
                "the old project changed while it was merged; run relink --merge again", code="TRANSIENT_FILE_RACE"
            )
        after = None
        for event in _events(new):
            after = event.event_hash
        name = _retire(source, old, new.project_id, source.head[1], expected_head, after, how="merged")
    return str(old.quarantine_dir / name)


_MAX_RECORD_BYTES = 64 * 1024


def moved_to(store: ProjectStore) -> str | None:
    """The project a relink moved this one's memory to (its newest ``relinked-*.json`` record), or ``None``.

    Read only for a project whose ledger holds nothing any more (a relinked project used again is a project again):
    listings leave such a project out instead of showing an empty one forever. Never raises; a record that is a
    symlink, not a regular file, too large or garbled counts as no record.
    """
    directory = store.quarantine_dir
    try:
        if not stat.S_ISDIR(os.lstat(directory).st_mode):
            return None
        names = sorted(n for n in os.listdir(directory) if n.startswith(RELINK_PREFIX) and n.endswith(".json"))
        if not names:
            return None
        fd = os.open(directory / names[-1], os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            data = os.read(fd, _MAX_RECORD_BYTES + 1)
        finally:
            os.close(fd)
        record = json.loads(data) if len(data) <= _MAX_RECORD_BYTES else None
    except (OSError, ValueError):
        return None
    target = record.get("to_project_id") if isinstance(record, dict) else None
    return target if isinstance(target, str) and len(target) == 64 and target.isalnum() else None


__all__ = ["RELINK_PREFIX", "RelinkResult", "moved_to", "relink_project", "retire_after_merge"]
