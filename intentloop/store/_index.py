"""The task index beside the ledger: what a cold reader (a hook) needs without reading the whole ledger.

``index-<uuid>/`` (named by the checkpoint) holds, for the ledger inode the checkpoint describes, one file per task
(``t-<task_id>``) and one file of binding events (``bindings``: every ``task_started`` and ``mode_set``, which decide
which task a session is bound to), each a sequence of 12-byte records (big-endian byte offset and length of one
ledger line); the checkpoint records how many binding records there are. It is derived from the verified ledger and
rebuilt whenever the checkpoint did not vouch for the file a writer found (a crash between append and checkpoint, a
foreign program, a rewrite); otherwise each append adds its records and the checkpoint then records how many lines the
index covers. ``counts.json`` records how many records each file holds (a file cut short or removed is noticed by
readers and by the next writer, which then rebuilds); a record past the checkpoint's size is refused, the binding
records must number what the checkpoint says, and every line read through the index is verified on its own (canonical
form, hash, project) and must belong to the task asked for: a stale or garbled index costs a full read, never a wrong
answer.

Why files of offsets rather than one index file: an append adds 12 bytes to one or two small files (no rewrite of an
index that grows with the ledger), and a hook reads the binding records and its task's records only.
"""

from __future__ import annotations

import os
import struct
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import accumulate
from pathlib import Path

import msgspec

from intentloop.errors import StorageError
from intentloop.model._lazyre import LazyPattern
from intentloop.model.events import Event, event_line
from intentloop.model.ids import UUID_TEXT
from intentloop.model.projection import BINDING_EVENTS  # what decides a session binding: named by the fold
from intentloop.store._checkpoint import COUNTS  # file name → how many records it holds (sealed by the checkpoint)
from intentloop.store._fs import (
    FILE_MODE,
    create_exclusive,
    make_dir,
    open_regular,
    read_regular,
    remove_tree_quietly,
    unlink_quietly,
)
from intentloop.store._lines import LineEvents
from intentloop.store._paths import ProjectPaths
from intentloop.store._summary import SUMMARIES_MARK, SummaryBuilder, TaskSummary, read_summary
from intentloop.store._verify import verify_continuation, verify_lines

INDEX_DIR_RE = LazyPattern(rf"^index-{UUID_TEXT}$")
BINDINGS = "bindings"
_RECORD = 12
_PACK = struct.Struct(">QI").pack  # one record: big-endian byte offset (8) and length (4) of a ledger line
#: Lines of a task at most this far apart are read in one ``pread`` with what lies between them (a few lines of other
#: tasks: reading them from the page cache costs less than a system call each), in blocks of at most ``_READ_BLOCK``.
_READ_GAP = 8 * 1024
_READ_BLOCK = 1024 * 1024
_TASK_RE = LazyPattern(rf"^(?i:{UUID_TEXT})$")


def new_index_name() -> str:
    return f"index-{uuid.uuid4()}"


def _task_file(task_id: str) -> str:
    return f"t-{task_id}"


def _records(spans: Iterable[tuple[int, int]]) -> bytes:
    return b"".join(offset.to_bytes(8, "big") + length.to_bytes(4, "big") for offset, length in spans)


def _append_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


#: Measures the lines of decoded events in bulk: a verified line is the sorted encoding of its event, except for the
#: rare float that JavaScript writes differently (``_entries`` notices those by the total and measures one by one).
_BULK = msgspec.json.Encoder(order="sorted")
_BULK_CHUNK = 256


