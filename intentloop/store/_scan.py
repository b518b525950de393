"""Whole-ledger work in bounded memory: verify a ledger file a chunk of whole lines at a time, hand each verified chunk
to a sink (an index being rebuilt, an export being written) and keep only the chain's head and counts.

Why: holding every decoded event made ``intentloop verify`` peak at 437 MB for 100,000 events and 4.0 GB for 1,000,000
(docs/BENCHMARK.md); a chunk at a time it stays flat. The verdict on a damaged file is exactly a whole read's.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model.events import Event
from intentloop.store._fs import STREAM_CHUNK, open_regular, storage_error, unchanged
from intentloop.store._lines import CHUNK_BYTES
from intentloop.store._verify import MAX_LINE_BYTES, Damage, overlong_error, trailing_error, verify_continuation

#: Receives each run of verified lines: the bytes exactly as stored (whole lines with their newlines), the offset
#: where they start in the file, and their decoded events.
Sink = Callable[[bytes, int, Sequence[Event]], None]


class Scan(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict on a ledger file, without its events.

    Attributes:
        head_hash: ``event_hash`` of the last verified event (``None`` for none).
        byte_length: length of the verified prefix (whole lines including their newlines).
        line_count: number of verified lines.
        error: the first error, exactly as :func:`~intentloop.store._verify.verify_ledger_bytes` of the whole file
            reports it (``None`` when everything verified).
        damage: the bytes after the verified prefix summarised (``None`` when everything verified).
    """

    head_hash: str | None
    byte_length: int
    line_count: int
    error: CorruptLedgerError | None
    damage: Damage | None

    @property
    def ok(self) -> bool:
        return self.error is None


def scan_open(path: Path, fd: int, st: os.stat_result, project_id: str, sink: Sink | None = None) -> Scan:
    """Verify the first ``st.st_size`` bytes of the opened ledger ``path`` a chunk of whole lines at a time.

    The first error is the one a whole read reports: chunks end at newlines and carry the chain, so every line gets
    the same checks in the same order; a line longer than ``MAX_LINE_BYTES`` is noticed where the whole read notices
    it (``read_lines_open`` looks every ``STREAM_CHUNK`` bytes) and never held. The sink sees verified lines only
    (the lines before the first error included), before the final check that the file did not change meanwhile.

    Raises:
        StorageError: ``TRANSIENT_FILE_RACE`` (the file changed other than by growing), ``STORAGE_READ_FAILED``.
    """
    size = st.st_size
    watch_long = size > MAX_LINE_BYTES  # the whole read holds a file this small whatever its lines
    position = 0
    pending = b""
    prev: str | None = None
    lines = 0
    verified = 0
    error: CorruptLedgerError | None = None
    damage: Damage | None = None
    try:
        while position < size:
            data = os.pread(fd, min(CHUNK_BYTES, size - position), position)
            if not data:
                raise StorageError(f"{path.name} changed while being read", code="TRANSIENT_FILE_RACE")
            position += len(data)
            buffer = pending + data if pending else data
            end = buffer.rfind(b"\n") + 1
            if end:
                body, pending = (buffer, b"") if end == len(buffer) else (buffer[:end], buffer[end:])
                checked = verify_continuation(body, project_id=project_id, prev_hash=prev, first_line=lines + 1)
                if sink is not None and checked.line_count:
                    sink(body if checked.error is None else body[: checked.byte_length], verified, checked.events)
                prev = checked.head_hash
                lines += checked.line_count
                verified += checked.byte_length
                if checked.error is not None:
                    error = checked.error
                    break
            else:
                pending = buffer
            if watch_long and len(pending) > MAX_LINE_BYTES and (position % STREAM_CHUNK == 0 or position == size):
                error = overlong_error(lines + 1) if _newline_in(fd, position, size) else trailing_error(lines + 1)
                break
        if error is None and pending:
            error = trailing_error(lines + 1)
        if error is not None:
            damage = _damage(fd, verified, size)
        after = os.fstat(fd)
    except OSError as exc:
        raise storage_error(exc, f"reading {path.name}", code="STORAGE_READ_FAILED") from exc
    if not unchanged(st, after, growing=True):
        raise StorageError(f"{path.name} changed while being read", code="TRANSIENT_FILE_RACE")
    return Scan(head_hash=prev, byte_length=verified, line_count=lines, error=error, damage=damage)


def scan_file(path: Path, project_id: str, sink: Sink | None = None) -> Scan | None:
    """:func:`scan_open` of the regular file at ``path`` (``None`` when there is none).

    Raises:
        StorageError: ``PATH_ESCAPE``, ``UNSAFE_DATA_FILE``, ``TRANSIENT_FILE_RACE``, ``STORAGE_READ_FAILED``.
    """
    opened = open_regular(path)
    if opened is None:
        return None
    fd, st = opened
    try:
        return scan_open(path, fd, st, project_id, sink)
    finally:
        os.close(fd)


def _newline_in(fd: int, start: int, end: int) -> bool:
    position = start
    while position < end:
        data = os.pread(fd, min(STREAM_CHUNK, end - position), position)
        if not data:
            return False
        if b"\n" in data:
            return True
        position += len(data)
    return False


def _damage(fd: int, start: int, end: int) -> Damage:
    """The bytes from ``start`` to ``end`` summarised: what a whole read finds after its verified prefix."""
    digest = hashlib.sha256()
    position = start
    last = b""
    while position < end:
        data = os.pread(fd, min(STREAM_CHUNK, end - position), position)
        if not data:
            break
        digest.update(data)
        last = data[-1:]
        position += len(data)
    return Damage(length=position - start, sha256=digest.hexdigest(), torn=last != b"\n")


__all__ = ["Scan", "Sink", "scan_file", "scan_open"]
