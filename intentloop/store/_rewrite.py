"""A whole-ledger rewrite in one streaming pass (deletion, relink): verified chunks in, edited and re-chained lines out.

Why a pass and not a list: the rewrite used to hold every decoded event and the new file's bytes at once (808–850 MB
and 14–40 s for a ``forget claim`` at 100,000 events; docs/BENCHMARK.md). Here one chunk of whole lines is held at a
time, and an event the edit leaves alone is re-chained on its bytes (its ``prev_hash``, ``project_id`` and
``event_hash`` segments swapped) instead of being decoded into a dict and encoded again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from hashlib import sha256
from pathlib import Path

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model.events import Event, event_line, rechain
from intentloop.store._fs import open_regular, remove_tree_quietly, storage_error, write_all
from intentloop.store._index import BINDING_EVENTS, add_spans, new_index, open_indexed
from intentloop.store._lines import CHUNK_BYTES
from intentloop.store._paths import ProjectPaths
from intentloop.store._summary import SummaryBuilder
from intentloop.store._verify import MAX_LINE_BYTES, trailing_error, verify_continuation

#: What a rewrite does to each verified event: the same object to keep it (re-chained), another to replace it (its
#: chain fields are recomputed), a list to replace it by those events in that order (deletion: a dropped claim record
#: followed by the invalidations that keep what it superseded out of the view), ``None`` (or ``[]``) to drop it.
Edit = Callable[[Event], Event | list[Event] | None]

_ACTOR_KEY = b'{"actor":"'
_HASH_KEY = b',"event_hash":"'
_HASH_SEGMENT = len(_HASH_KEY) + 64 + 1
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
    prev: str | None = None
    lines = 0
    try:
        for body in _whole_line_chunks(fd, size, path=path):
            if not body.endswith(b"\n"):  # the last line has no newline
                if not torn_ok:
                    raise trailing_error(lines + 1)
                return
            checked = verify_continuation(body, project_id=project_id, prev_hash=prev, first_line=lines + 1)
            if checked.error is not None:
                raise checked.error
            prev = checked.head_hash
            lines += checked.line_count
            yield body, list(checked.events)
    except _OverlongError:
        raise CorruptLedgerError(
            f"ledger line {lines + 1}: line longer than {MAX_LINE_BYTES} bytes", line=lines + 1
        ) from None


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


def _lines_holding(paths: ProjectPaths, needles: Sequence[bytes], lowered: bool) -> Iterator[bytes]:
    """The ledger lines (without their newline) that hold one of ``needles`` (in the line lowered to ASCII lower case
    when ``lowered``), read a chunk of whole lines at a time without decoding.

    Raises:
        StorageError: path-safety refusals, ``STORAGE_READ_FAILED``.
    """
    if not needles or not paths.check_project():
        return
    opened = open_regular(paths.ledger_path)
    if opened is None:
        return
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
                        yield line
    except OSError as exc:
        raise storage_error(exc, f"reading {paths.ledger_path.name}", code="STORAGE_READ_FAILED") from exc
    finally:
        os.close(fd)


def tasks_holding(paths: ProjectPaths, needles: Sequence[bytes], *, lowered: bool = False) -> set[str]:
    """The tasks of the ledger lines that hold one of ``needles`` (in the line lowered to ASCII lower case when
    ``lowered``): a cheap superset of the tasks a question can concern (a claim id's prefix, a deleted statement),
    which are then folded one at a time. Lock-free; nothing is decoded.

    Raises:
        StorageError: path-safety refusals, ``STORAGE_READ_FAILED``.
    """
    return {line[-38:-2].decode("ascii", "replace") for line in _lines_holding(paths, needles, lowered)}


def events_holding(paths: ProjectPaths, needles: Sequence[bytes], *, lowered: bool = False) -> list[Event]:
    """The events of the ledger lines that hold one of ``needles``, in ledger order, each line verified on its own
    (canonical form, hash, project; as a line read through the task index is): what a question about one claim needs
    (every event that records or names it, and the ``task_started`` events), without the rest of its task. Lock-free.

    Raises:
        CorruptLedgerError: a line holding a needle does not verify.
        StorageError: path-safety refusals, ``STORAGE_READ_FAILED``.
    """
    events: list[Event] = []
    for line in _lines_holding(paths, needles, lowered):
        try:
            prev = _Line(line + b"\n").prev(line)
        except ValueError:
            prev = b"null"
        checked = verify_continuation(
            line + b"\n",
            project_id=paths.project_id,
            prev_hash=None if prev == b"null" else prev[1:-1].decode(),
            first_line=1,
        )
        if checked.error is not None or checked.line_count != 1:
            raise CorruptLedgerError(f"a line of {paths.ledger_path.name} does not verify", code="CORRUPT_LEDGER")
        events.append(checked.events[0])
    return events


def line_chunks(fd: int, size: int, *, path: Path) -> Iterator[bytes]:
    """The first ``size`` bytes of the opened ledger as chunks of whole lines (about :data:`CHUNK_BYTES` each).

    Raises:
        CorruptLedgerError: a last line without its newline, or a line longer than ``MAX_LINE_BYTES``.
        StorageError: ``TRANSIENT_FILE_RACE`` (the file is shorter than ``size``), ``STORAGE_READ_FAILED``.
    """
    try:
        for body in _whole_line_chunks(fd, size, path=path):
            if not body.endswith(b"\n"):
                raise CorruptLedgerError(f"the last line of {path.name} has no newline", code="CORRUPT_TRAILING_EVENT")
            yield body
    except _OverlongError:
        raise CorruptLedgerError(f"a line of {path.name} is longer than {MAX_LINE_BYTES} bytes") from None


class _OverlongError(Exception):
    """A line longer than ``MAX_LINE_BYTES`` (each caller words it: it knows the line's number or not)."""


def _whole_line_chunks(fd: int, size: int, *, path: Path) -> Iterator[bytes]:
    """The first ``size`` bytes of the opened file as chunks of whole lines (about :data:`CHUNK_BYTES` each), then
    what follows the last newline, if anything, as a last piece without one: the one chunked read of this module.

    Raises:
        _OverlongError: a line longer than ``MAX_LINE_BYTES``.
        StorageError: ``TRANSIENT_FILE_RACE`` (the file is shorter than ``size``), ``STORAGE_READ_FAILED``.
    """
    position = 0
    pending = b""
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
        if end == 0 and len(buffer) > MAX_LINE_BYTES:
            raise _OverlongError
        if end:
            yield buffer[:end]
        pending = buffer[end:]
    if pending:
        yield pending


class _Line:
    """Where the chain fields of one canonical line are (keys are sorted: ``event_hash`` right after the ``actor``
    value; ``prev_hash`` and ``project_id`` the keys after ``payload``, found from the end since a later
    ``request_id`` is a string whose quotes are escaped)."""

    __slots__ = ("at_prev", "at_project", "cut", "hash")

    def __init__(self, line: bytes) -> None:
        if not line.startswith(_ACTOR_KEY):
            raise ValueError("not a canonical event line")
        self.cut = line.index(b'"', len(_ACTOR_KEY)) + 1
        if line[self.cut : self.cut + len(_HASH_KEY)] != _HASH_KEY:
            raise ValueError("event_hash is not where canonical order puts it")
        self.hash = line[self.cut + len(_HASH_KEY) : self.cut + _HASH_SEGMENT - 1]
        self.at_prev = line.rindex(_PREV_KEY)
        self.at_project = line.index(_PROJECT_KEY, self.at_prev)

    def prev(self, line: bytes) -> bytes:
        return line[self.at_prev + len(_PREV_KEY) : self.at_project]

    def unhashed(self, line: bytes) -> bytes:
        """The hash input: the line without its ``event_hash`` segment and newline."""
        return line[: self.cut] + line[self.cut + _HASH_SEGMENT : -1]

    def rechained(self, line: bytes, prev: bytes, project_id: str | None) -> tuple[bytes, bytes]:
        """The line chained after ``prev`` (``null`` or a quoted hash; moved to ``project_id``) and its new hash:
        the bytes ``event_line`` gives for the event re-chained as a dict."""
        if project_id is None:
            rest = line[self.at_project : -1]
        else:
            rest = _PROJECT_KEY + project_id.encode() + line[self.at_project + len(_PROJECT_KEY) + 64 : -1]
        head = line[: self.cut]
        middle = line[self.cut + _HASH_SEGMENT : self.at_prev] + _PREV_KEY + prev + rest
        digest = sha256(head + middle).hexdigest().encode()
        return head + _HASH_KEY + digest + b'"' + middle + b"\n", digest


def _quoted(digest: bytes | None) -> bytes:
    return b"null" if digest is None else b'"' + digest + b'"'


class Streamed:
    """What a streamed rewrite wrote: the new chain's head, its line count and length, whether any event was edited
    or dropped, and the task index written beside it (``None``: none could be written)."""

    __slots__ = (
        "bindings",
        "changed",
        "firsts",
        "head",
        "index",
        "length",
        "lines",
        "read_head",
        "read_lines",
        "summaries",
    )

    def __init__(self) -> None:
        self.summaries = SummaryBuilder()  # the new index's task summaries, folded from the chunks as they are written
        self.firsts: dict[str, int] = {}  # task id -> offset of its first line in the new file
        self.head: str | None = None
        self.lines = 0
        self.length = 0
        self.changed = False
        self.index: str | None = None
        self.bindings = 0
        self.read_head: str | None = None  # the source chain as read: its head and line count
        self.read_lines = 0


#: Index records gathered before they are written (12 bytes each on disk): a few writes per ledger, bounded memory.
_INDEX_BATCH = 65_536


def write_rewrite(
    out: int,
    source: Iterator[bytes],
    edit: Edit | None,
    *,
    source_id: str,
    touches: Sequence[bytes] | None,
    paths: ProjectPaths,
    forbidden: Sequence[bytes],
    result: Streamed,
) -> None:
    """Write the edited, re-chained ledger to ``out`` chunk by chunk, verifying each written chunk as the continuation
    of the chain and indexing it into a new task index (``result.index``).

    Each source line is checked against the chain as read (its hash is the SHA-256 of the line without it, its
    ``prev_hash`` the previous line's hash; the caller compares the last hash with the head it verified, so the bytes
    are those verified). Only a line holding one of ``touches`` (every line when ``None``) is decoded, verified on its
    own and given to ``edit``: the others cannot change, and are only re-chained on their bytes. Until the first
    change, a chunk holding none of ``touches`` is written as it is, unparsed: the verification of the written chunk
    (chain, hashes, canonical form) is then the check of the source bytes.

    Args:
        source_id: the project the source lines belong to; the new chain carries ``paths.project_id``.
        touches: bytes every line the edit may change holds (the deleted task's id).
        forbidden: bytes no written line may hold (the deleted ids).

    Raises:
        CorruptLedgerError: a source line does not verify.
        StorageError: ``DELETE_VERIFICATION_FAILED`` (a written line would not verify, cannot be encoded, or holds
            a forbidden byte string); ``OSError`` unchanged (the caller maps it).
    """
    target_id = paths.project_id
    moved = None if source_id == target_id else target_id
    result.index = new_index(paths)
    if result.index is not None:  # its claim marks wait in the new index beyond ``SPILL_CLAIMS``
        result.summaries = SummaryBuilder(spill=paths.project_dir / result.index)
    read: bytes | None = None  # the source chain's last hash
    prev: bytes | None = None  # the new chain's last hash
    spans: list[tuple[str, str, int, int]] = []
    for body in source:
        if prev == read and moved is None and touches is not None and not any(needle in body for needle in touches):
            last = body[body.rfind(b"\n", 0, len(body) - 1) + 1 :]
            try:
                read = prev = _Line(last).hash
            except ValueError as exc:
                raise CorruptLedgerError(f"ledger line {result.read_lines + 1}: not canonical") from exc
            result.read_lines += body.count(b"\n")
            _flush(out, [body], paths=paths, forbidden=forbidden, result=result, spans=spans)
            continue
        out_lines: list[bytes] = []
        marks = _starts_holding(body, touches) if edit is not None and touches is not None else set()
        start = 0
        while start < len(body):
            end = body.index(b"\n", start) + 1
            line = body[start:end]
            touched = edit is not None and (touches is None or start in marks)
            start = end
            number = result.read_lines + 1
            if prev == read and moved is None and not touched:
                # Unchanged so far: the line stays as it is, and the written chunk's verification checks it.
                cut = line.find(b'"', len(_ACTOR_KEY)) + 1
                read = prev = line[cut + len(_HASH_KEY) : cut + _HASH_SEGMENT - 1]
                result.read_lines = number
                out_lines.append(line)
                continue
            try:
                where = _Line(line)
                old_prev = where.prev(line)
                intact = old_prev == _quoted(read) and sha256(where.unhashed(line)).hexdigest().encode() == where.hash
            except ValueError:
                intact = False
            if not intact:
                raise CorruptLedgerError(f"ledger line {number}: not the line that was verified", line=number)
            read_prev = None if read is None else read.decode()
            result.read_lines, read = number, where.hash
            if touched:
                assert edit is not None
                checked = verify_continuation(line, project_id=source_id, prev_hash=read_prev, first_line=number)
                if checked.error is not None:
                    raise checked.error
                event = checked.events[0]
                kept = edit(event)
                if kept is None:
                    result.changed = True
                    continue
                if kept is not event:
                    result.changed = True
                    for written in [kept] if isinstance(kept, Event) else kept:
                        line, prev = _encoded(written, target_id, prev)
                        out_lines.append(line)
                    continue
            if old_prev == _quoted(prev) and moved is None:
                prev = where.hash  # the chain is unchanged up to here: the line stays as it is
                out_lines.append(line)
                continue
            line, prev = where.rechained(line, _quoted(prev), moved)
            out_lines.append(line)
        _flush(out, out_lines, paths=paths, forbidden=forbidden, result=result, spans=spans)
    result.read_head = None if read is None else read.decode()
    _index(paths, result, spans)
    if result.index is not None:  # the index is whole only with its task summaries (``_summary``)
        try:
            result.summaries.write(paths.project_dir / result.index, result.firsts)
        except OSError:
            remove_tree_quietly(paths.project_dir / result.index)
            result.index = None


def _starts_holding(body: bytes, needles: Sequence[bytes]) -> set[int]:
    """Where the lines of ``body`` that hold one of ``needles`` start (found by searching the chunk, not each line)."""
    starts: set[int] = set()
    for needle in needles:
        at = body.find(needle)
        while at != -1:
            line = body.rfind(b"\n", 0, at) + 1
            starts.add(line)
            at = body.find(needle, body.find(b"\n", at) + 1)
    return starts


def _encoded(event: Event, project_id: str, prev: bytes | None) -> tuple[bytes, bytes]:
    """The line of an edited event chained after ``prev``, and its hash.

    Raises:
        StorageError: ``DELETE_VERIFICATION_FAILED`` when it has no canonical form.
    """
    try:
        new = rechain([event], project_id=project_id, prev_hash=None if prev is None else prev.decode())[0]
        return event_line(new), new.event_hash.encode()
    except (ValueError, TypeError) as exc:
        raise StorageError("a rewritten event cannot be encoded", code="DELETE_VERIFICATION_FAILED") from exc


def _flush(
    out: int,
    lines: list[bytes],
    *,
    paths: ProjectPaths,
    forbidden: Sequence[bytes],
    result: Streamed,
    spans: list[tuple[str, str, int, int]],
) -> None:
    """Verify ``lines`` as the continuation of the new chain, write them and gather their index records."""
    chunk = b"".join(lines)
    if not chunk:
        return
    if any(needle in chunk for needle in forbidden):
        raise StorageError(
            "the rewritten ledger still contains the deleted identifier", code="DELETE_VERIFICATION_FAILED"
        )
    check = verify_continuation(chunk, project_id=paths.project_id, prev_hash=result.head, first_line=result.lines + 1)
    if check.error is not None or check.byte_length != len(chunk):
        reason = check.error.reason if check.error is not None else "a line was lost"
        raise StorageError(f"the rewritten ledger would not verify: {reason}", code="DELETE_VERIFICATION_FAILED")
    write_all(out, chunk)
    offset = result.length
    lengths = [len(line) + 1 for line in chunk.split(b"\n")[:-1]]
    result.summaries.add(check.events)
    for event, length in zip(check.events, lengths, strict=True):
        result.firsts.setdefault(event.task_id, offset)
        spans.append((event.task_id, event.event_type, offset, length))
        offset += length
        result.bindings += event.event_type in BINDING_EVENTS
    result.head = check.head_hash
    result.lines += check.line_count
    result.length += len(chunk)
    if len(spans) >= _INDEX_BATCH:
        _index(paths, result, spans)


def _index(paths: ProjectPaths, result: Streamed, spans: list[tuple[str, str, int, int]]) -> None:
    """Write the gathered index records (the index is given up, and removed, when that fails)."""
    if result.index is not None and spans and not add_spans(paths, result.index, spans, building=True):
        remove_tree_quietly(paths.project_dir / result.index)
        result.index = None
    spans.clear()


__all__ = [
    "Edit",
    "Streamed",
    "events_holding",
    "line_chunks",
    "stream_events",
    "task_events",
    "tasks_holding",
    "verified_chunks",
    "write_rewrite",
]