def _entries(events: Sequence[Event], start: int, end: int) -> dict[str, list[tuple[int, int]]]:
    """File name → (offset, length) of each event's line, the events' lines filling bytes ``start`` to ``end``.

    An offsets view's lines come from its records (nothing is decoded or encoded). Decoded events are measured by their
    bulk sorted encoding, 256 at a time; only when those lengths do not add up to ``end - start`` is each event encoded
    canonically on its own. Why: after a read without a checkpoint (a hook's first write on a ledger) this index is
    rebuilt from the whole decoded ledger, and encoding 100,000 events one by one through ``canonical_bytes`` took
    1.1 s here, more than verifying them (0.8 s); in bulk it takes ~0.1 s.
    """
    files: dict[str, list[tuple[int, int]]] = {}
    if isinstance(events, LineEvents) and start == 0:
        for task_id, event_type, offset, length in events.spans():
            files.setdefault(_task_file(task_id), []).append((offset, length))
            if event_type in BINDING_EVENTS:
                files.setdefault(BINDINGS, []).append((offset, length))
        return files
    lengths = _bulk_lengths(events)
    if start + sum(lengths) != end:
        lengths = [len(event_line(event)) for event in events]  # a verified line is its canonical encoding
    offset = start
    for event, length in zip(events, lengths, strict=True):
        files.setdefault(_task_file(event.task_id), []).append((offset, length))
        if event.event_type in BINDING_EVENTS:
            files.setdefault(BINDINGS, []).append((offset, length))
        offset += length
    return files


def _bulk_lengths(events: Sequence[Event]) -> list[int]:
    """The length of each event's sorted encoding with its newline."""
    lengths: list[int] = []
    for index in range(0, len(events), _BULK_CHUNK):
        lines = _BULK.encode_lines(events[index : index + _BULK_CHUNK]).split(b"\n")
        lines.pop()  # the empty piece after the last newline
        lengths += [len(line) + 1 for line in lines]
    return lengths


def count_bindings(events: Sequence[Event]) -> int:
    if isinstance(events, LineEvents):
        return len(events.of_types(BINDING_EVENTS))
    return sum(e.event_type in BINDING_EVENTS for e in events)


_counts_codec = msgspec.json.Decoder(dict[str, int])


def _read_counts(directory: Path) -> dict[str, int] | None:
    try:
        got = read_regular(directory / COUNTS)
    except Exception:
        return None
    if got is None:
        return None
    try:
        return _counts_codec.decode(got[0])
    except msgspec.DecodeError:
        return None


def _write_counts(directory: Path, counts: dict[str, int]) -> None:
    temp = directory / f"{COUNTS}.{uuid.uuid4()}.tmp"
    try:
        create_exclusive(temp, msgspec.json.encode(counts), sync=False)
        os.replace(temp, directory / COUNTS)
    except OSError:
        unlink_quietly(temp)
        raise


def extend_index(paths: ProjectPaths, name: str, events: Sequence[Event], start: int, end: int) -> bool:
    """Add the records of ``events`` (whose lines fill bytes ``start`` to ``end``) to index ``name``; ``False`` when
    the index is not whole (a file whose size differs from its recorded count) or on failure: the caller then rebuilds
    it."""
    return _add(paths.project_dir / name, lambda: _entries(events, start, end))


def _add(directory: Path, measure: Callable[[], dict[str, list[tuple[int, int]]]]) -> bool:
    counts = _read_counts(directory)
    if counts is None or not os.path.lexists(directory / SUMMARIES_MARK):  # no task summaries
        return False
    entries = measure()
    try:
        for file in entries:
            try:
                size = os.lstat(directory / file).st_size
            except FileNotFoundError:
                size = 0
            if size != counts.get(file, 0) * _RECORD:
                return False
        for file, spans in entries.items():
            _append_file(directory / file, _records(spans))
            counts[file] = counts.get(file, 0) + len(spans)
        _write_counts(directory, counts)
    except OSError:
        return False
    return True


def rebuild_index(paths: ProjectPaths, events: Sequence[Event], end: int) -> str | None:
    """Write a new index of ``events`` (the whole verified ledger, ``end`` bytes) and remove every other one; returns
    its name or ``None`` (no index: readers read the ledger)."""
    builder = IndexBuilder(paths)
    try:
        if isinstance(events, LineEvents):
            _add_spans(builder, events)
        else:
            builder.add_entries(_entries(events, 0, end), events)
    except (msgspec.EncodeError, ValueError):
        builder.abandon()
        return None
    built = builder.finish()
    return None if built is None else built[0]


