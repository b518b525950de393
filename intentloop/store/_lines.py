"""Every store's view: the verified ledger as offsets into its file, events decoded on demand, task folds kept.

Why: decoded events cost about 2.7 KB each (a server peaked at 446 MB on a 100,000-event ledger; docs/BENCHMARK.md,
"Measurements behind the code"), offsets about 45 bytes. A store verifies the file in chunks of whole lines (the
chain carried from chunk to chunk, so each line gets exactly the checks of a whole-file verification) and keeps, per
line, its end offset, the first half of its ``event_hash`` (16 bytes), its task and its place in its task's and its
event type's position lists. An event asked for is read back from the same open file (the verified inode, whatever
has been renamed over its path since) and must hash to an ``event_hash`` that starts with what was recorded for its
position, so bytes changed after verification are ``CORRUPT_LEDGER``, never a wrong answer.

Anything unusual while streaming (damage, a torn tail, a line longer than a chunk can grow to, a file that changed
meanwhile) gives up, and the caller verifies the file whole as before: the report on a damaged ledger is exactly the
one a whole read gives.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, islice
from typing import TYPE_CHECKING, overload

import msgspec

from intentloop.errors import CorruptLedgerError
from intentloop.model.events import Event, event_line
from intentloop.store._fs import content_key
from intentloop.store._verify import MAX_LINE_BYTES, Verification, verify_continuation

if TYPE_CHECKING:  # the fold is imported when a task is first folded: a hook that only appends never loads it
    from intentloop.model.projection import TaskState

#: Bytes read and verified at a time. What a verification adds to the peak grows with it (the chunk, its split lines and
#: its decoded events): a 100,000-event ledger read alone peaked at 86 MB with 4 MiB chunks, 41 MB with 1 MiB, 32 MB
#: with 512 KiB (19 MB before reading), no slower (1.3-1.6 s against 1.8 s).
CHUNK_BYTES = 512 * 1024
_HASH_KEY = b',"event_hash":"'
#: Bytes of each line's ``event_hash`` a view keeps: a line read back must hash to an ``event_hash`` that starts with
#: them, so changing a verified line unnoticed takes a second preimage of 128 bits of SHA-256. Half the 32 bytes: 16 MB
#: less for a server holding a 1,000,000-event ledger (its peak was 96 MB against a goal of 80; docs/BENCHMARK.md).
HASH_KEPT = 16
_decoder = msgspec.json.Decoder(Event)
_handover = threading.Lock()


def grew(before: os.stat_result, after: os.stat_result) -> bool:
    """The same inode, longer: an append in place leaves the bytes before it as they were."""
    return (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino) and after.st_size > before.st_size


class LedgerFile:
    """An open descriptor of the verified ledger inode, closed when the last view that reads through it is gone."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = os.dup(fd)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.close(self.fd)


def _changed(line_no: int) -> CorruptLedgerError:
    reason = "the line changed after it was verified"
    return CorruptLedgerError(f"ledger line {line_no}: {reason}", line=line_no, reason=reason)


#: How many events the folded tasks kept for a ledger may hold together (the task just asked for is always kept): a
#: task's fold costs about 1.4 KB an event (a claim each), so this bounds them near 30 MB.
FOLD_BUDGET_EVENTS = 20_000


