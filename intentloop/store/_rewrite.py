"""A whole-ledger rewrite in one streaming pass (deletion, relink): verified chunks in, edited and re-chained lines out.

Why a pass and not a list: the rewrite used to hold every decoded event and the new file's bytes at once (808–850 MB
and 14–40 s for a ``forget claim`` at 100,000 events; docs/BENCHMARK.md). Here one chunk of whole lines is held at a
time, and an event the edit leaves alone is re-chained on its bytes (its ``prev_hash``, ``project_id`` and
``event_hash`` segments swapped) instead of being decoded into a dict and encoded again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model.events import Event, event_line, rechain
from intentloop.store._fs import open_regular, remove_tree_quietly, storage_error, write_all
from intentloop.store._index import count_bindings, extend_index, new_index, open_indexed
from intentloop.store._lines import CHUNK_BYTES
from intentloop.store._paths import ProjectPaths
from intentloop.store._verify import MAX_LINE_BYTES, trailing_error, verify_continuation

#: What a rewrite does to each verified event: the same object to keep it (re-chained), another to replace it (its
#: chain fields are recomputed), ``None`` to drop it.
Edit = Callable[[Event], Event | None]

_ACTOR_PREFIX = len(b'{"actor":"') + 1  # + len(actor): where ',"event_hash":"' starts in a canonical line
_HASH_SEGMENT = len(b',"event_hash":"') + 64 + 1
_PREV_KEY = b',"prev_hash":'
_PROJECT_KEY = b',"project_id":"'


def verified_chunks(
    fd: int, size: int, *, project_id: str, path: Path, torn_ok: bool = False
) -> Iterator[tuple[bytes, list[Event]]]:
    """The first ``size`` bytes of the opened ledger as verified chunks of whole lines and their events, the chain
    carried from chunk to chunk (each line gets exactly the checks of a whole-file verification).

    Args:
        torn_ok: a last line without its newline is left out (a lock-free reader: the next writer repairs it).

    Raises:
        CorruptLedgerError: the first line that does not verify (or a torn last line unless ``torn_ok``).
        StorageError: ``TRANSIENT_FILE_RACE`` (the file is shorter than ``size``), ``STORAGE_READ_FAILED``.
    """
    position = 0
    pending = b""
    prev: str | None = None
    lines = 0
    while position < size:
        try:
            data = os.pread(fd, min(CHUNK_BYTES, size - position), position)
        except OSError as exc:
            raise storage_error(exc, f"reading {path.name}", code="STORAGE_READ_FAILED") from exc
        if not data:
            raise StorageError(f"{path.name} changed while it was read", code="TRANSIENT_FILE_RACE")
        position += len(data)
        buffer = pending + data if pending else data
        end = buffer.rfind(b"\n") + 1
        if end == 0:
            if len(buffer) > MAX_LINE_BYTES:
                raise CorruptLedgerError(
                    f"ledger line {lines + 1}: line longer than {MAX_LINE_BYTES} bytes", line=lines + 1
                )
            pending = buffer
            continue
        body, pending = buffer[:end], buffer[end:]
        checked = verify_continuation(body, project_id=project_id, prev_hash=prev, first_line=lines + 1)
        if checked.error is not None:
            raise checked.error
        prev = checked.head_hash
        lines += checked.line_count
        yield body, list(checked.events)
    if pending and not torn_ok:
        raise trailing_error(lines + 1)


def stream_events(paths: ProjectPaths, *, torn_ok: bool = True) -> Iterator[list[Event]]:
    """The verified events of a project's ledger, a chunk at a time (lock-free; nothing when there is no ledger).

    Raises:
        CorruptLedgerError: as :func:`verified_chunks` (a torn last line is left out unless ``torn_ok`` is false).
        StorageError: path-safety refusals, ``TRANSIENT_FILE_RACE``, ``STORAGE_READ_FAILED``.
    """
    if not paths.check_project():
        return
    opened = open_regular(paths.ledger_path)
    if opened is None:
        return
    fd, st = opened
    try:
        for _body, events in verified_chunks(
            fd, st.st_size, project_id=paths.project_id, path=paths.ledger_path, torn_ok=torn_ok
        ):
            yield events
    finally:
        os.close(fd)


def task_events(paths: ProjectPaths, task_id: str) -> list[Event]:
    """The verified events of one task, in ledger order: through the task index when the checkpoint vouches for the
    file, else in one streaming pass (lock-free; memory is the task's, never the ledger's).

    Raises:
        CorruptLedgerError, StorageError: as :func:`stream_events`.
    """
    indexed = open_indexed(paths)
    if indexed is not None:
        try:
            events = indexed.task_events(task_id)
        finally:
            indexed.close()
        if events is not None:
            return events
    return [event for chunk in stream_events(paths) for event in chunk if event.task_id == task_id]


def tasks_holding(paths: ProjectPaths, needles: Sequence[bytes], *, lowered: bool = False) -> set[str]:
    """The tasks of the ledger lines that hold one of ``needles`` (in the line lowered to ASCII lower case when
    ``lowered``), read a chunk of whole lines at a time without decoding: a cheap superset of the tasks a question
    can concern (a claim id's prefix, a deleted statement), which are then folded one at a time. Lock-free.

    Raises:
        StorageError: path-safety refusals, ``STORAGE_READ_FAILED``.
    """
    tasks: set[str] = set()
    if not needles or not paths.check_project():
        return tasks
    opened = open_regular(paths.ledger_path)
    if opened is None:
        return tasks
    fd, st = opened
    try:
        pending = b""
        position = 0
        while position < st.st_size:
            chunk = os.pread(fd, min(CHUNK_BYTES, st.st_size - position), position)
            if not chunk:
                break
            position += len(chunk)
            buffer = pending + chunk
            end = buffer.rfind(b"\n") + 1
            body, pending = buffer[:end], buffer[end:]
            searched = body.lower() if lowered else body  # bytes.lower keeps every offset
            if any(needle in searched for needle in needles):
                for line, seen in zip(body.split(b"\n"), searched.split(b"\n"), strict=True):
                    if any(needle in seen for needle in needles):
                        tasks.add(line[-38:-2].decode("ascii", "replace"))  # a canonical line ends with its task id
    except OSError as exc:
        raise storage_error(exc, f"reading {paths.ledger_path.name}", code="STORAGE_READ_FAILED") from exc
    finally:
        os.close(fd)
    return tasks


def rechain_line(line: bytes, actor: str, prev_hash: str | None, project_id: str | None = None) -> tuple[bytes, str]:
    """A verified canonical ``line`` chained after ``prev_hash`` (and moved to ``project_id``), with its new hash.

    The bytes are those of ``event_line`` of the event re-chained as a dict: keys are sorted, so ``event_hash`` sits
    right after the ``actor`` value, and ``prev_hash`` and ``project_id`` are the last keys after ``payload`` (a later
    ``request_id`` is a string, whose quotes are escaped), found from the end.
    """
    cut = _ACTOR_PREFIX + len(actor)
    at_prev = line.rindex(_PREV_KEY)
    at_project = line.index(_PROJECT_KEY, at_prev)
    prev_value = b"null" if prev_hash is None else b'"' + prev_hash.encode() + b'"'
    if project_id is None:
        rest = line[at_project:-1]
    else:
        value_end = at_project + len(_PROJECT_KEY) + 64
        rest = _PROJECT_KEY + project_id.encode() + line[value_end:-1]
    head = line[:cut]
    middle = line[cut + _HASH_SEGMENT : at_prev] + _PREV_KEY + prev_value + rest
    digest = hashlib.sha256(head + middle).hexdigest()
    return head + b',"event_hash":"' + digest.encode() + b'"' + middle + b"\n", digest


class Streamed:
    """What a streamed rewrite wrote: the new chain's head, its line count and length, whether any event was edited
    or dropped, and the task index written beside it (``None``: none could be written)."""

    __slots__ = ("bindings", "changed", "head", "index", "length", "lines")

    def __init__(self) -> None:
        self.head: str | None = None
        self.lines = 0
        self.length = 0
        self.changed = False
        self.index: str | None = None
        self.bindings = 0


def write_rewrite(
    out: int,
    source: Iterator[tuple[bytes, list[Event]]],
    edit: Edit | None,
    *,
    paths: ProjectPaths,
    project_id: str | None,
    forbidden: Sequence[bytes],
    result: Streamed,
) -> None:
    """Write the edited, re-chained ledger to ``out`` chunk by chunk, verifying each written chunk as the continuation
    of the chain and indexing it into a new task index (``result.index``).

    Args:
        project_id: the id the new chain carries when it is not the source's (relink); ``None``: the same.
        forbidden: bytes no written line may hold (the deleted ids).

    Raises:
        StorageError: ``DELETE_VERIFICATION_FAILED`` (a written line would not verify, cannot be encoded, or holds
            a forbidden byte string); ``OSError`` unchanged (the caller maps it).
    """
    target_id = paths.project_id
    result.index = new_index(paths)
    prev: str | None = None
    for body, events in source:
        out_lines: list[bytes] = []
        start = 0
        for event in events:
            end = body.index(b"\n", start) + 1
            line = body[start:end]
            start = end
            kept = event if edit is None else edit(event)
            if kept is None:
                result.changed = True
                continue
            if kept is event:
                if event.prev_hash == prev and project_id is None:
                    prev = event.event_hash  # the chain is unchanged up to here: the line stays as it is
                else:
                    line, prev = rechain_line(line, event.actor, prev, project_id)
            else:
                result.changed = True
                try:
                    rechained = rechain([kept], project_id=target_id, prev_hash=prev)[0]
                    line = event_line(rechained)
                except (ValueError, TypeError) as exc:
                    raise StorageError(
                        "a rewritten event cannot be encoded", code="DELETE_VERIFICATION_FAILED"
                    ) from exc
                prev = rechained.event_hash
            out_lines.append(line)
        chunk = b"".join(out_lines)
        if not chunk:
            continue
        if any(needle in chunk for needle in forbidden):
            raise StorageError(
                "the rewritten ledger still contains the deleted identifier", code="DELETE_VERIFICATION_FAILED"
            )
        check = verify_continuation(chunk, project_id=target_id, prev_hash=result.head, first_line=result.lines + 1)
        if check.error is not None:
            raise StorageError(
                f"the rewritten ledger would not verify: {check.error.reason}", code="DELETE_VERIFICATION_FAILED"
            )
        write_all(out, chunk)
        if result.index is not None and not extend_index(
            paths, result.index, check.events, result.length, result.length + len(chunk)
        ):
            remove_tree_quietly(paths.project_dir / result.index)
            result.index = None
        result.bindings += count_bindings(check.events)
        result.head = check.head_hash
        result.lines += check.line_count
        result.length += len(chunk)


__all__ = [
    "Edit",
    "Streamed",
    "rechain_line",
    "stream_events",
    "task_events",
    "tasks_holding",
    "verified_chunks",
    "write_rewrite",
]