def _add_spans(builder: IndexBuilder, events: LineEvents) -> None:
    """Index an offsets view from its records a batch at a time, then fold its events one by one.

    Why not :func:`_entries`: a list of spans for every event held ~300 bytes an event (a server's first write without
    a vouching checkpoint peaked at 333 MB at 1,000,000 events; docs/BENCHMARK.md)."""
    batch: list[tuple[str, str, int, int]] = []
    for span in events.spans():
        batch.append(span)
        if len(batch) == _SPAN_BATCH:
            _add_batch(builder, batch)
            batch = []
    if batch:
        _add_batch(builder, batch)
    builder.fold(events)


def _add_batch(builder: IndexBuilder, batch: list[tuple[str, str, int, int]]) -> None:
    builder.add_measured(
        batch[0][2],
        [length for _task, _type, _offset, length in batch],
        [task_id for task_id, _type, _offset, _length in batch],
        [event_type in BINDING_EVENTS for _task, event_type, _offset, _length in batch],
    )


#: Spans of an offsets view indexed at a time (:func:`_add_spans`).
_SPAN_BATCH = 65_536


#: Records an :class:`IndexBuilder` holds before appending them to their files: what a rebuild adds to the peak, and
#: the number of appends (one per file per flush) it saves.
_FLUSH_BYTES = 1024 * 1024


class IndexBuilder:
    """A new index written while the verified ledger streams past (a ``_scan`` sink: the lines as stored, their start
    offset, their events): records are appended to their files a megabyte at a time and only each file's record count
    is kept, so rebuilding the index of any ledger takes the same memory; the task summaries (``_summary``) are folded
    from the same events and written last, with the marker that makes the index whole."""

    def __init__(self, paths: ProjectPaths) -> None:
        self._paths = paths
        self.name = new_index_name()
        self._directory = paths.project_dir / self.name
        self._counts: dict[str, int] = {}
        self._summaries = SummaryBuilder(spill=self._directory)  # spilled claim marks wait in the new index
        self._firsts: dict[str, int] = {}  # task id -> offset of its first line
        self._pending: dict[str, bytearray] = {}
        self._held = 0
        self.bindings = 0
        self._failed = False
        try:
            make_dir(self._directory)
        except StorageError:
            self._failed = True

    def __call__(self, lines: bytes, start: int, events: Sequence[Event]) -> None:
        if self._failed:
            return
        self._summaries.add(events)
        lengths = [len(line) + 1 for line in lines.split(b"\n")][: len(events)]  # not the piece after the last newline
        self.add_measured(
            start, lengths, [event.task_id for event in events], [e.event_type in BINDING_EVENTS for e in events]
        )

    def add_measured(self, start: int, lengths: Sequence[int], tasks: Sequence[str], bindings: Sequence[bool]) -> None:
        """Index lines measured without decoding them (a streamed rewrite's read-back), starting at offset ``start``:
        each line's length, task and whether it is a binding event. Their summaries are folded apart (:meth:`fold`,
        :meth:`carry`)."""
        if self._failed:
            return
        pending = self._pending
        firsts = self._firsts
        for offset, length, task_id, binding in zip(
            accumulate(lengths, initial=start), lengths, tasks, bindings, strict=False
        ):
            record = _PACK(offset, length)
            file = "t-" + task_id
            held = pending.get(file)
            if held is None:
                held = pending[file] = bytearray()
                firsts.setdefault(task_id, offset)
            held += record
            if binding:
                held = pending.get(BINDINGS)
                if held is None:
                    held = pending[BINDINGS] = bytearray()
                held += record
                self.bindings += 1
                self._held += _RECORD
        self._held += _RECORD * len(lengths)
        if self._held >= _FLUSH_BYTES:
            self._flush()

    def fold(self, events: Iterable[Event]) -> None:
        """Fold the next events (in ledger order) into the task summaries (with :meth:`add_measured`)."""
        self._summaries.add(events)

    def carry(self, summaries: Mapping[str, TaskSummary], source: Path) -> None:
        """Take these stored summaries as they are (``SummaryBuilder.carry``)."""
        self._summaries.carry(summaries, source)

    def carried(self) -> Collection[str]:
        """The tasks whose summaries are carried (their events are not to be folded)."""
        return self._summaries.carried()

    def add_entries(self, entries: dict[str, list[tuple[int, int]]], events: Iterable[Event]) -> None:
        """Add the records of :func:`_entries` (a view's ``events`` measured) and fold the events' summaries."""
        for file, spans in entries.items():
            self._pending.setdefault(file, bytearray()).extend(_records(spans))
            if file == BINDINGS:
                self.bindings += len(spans)
            else:
                self._firsts.setdefault(file[2:], spans[0][0])
        self._summaries.add(events)
        self._flush()

    def _flush(self) -> None:
        try:
            for file, data in self._pending.items():
                _append_file(self._directory / file, bytes(data))
                self._counts[file] = self._counts.get(file, 0) + len(data) // _RECORD
        except OSError:
            self._failed = True
        self._pending = {}
        self._held = 0

    def finish(self, *, replace: bool = True) -> tuple[str, int] | None:
        """Append what is held, record the counts and (``replace``) remove every other index: ``(name, binding
        records)``, or ``None`` after a failure (no index: readers read the ledger)."""
        if not self._failed:
            self._flush()
        if not self._failed:
            try:
                _write_counts(self._directory, self._counts)
                events = {file[2:]: count for file, count in self._counts.items() if file != BINDINGS}
                self._summaries.write(self._directory, self._firsts, events)
            except OSError:
                self._failed = True
        if self._failed:
            self.abandon()
            return None
        if replace:
            remove_stale_indexes(self._paths, keep=self.name)
        return self.name, self.bindings

    def abandon(self) -> None:
        """Remove the index being built (the ledger did not verify)."""
        remove_tree_quietly(self._directory)