class _Folds:
    """The folded tasks of one table, least recently used first, each with how many of its events it has folded. A
    task's fold depends on its own events alone, and a table only grows, so a kept fold of ``k`` events is the fold of
    the task's first ``k`` events in every view of the table and is extended in place by the ones after them."""

    __slots__ = ("_candidates", "_kept", "_mutex", "_total")

    def __init__(self) -> None:
        self._kept: OrderedDict[str, tuple[int, TaskState]] = OrderedDict()
        self._candidates: dict[str, tuple[int, int]] = {}  # task id -> (its events, its candidates) when counted
        self._mutex = threading.Lock()
        self._total = 0

    def candidate_count(self, events: LineEvents) -> int:
        from intentloop.model.projection import CANDIDATE_BEARING_EVENTS

        total = 0
        for task_id in {events.task_at(position) for position in events.of_types(CANDIDATE_BEARING_EVENTS)}:
            seen = len(events.positions(task_id))
            counted = self._candidates.get(task_id)
            if counted is None or counted[0] != seen:
                task = self.fold(events, task_id)
                counted = self._candidates[task_id] = (seen, 0 if task is None else len(task.candidates))
            total += counted[1]
        return total

    def fold(self, events: LineEvents, task_id: str) -> TaskState | None:
        from intentloop.model.projection import ProjectState, project

        positions = events.positions(task_id)
        if not positions:
            return None
        with self._mutex:
            kept = self._kept.pop(task_id, None)
            if kept is not None:
                self._total -= kept[0]
            if kept is None or kept[0] > len(positions):  # none, or folded past this (older) view
                state = project(events.pick(positions))
            elif kept[0] == len(positions):
                state = ProjectState()
                state.tasks[task_id] = kept[1]
            else:
                single = ProjectState()
                single.tasks[task_id] = kept[1]
                state = project(events.pick(positions[kept[0] :]), single)
            task = state.tasks[task_id]
            self._kept[task_id] = (len(positions), task)
            self._total += len(positions)
            while self._total > FOLD_BUDGET_EVENTS and len(self._kept) > 1:
                _oldest, (count, _task) = self._kept.popitem(last=False)
                self._total -= count
            return task


class _Table:
    """The per-line records shared by a view and the views extended from it (append-only; each view reads only its
    own prefix)."""

    __slots__ = ("_numbers", "by_task", "by_type", "ends", "file", "folds", "hashes", "task_names", "task_of")

    def __init__(self, file: LedgerFile) -> None:
        self.file = file
        self.folds = _Folds()
        self.ends = array("Q")  # end offset of line i (its start is the end of line i - 1, or 0)
        self.hashes = bytearray()  # HASH_KEPT bytes per line: the start of its event_hash
        self.by_task: dict[str, array[int]] = {}  # task id -> positions, in order of the task's first appearance
        self.by_type: dict[str, array[int]] = {}  # event type -> positions
        self.task_of = array("I")  # position -> number of its task in task_names
        self.task_names: list[str] = []
        self._numbers: dict[str, int] = {}

    def add(self, events: Sequence[Event], ends: Iterable[int]) -> None:
        start = len(self.ends)
        self.ends.extend(ends)
        self.hashes += bytes.fromhex("".join([event.event_hash[: 2 * HASH_KEPT] for event in events]))
        by_task, by_type, numbers, names = self.by_task, self.by_type, self._numbers, self.task_names
        task_of = self.task_of
        for position, event in enumerate(events, start):
            task = event.task_id
            positions = by_task.get(task)
            if positions is None:
                positions = by_task[task] = array("I")
            positions.append(position)
            number = numbers.get(task)
            if number is None:
                number = numbers[task] = len(names)
                names.append(task)
            task_of.append(number)
            of_type = by_type.get(event.event_type)
            if of_type is None:
                of_type = by_type[event.event_type] = array("I")
            of_type.append(position)

    def prefix(self, count: int) -> _Table:
        table = _Table(self.file)
        table.ends = self.ends[:count]
        table.hashes = self.hashes[: count * HASH_KEPT]
        # list(): another thread may be extending the newest view's table meanwhile (a server's background read)
        for task, positions in list(self.by_task.items()):
            kept = positions[: bisect_left(positions, count)]
            if kept:
                table.by_task[task] = kept
        for event_type, positions in list(self.by_type.items()):
            table.by_type[event_type] = positions[: bisect_left(positions, count)]
        table.task_of = self.task_of[:count]
        table.task_names = list(self.task_names)
        table._numbers = dict(self._numbers)
        return table


