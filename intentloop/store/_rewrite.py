"""A whole-ledger rewrite in one streaming pass (deletion, relink): verified chunks in, edited and re-chained lines out.

Why a pass and not a list: the rewrite used to hold every decoded event and the new file's bytes at once (808–850 MB
and 14–40 s for a ``forget claim`` at 100,000 events; docs/BENCHMARK.md). Here one chunk of whole lines is held at a
time, and an event the edit leaves alone is re-chained on its bytes (its ``prev_hash``, ``project_id`` and
``event_hash`` segments swapped) instead of being decoded into a dict and encoded again. Why the written file is read
back and checked from its bytes, and a task the edit leaves alone keeps its summary: decoding every written line and
refolding every task were half of a ``forget claim`` (5.4 → 2.8 s of CPU at 100,000 events; docs/BENCHMARK.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from hashlib import sha256
from pathlib import Path

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model.events import Event, event_line, rechain
from intentloop.store._fs import open_regular, storage_error, write_all
from intentloop.store._index import BINDING_EVENTS, IndexBuilder, open_indexed, stored_summaries
from intentloop.store._lines import CHUNK_BYTES
from intentloop.store._paths import ProjectPaths
from intentloop.store._verify import MAX_LINE_BYTES, trailing_error, verify_continuation, verify_lines

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
            _cut, at_prev, at_project = _fields(line, 0, len(line))
            prev = line[at_prev + len(_PREV_KEY) : at_project]
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


def task_events_holding(paths: ProjectPaths, task_id: str, needles: Sequence[bytes]) -> list[Event]:
    """The events of ``task_id`` whose lines hold one of ``needles``, in ledger order, each line verified on its own:
    :func:`events_holding` of that task, read through the task index when the checkpoint vouches for the file (only the
    task's lines are read, only those holding a needle decoded), else in one pass over the ledger. Lock-free.

    Raises:
        CorruptLedgerError, StorageError: as :func:`events_holding`.
    """
    indexed = open_indexed(paths)
    if indexed is not None:
        try:
            events = indexed.task_events_holding(task_id, needles)
        finally:
            indexed.close()
        if events is not None:
            return events
    return [event for event in events_holding(paths, needles) if event.task_id == task_id]


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


def _quoted(digest: bytes | None) -> bytes:
    return b"null" if digest is None else b'"' + digest + b'"'


def _fields(body: bytes, start: int, end: int) -> tuple[int, int, int]:
    """Where the chain fields of the canonical line ``body[start:end]`` (with its newline) are: ``cut`` (its
    ``event_hash`` segment starts there: keys are sorted, it follows the ``actor`` value), and where its ``prev_hash``
    and ``project_id`` keys start (the keys after ``payload``, found from the end since a later ``request_id`` is a
    string whose quotes are escaped).

    Raises:
        ValueError: the line is not shaped like a canonical event line.
    """
    if not body.startswith(_ACTOR_KEY, start):
        raise ValueError("not a canonical event line")
    cut = body.index(b'"', start + len(_ACTOR_KEY), end) + 1
    if not body.startswith(_HASH_KEY, cut):
        raise ValueError("event_hash is not where canonical order puts it")
    at_prev = body.rindex(_PREV_KEY, cut, end)
    return cut, at_prev, body.index(_PROJECT_KEY, at_prev, end)


def _hash_at(body: bytes, start: int, end: int) -> bytes:
    """The stored ``event_hash`` of the canonical line ``body[start:end]``.

    Raises:
        ValueError: the line is not shaped like a canonical event line.
    """
    cut = _fields(body, start, end)[0]
    return body[cut + len(_HASH_KEY) : cut + _HASH_SEGMENT - 1]


def _rechained(
    body: bytes, start: int, end: int, read: bytes | None, prev: bytes | None, project: bytes | None
) -> tuple[bytes, bytes, bytes]:
    """The line ``body[start:end]`` (it must follow ``read`` in the source chain and hash to its stored
    ``event_hash``) chained after ``prev`` (moved to ``project``), its stored hash and its new one: the bytes
    ``event_line`` gives for the event re-chained as a dict. The source check and the new hash share the hashing of
    the line's bytes before ``prev_hash`` (most of it).

    Raises:
        ValueError: the line is not shaped like a canonical event line, does not follow ``read`` or does not hash to
            its ``event_hash``.
    """
    cut, at_prev, at_project = _fields(body, start, end)
    view = memoryview(body)
    if view[at_prev + len(_PREV_KEY) : at_project] != _quoted(read):
        raise ValueError("prev_hash is not the previous line's event_hash")
    stored = body[cut + len(_HASH_KEY) : cut + _HASH_SEGMENT - 1]
    digest = sha256(view[start:cut])
    digest.update(view[cut + _HASH_SEGMENT : at_prev])
    source = digest.copy()
    source.update(view[at_prev : end - 1])
    if source.hexdigest().encode() != stored:
        raise ValueError("event_hash does not match the line")
    if project is None:
        tail = _PREV_KEY + _quoted(prev) + body[at_project : end - 1]
    else:
        tail = _PREV_KEY + _quoted(prev) + _PROJECT_KEY + project + body[at_project + len(_PROJECT_KEY) + 64 : end - 1]
    digest.update(tail)
    new = digest.hexdigest().encode()
    line = b"".join((body[start:cut], _HASH_KEY, new, b'"', body[cut + _HASH_SEGMENT : at_prev], tail, b"\n"))
    return line, stored, new


class Streamed:
    """What a streamed rewrite wrote: the new chain's head, its line count and length, whether any event was edited
    or dropped (and the tasks of those events), and the task index written beside it (``None``: none could be
    written)."""

    __slots__ = ("bindings", "changed", "edited", "head", "index", "length", "lines", "read_head", "read_lines")

    def __init__(self) -> None:
        self.head: str | None = None
        self.lines = 0
        self.length = 0
        self.changed = False
        self.edited: set[str] = set()  # tasks an event of which the edit dropped, replaced or added
        self.index: str | None = None
        self.bindings = 0
        self.read_head: str | None = None  # the source chain as read: its head and line count
        self.read_lines = 0


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
    summaries: Path | None = None,
) -> None:
    """Write the edited, re-chained ledger to ``out`` chunk by chunk, then read the written file back, verifying it
    as a chain of the new project and indexing it into a new task index (``result.index``).

    Each source line is checked against the chain as read (its hash is the SHA-256 of the line without it, its
    ``prev_hash`` the previous line's hash; the caller compares the last hash with the head it verified, so the bytes
    are those verified). Only a line holding one of ``touches`` (every line when ``None``) is decoded, verified on its
    own and given to ``edit``: the others cannot change, and are only re-chained on their bytes. Until the first
    change, the lines between two touched ones are copied as they are: the read-back then checks them.

    Args:
        source_id: the project the source lines belong to; the new chain carries ``paths.project_id``.
        touches: bytes every line the edit may change holds (the deleted task's id).
        forbidden: bytes no written line may hold (the deleted ids).
        summaries: the index directory whose stored task summaries describe the source (the one its writer
            trusts): a task none of whose events the edit changed keeps its summary, moved to its new first line.

    Raises:
        CorruptLedgerError: a source line does not verify.
        StorageError: ``DELETE_VERIFICATION_FAILED`` (a written line does not verify, cannot be encoded, or holds
            a forbidden byte string); ``OSError`` unchanged (the caller maps it).
    """
    target_id = paths.project_id
    moved = None if source_id == target_id else target_id.encode()
    read: bytes | None = None  # the source chain's last hash
    prev: bytes | None = None  # the new chain's last hash
    lines = length = 0
    for body in source:
        parts: list[bytes] = []
        every = edit is not None and touches is None
        marks = sorted(_starts_holding(body, touches)) if edit is not None and touches is not None else []
        marked = set(marks)
        at_mark = 0
        start = 0
        while start < len(body):
            if prev == read and moved is None and not every:
                # Unchanged so far: the lines up to the next touched one stay as they are (the read-back checks them).
                while at_mark < len(marks) and marks[at_mark] < start:
                    at_mark += 1
                stop = marks[at_mark] if at_mark < len(marks) else len(body)
                if stop > start:
                    last = max(body.rfind(b"\n", start, stop - 1) + 1, start)  # where the block's last line starts
                    count = body.count(b"\n", start, stop)
                    try:
                        read = prev = _hash_at(body, last, stop)
                    except ValueError as exc:
                        raise CorruptLedgerError(f"ledger line {result.read_lines + count}: not canonical") from exc
                    parts.append(body[start:stop])
                    result.read_lines += count
                    lines += count
                    start = stop
                    continue
            end = body.index(b"\n", start) + 1
            number = result.read_lines + 1
            if every or start in marked:
                assert edit is not None
                line = body[start:end]
                read_prev = None if read is None else read.decode()
                checked = verify_continuation(line, project_id=source_id, prev_hash=read_prev, first_line=number)
                if checked.error is not None:
                    raise checked.error
                event = checked.events[0]
                kept = edit(event)
                if kept is not event:
                    result.read_lines, read = number, event.event_hash.encode()
                    result.changed = True
                    result.edited.add(event.task_id)
                    for written in [] if kept is None else [kept] if isinstance(kept, Event) else kept:
                        result.edited.add(written.task_id)
                        line, prev = _encoded(written, target_id, prev)
                        parts.append(line)
                        lines += 1
                    start = end
                    continue
                if prev == read and moved is None:  # the chain is unchanged up to here: the line stays as it is
                    result.read_lines, read = number, event.event_hash.encode()
                    prev = read
                    parts.append(line)
                    lines += 1
                    start = end
                    continue
            try:
                line, read, prev = _rechained(body, start, end, read, prev, moved)
            except ValueError as exc:
                raise CorruptLedgerError(f"ledger line {number}: not the line that was verified", line=number) from exc
            result.read_lines = number
            parts.append(line)
            lines += 1
            start = end
        chunk = b"".join(parts)
        write_all(out, chunk)
        length += len(chunk)
    result.read_head = None if read is None else read.decode()
    _read_back(out, (prev, lines, length), paths=paths, forbidden=forbidden, result=result, summaries=summaries)


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


def _failed(reason: str) -> StorageError:
    return StorageError(f"the rewritten ledger does not verify: {reason}", code="DELETE_VERIFICATION_FAILED")


def _read_back(
    out: int,
    written: tuple[bytes | None, int, int],
    *,
    paths: ProjectPaths,
    forbidden: Sequence[bytes],
    result: Streamed,
    summaries: Path | None,
) -> None:
    """Read the file just written back a chunk at a time and verify it as the new chain, building its task index on
    the way (``result.index``); the chain's head, line count and length must be the ones written.

    Every line is checked from its bytes: its ``event_hash`` is the SHA-256 of the line without it, its ``prev_hash``
    the line before's, its ``project_id`` the new chain's, and it holds none of ``forbidden``. The lines of a task
    whose stored summary is not carried over (an edited task, or one without a summary the old index vouches for)
    are also decoded and verified whole (canonical form, envelope) and folded into its new summary.

    Raises:
        StorageError: ``DELETE_VERIFICATION_FAILED``, ``STORAGE_READ_FAILED``.
    """
    builder = IndexBuilder(paths)
    try:
        if summaries is not None:
            builder.carry(stored_summaries(summaries, leave_out=result.edited), summaries)
        _check_written(out, written[2], builder, paths=paths, forbidden=forbidden, result=result)
    except BaseException:
        builder.abandon()
        raise
    head, lines, length = written
    if (result.head, result.lines, result.length) != (None if head is None else head.decode(), lines, length):
        builder.abandon()
        raise _failed("it is not the chain that was written")
    built = builder.finish(replace=False)  # the old index stays until the new ledger is in place
    result.index, result.bindings = (None, 0) if built is None else built


#: Where the ``event_type`` value starts after a line's ``cut``: its ``event_hash`` segment, then ``event_id`` (a UUID).
_TYPE_AT = _HASH_SEGMENT + len(',"event_id":"') + 36 + len('","event_type":"')
_BINDING_TYPES = tuple(sorted(event_type.encode() + b'"' for event_type in BINDING_EVENTS))


def _check_written(
    out: int, size: int, builder: IndexBuilder, *, paths: ProjectPaths, forbidden: Sequence[bytes], result: Streamed
) -> None:
    """The chain checks of :func:`_read_back` over the ``size`` bytes of ``out``, chunk by chunk; records what was
    read in ``result`` (head, lines, length).

    Why from the bytes: decoding every written line to verify it took about a third of a ``forget claim``; a line
    copied from the verified ledger or re-chained on its bytes is proven intact by its hash and its link.
    """
    if os.fstat(out).st_size != size:
        raise _failed("its size is not what was written")
    project = _PROJECT_KEY + paths.project_id.encode() + b'"'
    carried = builder.carried()
    prev = b"null"
    offset = 0
    try:
        for body in _whole_line_chunks(out, size, path=paths.ledger_path):
            if not body.endswith(b"\n"):
                raise _failed("its last line has no newline")
            if any(needle in body for needle in forbidden):
                raise _failed("it still contains the deleted identifier")
            lines = body.split(b"\n")
            lines.pop()
            cuts = [line.index(b'"', len(_ACTOR_KEY)) + 1 for line in lines]
            segments = [line[cut : cut + _HASH_SEGMENT] for line, cut in zip(lines, cuts, strict=True)]
            computed = [
                _HASH_KEY + sha256(line[:cut] + line[cut + _HASH_SEGMENT :]).hexdigest().encode() + b'"'
                for line, cut in zip(lines, cuts, strict=True)
            ]
            if segments != computed:
                raise _failed(f"line {result.lines + 1 + _first_difference(segments, computed)}: event_hash")
            links = [prev, *[segment[len(_HASH_KEY) - 1 :] for segment in segments[:-1]]]  # each line's quoted hash
            if not all(
                [
                    line.startswith(_PREV_KEY + link + project, line.rfind(_PREV_KEY))
                    for line, link in zip(lines, links, strict=True)
                ]
            ):
                raise _failed("a prev_hash or project_id is not the new chain's")
            tasks = [line[-38:-2].decode("ascii") for line in lines]
            bindings = [line.startswith(_BINDING_TYPES, cut + _TYPE_AT) for line, cut in zip(lines, cuts, strict=True)]
            folded = [index for index, task_id in enumerate(tasks) if task_id not in carried]
            if folded:
                events = _verified_whole([lines[i] for i in folded], [links[i] for i in folded], paths=paths)
                if [e.task_id for e in events] != [tasks[i] for i in folded] or [
                    e.event_type in BINDING_EVENTS for e in events
                ] != [bindings[i] for i in folded]:
                    raise _failed("a line's task or type is not where canonical order puts it")
                builder.fold(events)
            builder.add_measured(offset, [len(line) + 1 for line in lines], tasks, bindings)
            prev = segments[-1][len(_HASH_KEY) - 1 :]
            offset += len(body)
            result.lines += len(lines)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _failed("a line is not shaped like an event line") from exc
    except _OverlongError:
        raise _failed(f"a line is longer than {MAX_LINE_BYTES} bytes") from None
    result.head = None if prev == b"null" else prev[1:-1].decode()
    result.length = offset


def _first_difference(stored: Sequence[bytes], computed: Sequence[bytes]) -> int:
    return next((i for i, (a, b) in enumerate(zip(stored, computed, strict=True)) if a != b), 0)


def _verified_whole(lines: Sequence[bytes], links: Sequence[bytes], *, paths: ProjectPaths) -> list[Event]:
    """The events of ``lines`` (lines of the new file, each following its ``links`` value), each verified whole: the
    checks a whole-file verification makes of a line (the links are checked by the caller).

    Raises:
        StorageError: ``DELETE_VERIFICATION_FAILED`` naming what failed.
    """
    events = verify_lines(b"\n".join(lines) + b"\n", project_id=paths.project_id)
    if events is not None and len(events) == len(lines):
        return events
    events = []
    for line, link in zip(
        lines, links, strict=True
    ):  # something unusual (a float JavaScript writes otherwise) or wrong
        prev = None if link == b"null" else link[1:-1].decode()
        check = verify_continuation(line + b"\n", project_id=paths.project_id, prev_hash=prev, first_line=1)
        if check.error is not None or check.line_count != 1:
            raise _failed(check.error.reason if check.error is not None else "a line was lost")
        events.append(check.events[0])
    return events


__all__ = [
    "Edit",
    "Streamed",
    "events_holding",
    "line_chunks",
    "stream_events",
    "task_events",
    "task_events_holding",
    "tasks_holding",
    "verified_chunks",
    "write_rewrite",
]