def stored_summaries(directory: Path, *, leave_out: Collection[str]) -> dict[str, TaskSummary]:
    """The intact summaries in the index ``directory`` (one a writer trusts) of its tasks but ``leave_out``, each
    folding exactly the task's records there; a task whose summary is missing or does not vouch for them is left out.
    Never raises."""
    counts = _read_counts(directory) or {}
    found: dict[str, TaskSummary] = {}
    for file, count in counts.items():
        task_id = file[2:]
        if file == BINDINGS or count <= 0 or task_id in leave_out or not _TASK_RE.match(task_id):
            continue
        summary = read_summary(directory, task_id, count)
        if summary is not None:
            found[task_id] = summary
    return found


def remove_stale_indexes(paths: ProjectPaths, keep: str | None) -> None:
    try:
        names = os.listdir(paths.project_dir)
    except OSError:
        return
    for entry in names:
        if INDEX_DIR_RE.match(entry) and entry != keep:
            remove_tree_quietly(paths.project_dir / entry)


class _Prev(msgspec.Struct):
    prev_hash: str | None = None


_prev_decoder = msgspec.json.Decoder(_Prev)


class IndexedLedger:
    """Lines of a ledger whose checkpoint matched it exactly and whose index covers it, read by offset."""

    def __init__(
        self,
        paths: ProjectPaths,
        fd: int,
        size: int,
        directory: Path,
        bindings: int,
        counts: dict[str, int] | None,
        lines: int | None = None,
    ) -> None:
        self._counts = counts  # the sealed counts: a task's records must number its lines
        self._paths = paths
        self._fd = fd
        self._size = size
        self._directory = directory
        self._bindings = bindings
        self.lines = lines  # the checkpoint's line count (``None``: not known)

    @property
    def directory(self) -> Path:
        return self._directory

    def task_counts(self) -> dict[str, int] | None:
        """Task id → how many records the index holds of it, for every task it holds (``None``: no counts)."""
        if self._counts is None:
            return None
        return {file[2:]: count for file, count in self._counts.items() if file != BINDINGS and count > 0}

    def first_offset(self, task_id: str) -> int | None:
        """Where the task's first line starts (``None``: no record, or the index cannot say)."""
        if not _TASK_RE.match(task_id):
            return None
        opened = None
        try:
            opened = open_regular(self._directory / _task_file(task_id))
            if opened is None:
                return None
            record = os.pread(opened[0], _RECORD, 0)
        except Exception:
            return None
        finally:
            if opened is not None:
                os.close(opened[0])
        if len(record) != _RECORD:
            return None
        return int.from_bytes(record[:8], "big")

    def close(self) -> None:
        os.close(self._fd)

    def binding_events(self) -> list[Event] | None:
        """Every ``task_started`` and ``mode_set`` event in ledger order (``None``: the index cannot be trusted)."""
        events = self._read(BINDINGS, None)
        if events is None or any(e.event_type not in BINDING_EVENTS for e in events):
            return None
        return events

    def task_events(self, task_id: str) -> list[Event] | None:
        """The events of one task in ledger order (``None``: the index cannot be trusted)."""
        if not _TASK_RE.match(task_id):
            return None
        return self._read(_task_file(task_id), task_id)

    def task_events_holding(self, task_id: str, needles: Sequence[bytes]) -> list[Event] | None:
        """The events of one task whose lines hold one of ``needles``, in ledger order, each line verified on its own
        (``None``: the index cannot be trusted): the task's lines are read, only those are decoded."""
        if not _TASK_RE.match(task_id):
            return None
        return self._read(_task_file(task_id), task_id, needles)

    def _read(self, file: str, task_id: str | None, needles: Sequence[bytes] | None = None) -> list[Event] | None:
        try:
            got = read_regular(self._directory / file)
        except Exception:
            return None
        if got is None:
            return [] if self._counts is not None and self._counts.get(file, 0) == 0 else None
        data = got[0]
        if self._counts is None or len(data) != self._counts.get(file, 0) * _RECORD:
            return None
        if task_id is None and len(data) // _RECORD != self._bindings:
            return None
        spans: list[tuple[int, int]] = []
        last = -1
        for at in range(0, len(data), _RECORD):
            offset = int.from_bytes(data[at : at + 8], "big")
            length = int.from_bytes(data[at + 8 : at + _RECORD], "big")
            if offset + length > self._size or offset <= last or length == 0:
                return None  # a record the checkpoint does not vouch for: the index is not this ledger's
            last = offset
            spans.append((offset, length))
        owner = None if task_id is None else task_id.encode()
        events = self._bulk(spans, needles, owner)
        if events is None:  # something unusual or wrong: line by line, which tells which
            events = []
            for offset, length in spans:
                if needles is not None:
                    holds = self._holds(offset, length, needles, owner)
                    if holds is None:
                        return None
                    if not holds:
                        continue
                event = self._line(offset, length)
                if event is None:
                    return None
                events.append(event)
        if task_id is not None and any(event.task_id != task_id for event in events):
            return None
        return events

    def _bulk(
        self, spans: list[tuple[int, int]], needles: Sequence[bytes] | None = None, owner: bytes | None = None
    ) -> list[Event] | None:
        """The lines of ``spans`` read in as few reads as their gaps allow and verified in one pass (every check of
        :meth:`_line` at once); ``None`` when that cannot vouch for each of them. Why: every prompt adds a line to the
        session's task and each hook reads the whole task; one read and one verification per line took 15 µs a line
        in a fresh process (a 318-line task: 4.7 ms), this 8 µs (2.5 ms)."""
        if not spans:
            return []
        lines: list[bytes] = []
        index = 0
        try:
            while index < len(spans):
                start = spans[index][0]
                end = start + spans[index][1]
                stop = index + 1
                while (
                    stop < len(spans)
                    and spans[stop][0] - end <= _READ_GAP
                    and spans[stop][0] + spans[stop][1] - start <= _READ_BLOCK
                ):
                    end = spans[stop][0] + spans[stop][1]
                    stop += 1
                block = os.pread(self._fd, end - start, start)
                if len(block) != end - start:
                    return None
                for offset, length in spans[index:stop]:
                    line = block[offset - start : offset - start + length]
                    if not line.endswith(b"\n"):
                        return None
                    if needles is None:
                        lines.append(line)
                    elif not _whole_line_of(line, owner):
                        return None  # the count and the task check below cannot tell when the line is left out
                    elif any(needle in line for needle in needles):
                        lines.append(line)
                index = stop
        except OSError:
            return None
        events = verify_lines(b"".join(lines), project_id=self._paths.project_id)
        if events is None or len(events) != len(lines):  # a record spanning two lines decodes to more events
            return None
        return events

    def _holds(self, offset: int, length: int, needles: Sequence[bytes], owner: bytes | None) -> bool | None:
        """Whether the line at ``offset`` holds one of ``needles`` (``None``: it is not one whole line of ``owner``)."""
        try:
            line = os.pread(self._fd, length, offset)
        except OSError:
            return None
        if len(line) != length or not line.endswith(b"\n") or not _whole_line_of(line, owner):
            return None
        return any(needle in line for needle in needles)

    def _line(self, offset: int, length: int) -> Event | None:
        try:
            line = os.pread(self._fd, length, offset)
            prev = _prev_decoder.decode(line).prev_hash
        except (OSError, msgspec.DecodeError):
            return None
        if len(line) != length or not line.endswith(b"\n"):
            return None
        check = verify_continuation(line, project_id=self._paths.project_id, prev_hash=prev, first_line=1)
        if check.error is not None or check.line_count != 1:
            return None
        return check.events[0]