class LineEvents(Sequence[Event]):
    """The first ``count`` verified events of a ledger file, decoded from the file when asked for.

    Raises (on access):
        CorruptLedgerError: ``CORRUPT_LEDGER`` when the bytes read no longer hash to the verified ``event_hash``.
        StorageError: never; an unreadable file is ``CORRUPT_LEDGER`` too (the verified bytes are not there).
    """

    __slots__ = ("_count", "_owner", "_table")

    def __init__(self, table: _Table, count: int) -> None:
        self._table = table
        self._count = count
        self._owner = True

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._range(start, stop)
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("event position out of range")
        return self._range(index, index + 1)[0]

    def __iter__(self) -> Iterator[Event]:
        start = 0
        while start < self._count:
            stop = self._batch_end(start)
            yield from self._range(start, stop)
            start = stop

    def _start(self, position: int) -> int:
        return 0 if position == 0 else self._table.ends[position - 1]

    def _batch_end(self, start: int) -> int:
        """The end of a run of lines from ``start`` about ``CHUNK_BYTES`` long (at least one line)."""
        limit = self._start(start) + CHUNK_BYTES
        stop = bisect_left(self._table.ends, limit, start, self._count)
        return max(stop, start + 1)

    def _range(self, start: int, stop: int) -> list[Event]:
        """Events ``start`` to ``stop`` (contiguous), each checked against its recorded hash."""
        if start >= stop:
            return []
        table = self._table
        first = self._start(start)
        length = table.ends[stop - 1] - first
        try:
            data = os.pread(table.file.fd, length, first)
        except OSError:
            data = b""
        if len(data) != length:
            raise _changed(start + 1)
        events: list[Event] = []
        offset = 0
        for position in range(start, stop):
            end = table.ends[position] - first
            events.append(self._checked(data[offset : end - 1], position))
            offset = end
        return events

    def _checked(self, line: bytes, position: int) -> Event:
        kept = self._table.hashes[position * HASH_KEPT : (position + 1) * HASH_KEPT].hex().encode()
        cut = line.find(_HASH_KEY)
        if cut < 0:
            raise _changed(position + 1)
        recorded = line[cut + len(_HASH_KEY) : cut + len(_HASH_KEY) + 64]
        if not recorded.startswith(kept):
            raise _changed(position + 1)
        if hashlib.sha256(line[:cut] + line[cut + len(_HASH_KEY) + 65 :]).hexdigest().encode() != recorded:
            raise _changed(position + 1)
        try:
            event = _decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise _changed(position + 1) from exc
        if event.event_hash.encode() != recorded:
            raise _changed(position + 1)
        return event

    def positions(self, task_id: str) -> Sequence[int]:
        """The positions of ``task_id``'s events, in order (within this view)."""
        positions = self._table.by_task.get(task_id)
        if positions is None:
            return ()
        return positions[: bisect_left(positions, self._count)]

    def of_types(self, event_types: Iterable[str]) -> list[int]:
        """The positions of the events of these types, in order (within this view)."""
        found: list[int] = []
        for event_type in event_types:
            positions = self._table.by_type.get(event_type)
            if positions is not None:
                found += positions[: bisect_left(positions, self._count)]
        return sorted(found)

    def fold(self, task_id: str) -> TaskState | None:
        """The fold of ``task_id``'s events in this view (``None``: it has none), kept for the next ask within
        :data:`FOLD_BUDGET_EVENTS` and extended by the events appended since, not folded again."""
        return self._table.folds.fold(self, task_id)

    def candidate_count(self) -> int:
        """Candidates of every task: a task with an event that can carry one is folded, and its count kept until the
        task has more events."""
        return self._table.folds.candidate_count(self)

    def task_at(self, position: int) -> str:
        """The task id of the event at ``position`` (without reading it)."""
        return self._table.task_names[self._table.task_of[position]]

    def task_ids(self) -> tuple[str, ...]:
        """Every task id, in order of first appearance (within this view)."""
        count = self._count
        return tuple(task for task, positions in list(self._table.by_task.items()) if positions[0] < count)

    def spans(self) -> Iterator[tuple[str, str, int, int]]:
        """(task id, event type, offset, length) of every line, from the records alone: nothing is read or decoded
        (rebuilding the task index of a 100,000-event ledger this way takes no decoding instead of two passes)."""
        table = self._table
        types = [""] * self._count
        for event_type, positions in list(table.by_type.items()):
            for position in positions[: bisect_left(positions, self._count)]:
                types[position] = event_type
        start = 0
        for position in range(self._count):
            end = table.ends[position]
            yield table.task_names[table.task_of[position]], types[position], start, end - start
            start = end

    def pick(self, positions: Sequence[int]) -> list[Event]:
        """The events at ``positions`` (ascending), reading runs of adjacent lines at once."""
        events: list[Event] = []
        index = 0
        while index < len(positions):
            run = index + 1
            while run < len(positions) and positions[run] == positions[run - 1] + 1 and run - index < 4096:
                run += 1
            events += self._range(positions[index], positions[run - 1] + 1)
            index = run
        return events

    def extended(self, new_events: Sequence[Event], byte_length: int) -> LineEvents:
        """These events and ``new_events`` (appended in place to the same file, ending at ``byte_length``): the
        table is taken over by the new sequence when this one is its newest, copied otherwise."""
        with _handover:
            owner, self._owner = self._owner and len(self._table.ends) == self._count, False
        table = self._table if owner else self._table.prefix(self._count)
        lengths = [len(event_line(event)) for event in new_events]  # each line encoded once
        start = byte_length - sum(lengths)
        table.add(new_events, list(accumulate(lengths, initial=start))[1:])  # each line's end offset
        return LineEvents(table, self._count + len(new_events))


