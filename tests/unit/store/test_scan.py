"""Streamed verification (``_scan``): a chunk of lines at a time, the verdict on any file is exactly a whole read's,
and the lines handed on are exactly the verified prefix as stored."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from intentloop.model import EventDraft, event_line, project_id_for, seal
from intentloop.store import ProjectStore, _fs, _lines, _project, _scan, scan_file

PID = project_id_for("/streamed/scan")
TASKS = [str(uuid.uuid4()) for _ in range(3)]
LONG = 6000  # the longest line a ledger may hold, in these tests (MAX_LINE_BYTES)


@pytest.fixture(autouse=True)
def small_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few lines, lines too long to hold past a few kilobytes, and the whole read looking for them every
    kilobyte: every boundary a large file has, in a small one."""
    monkeypatch.setattr(_lines, "CHUNK_BYTES", 512)
    monkeypatch.setattr(_scan, "CHUNK_BYTES", 512)
    monkeypatch.setattr(_fs, "STREAM_CHUNK", 1024)
    monkeypatch.setattr(_scan, "STREAM_CHUNK", 1024)
    monkeypatch.setattr(_project, "MAX_LINE_BYTES", LONG)
    monkeypatch.setattr(_scan, "MAX_LINE_BYTES", LONG)


def lines(count: int, payload: int = 40) -> list[bytes]:
    out: list[bytes] = []
    prev = None
    for i in range(count):
        draft = EventDraft(
            event_type="task_started" if i < len(TASKS) else "claim_added",
            task_id=TASKS[i % len(TASKS)],
            actor="user",
            request_id=f"r-{i}",
            payload={"p": "x" * (payload + i % 7)},
        )
        event = seal(draft, project_id=PID, prev_hash=prev)
        prev = event.event_hash
        out.append(event_line(event))
    return out


def tamper(line: bytes) -> bytes:
    return line.replace(b'"p":"x', b'"p":"y', 1)


GOOD = lines(60)
HUGE = b'{"actor":"user","p":"' + b"z" * (LONG + 3000) + b'"}'
DAMAGE: dict[str, Callable[[], bytes]] = {
    "intact": lambda: b"".join(GOOD),
    "empty": lambda: b"",
    "tampered line in a later chunk": lambda: b"".join(GOOD[:41]) + tamper(GOOD[41]) + b"".join(GOOD[42:]),
    "tampered first line": lambda: tamper(GOOD[0]) + b"".join(GOOD[1:]),
    "empty line": lambda: b"".join(GOOD[:20]) + b"\n" + b"".join(GOOD[20:]),
    "torn tail": lambda: b"".join(GOOD) + GOOD[0][:30],
    "damage and a torn tail": lambda: b"".join(GOOD[:9]) + b"not json\n" + b"".join(GOOD[10:]) + b'{"actor"',
    "a whole last line without its newline": lambda: b"".join(GOOD)[:-1],
    "an overlong line": lambda: b"".join(GOOD[:30]) + HUGE + b"\n" + b"".join(GOOD[30:]),
    "an overlong torn tail": lambda: b"".join(GOOD[:30]) + HUGE,
    "damage before an overlong line": lambda: b"".join(GOOD[:5]) + tamper(GOOD[5]) + b"".join(GOOD[6:]) + HUGE,
}
for _extra in (-10, 1, 500, 1100):  # around the limit: the whole read notices a long line only every STREAM_CHUNK
    DAMAGE[f"a line {_extra:+} bytes from the limit"] = lambda extra=_extra: (
        b"".join(GOOD[:2]) + HUGE[: LONG + extra] + b"\n" + b"".join(GOOD[2:5])
    )


def whole_and_streamed(data_root: Path, data: bytes) -> tuple[tuple[object, ...], tuple[object, ...], bytes]:
    store = ProjectStore(data_root, PID)
    store.paths.ensure()
    store.ledger_path.write_bytes(data)
    raw = store.read_raw()
    assert raw is not None
    verification = raw[1]
    seen: list[tuple[int, bytes, int]] = []
    scan = scan_file(store.ledger_path, PID, lambda chunk, start, events: seen.append((start, chunk, len(events))))
    assert scan is not None
    assert all(count for _start, _chunk, count in seen)  # only runs of verified lines are handed on
    starts = [start for start, _chunk, _count in seen]
    assert starts == [sum(len(chunk) for _s, chunk, _n in seen[:i]) for i in range(len(seen))]  # where each run lies
    assert sum(count for _start, _chunk, count in seen) == scan.line_count
    error = verification.error
    whole = (
        verification.head_hash,
        verification.byte_length,
        verification.line_count,
        None if error is None else (error.code, error.line, error.reason),
        verification.damage,
    )
    got = scan.error
    streamed = (
        scan.head_hash,
        scan.byte_length,
        scan.line_count,
        None if got is None else (got.code, got.line, got.reason),
        scan.damage,
    )
    return whole, streamed, b"".join(chunk for _start, chunk, _count in seen)


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_streamed_verdict_is_the_whole_reads(data_root: Path, case: str) -> None:
    data = DAMAGE[case]()
    whole, streamed, handed = whole_and_streamed(data_root, data)
    assert streamed == whole
    assert handed == data[: whole[1]]  # exactly the verified prefix, as stored
    assert (whole[3] is None) == (case in ("intact", "empty"))  # the cases are what they say
    if case.startswith(("an overlong", "damage before", "a line")):
        assert len(data) > LONG  # the whole read streamed past the long line instead of holding it


def test_the_damage_summary_covers_every_byte_after_the_prefix(data_root: Path) -> None:
    data = DAMAGE["damage and a torn tail"]()
    whole, streamed, _handed = whole_and_streamed(data_root, data)
    damage = streamed[4]
    assert damage is not None and damage == whole[4]
    rest = data[streamed[1] :]
    assert (damage.length, damage.sha256, damage.torn) == (len(rest), hashlib.sha256(rest).hexdigest(), True)


def test_a_file_cut_short_while_streaming_is_a_race(data_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ProjectStore(data_root, PID)
    store.paths.ensure()
    store.ledger_path.write_bytes(b"".join(GOOD))
    calls: list[int] = []
    real = _scan.os.pread

    def cut_after_first(fd: int, length: int, offset: int) -> bytes:
        calls.append(offset)
        if len(calls) == 2:
            with open(store.ledger_path, "r+b") as fh:
                fh.truncate(100)
        return real(fd, length, offset)

    monkeypatch.setattr(_scan.os, "pread", cut_after_first)
    from intentloop.errors import StorageError

    with pytest.raises(StorageError) as caught:
        scan_file(store.ledger_path, PID)
    assert caught.value.code == "TRANSIENT_FILE_RACE"
    monkeypatch.setattr(_scan.os, "pread", real)
    store.ledger_path.write_bytes(b"".join(GOOD))
    assert scan_file(store.ledger_path, PID).ok  # type: ignore[union-attr]  # positive control: an untouched file