def _whole_line_of(line: bytes, owner: bytes | None) -> bool:
    """Whether ``line`` (ending in its newline) is one line, of the task ``owner`` when given, judged from its bytes: a
    line left out undecoded (``IndexedLedger.task_events_holding``) must still be one of the task's, as a decoded one
    is checked to be (``task_id`` is an event's last field)."""
    return b"\n" not in line[:-1] and (owner is None or line[-39:-3] == owner)


def open_indexed(paths: ProjectPaths) -> IndexedLedger | None:
    """The ledger through its index, when the checkpoint matches the file exactly, the index covers every line it
    vouches for and its seal holds (``_checkpoint``); ``None`` otherwise (read the ledger whole). Lock-free; creates
    nothing."""
    from intentloop.store._checkpoint import read_checkpoint

    try:
        if not paths.check_project():
            return None
        opened = open_regular(paths.ledger_path)
    except Exception:
        return None
    if opened is None:
        return None
    fd, st = opened
    checkpoint = read_checkpoint(paths)
    vouched = None if checkpoint is None or not checkpoint.matches(st) else checkpoint.vouched_index(paths)
    if checkpoint is None or vouched is None or not INDEX_DIR_RE.match(vouched[0]):
        os.close(fd)
        return None
    index, bindings, counts_bytes = vouched
    try:
        counts = _counts_codec.decode(counts_bytes)
    except msgspec.DecodeError:
        os.close(fd)
        return None
    directory = paths.project_dir / index
    try:
        dir_st = os.lstat(directory)
    except OSError:
        os.close(fd)
        return None
    import stat as stat_module

    if not stat_module.S_ISDIR(dir_st.st_mode):
        os.close(fd)
        return None
    return IndexedLedger(paths, fd, st.st_size, directory, bindings, counts, checkpoint.lines)


__all__ = [
    "BINDING_EVENTS",
    "INDEX_DIR_RE",
    "IndexBuilder",
    "IndexedLedger",
    "count_bindings",
    "extend_index",
    "open_indexed",
    "rebuild_index",
    "remove_stale_indexes",
    "stored_summaries",
]