def stream_verify(fd: int, st: os.stat_result, project_id: str) -> tuple[Verification, LineEvents] | None:
    """Verify the first ``st.st_size`` bytes of the opened ledger a chunk at a time, keeping only offsets and hashes.

    Returns ``None`` when anything is unusual (the caller then verifies the file whole): a line that fails, a torn
    tail, a line longer than ``MAX_LINE_BYTES``, a read that came back short or a file replaced meanwhile.
    """
    table = _Table(LedgerFile(fd))
    size = st.st_size
    position = 0
    pending = b""
    prev: str | None = None
    lines = 0
    try:
        while position < size:
            data = os.pread(fd, min(CHUNK_BYTES, size - position), position)
            if not data:
                return None
            position += len(data)
            buffer = pending + data if pending else data
            end = buffer.rfind(b"\n") + 1
            if end == 0:
                if len(buffer) > MAX_LINE_BYTES:
                    return None
                pending = buffer
                continue
            body, pending = buffer[:end], buffer[end:]
            checked = verify_continuation(body, project_id=project_id, prev_hash=prev, first_line=lines + 1)
            if checked.error is not None:
                return None
            lengths = map(len, body.split(b"\n"))  # the last item, after the final newline, is empty
            ends = accumulate(map((1).__add__, lengths), initial=position - len(buffer))
            next(ends)  # the initial value: where the body starts
            table.add(checked.events, islice(ends, len(checked.events)))
            prev = checked.head_hash
            lines += checked.line_count
        after = os.fstat(fd)
    except OSError:
        return None
    if pending or not (content_key(after) == content_key(st) or grew(st, after)):
        return None
    events = LineEvents(table, lines)
    verification = Verification(
        events=events, head_hash=prev, byte_length=size, line_count=lines, error=None, torn_tail=None
    )
    return verification, events


__all__ = ["CHUNK_BYTES", "FOLD_BUDGET_EVENTS", "LedgerFile", "LineEvents", "grew", "stream_verify"]
