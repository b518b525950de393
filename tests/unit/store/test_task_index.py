"""The task index built from a decoded view: every record names the byte span of its event's line in the file."""

from __future__ import annotations

import uuid
from pathlib import Path

import msgspec
import pytest

from intentloop.model import EventDraft, project_id_for
from intentloop.store import LedgerView, LockConfig, ProjectStore, _index, _project
from intentloop.store._verify import verify_ledger_bytes

Payload = dict[str, object]
PID = project_id_for("/task/index")
TASKS = [str(uuid.uuid4()) for _ in range(3)]
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)


def draft(task: str, request_id: str, kind: str = "claim_added", payload: Payload | None = None) -> EventDraft:
    body = payload or {"n": request_id}
    return EventDraft(event_type=kind, task_id=task, actor="user", request_id=request_id, payload=body)


def spans_in_file(data: bytes) -> list[tuple[int, int]]:
    spans, offset = [], 0
    for line in data.splitlines(keepends=True):
        spans.append((offset, len(line)))
        offset += len(line)
    return spans


def decoded(store: ProjectStore) -> LedgerView:
    """A view of decoded events (the kind a rewrite leaves), from the whole file verified at once."""
    check = verify_ledger_bytes(store.ledger_path.read_bytes(), project_id=PID)
    assert check.error is None
    return LedgerView(tuple(check.events), check.head_hash, check.byte_length)


def seeded_store(data_root: Path) -> ProjectStore:
    """Three tasks started, then 30 claims taking turns among them (``"n": i``, with ``i`` two-byte characters)."""
    store = ProjectStore(data_root, PID, config=CONFIG)
    with store.locked() as ledger:
        ledger.append([draft(t, f"start-{i}", "task_started") for i, t in enumerate(TASKS)])
        ledger.append([draft(TASKS[i % 3], f"r-{i}", payload={"n": i, "w": "é" * i}) for i in range(30)])
    _project._cache.drop(str(store.ledger_path))
    return store


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    return seeded_store(data_root)


def test_index_records_of_a_decoded_view_are_the_lines_of_the_file(store: ProjectStore) -> None:
    view = decoded(store)
    entries = _index._entries(view.events, 0, view.byte_length)
    spans = spans_in_file(store.ledger_path.read_bytes())
    for task in TASKS:
        expected = [span for span, event in zip(spans, view.events, strict=True) if event.task_id == task]
        assert entries[f"t-{task}"] == expected
    starts = [span for span, event in zip(spans, view.events, strict=True) if event.event_type == "task_started"]
    assert entries[_index.BINDINGS] == starts


def test_a_decoded_view_is_indexed_without_encoding_each_event_canonically(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rebuilding the index after a read without a checkpoint is part of a hook's first write: it re-encoded every
    event through ``canonical_bytes`` (1.1 s of a 100,000-event ledger, more than verifying it); lines that verified
    in bulk are measured in bulk."""
    view = decoded(store)
    calls: list[object] = []
    real = _index.event_line
    monkeypatch.setattr(_index, "event_line", lambda event: calls.append(event) or real(event))
    entries = _index._entries(view.events, 0, view.byte_length)
    assert calls == []
    assert sum(len(spans) for name, spans in entries.items() if name != _index.BINDINGS) == len(view)


def test_lines_the_bulk_encoding_does_not_reproduce_are_measured_one_by_one(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = decoded(store)
    spans = spans_in_file(store.ledger_path.read_bytes())
    monkeypatch.setattr(_index, "_BULK", _Longer())  # as if a line held a float JavaScript writes differently
    entries = _index._entries(view.events, 0, view.byte_length)
    expected = [span for span, event in zip(spans, view.events, strict=True) if event.task_id == TASKS[0]]
    assert entries[f"t-{TASKS[0]}"] == expected


class _Longer:
    """A bulk encoder whose first line comes out one byte longer than the file's."""

    def encode_lines(self, events: object) -> bytes:
        data = msgspec.json.Encoder(order="sorted").encode_lines(events)
        return b" " + data


def _rewrite_task_file(store: ProjectStore, task: str, spans: list[tuple[int, int]]) -> None:
    checkpoint = msgspec.json.decode((store.project_dir / "ledger.checkpoint.json").read_bytes())
    path = store.project_dir / checkpoint["index"] / f"t-{task}"
    path.write_bytes(b"".join(offset.to_bytes(8, "big") + length.to_bytes(4, "big") for offset, length in spans))


def _indexed_task(store: ProjectStore, task: str) -> list[object] | None:
    indexed = store.indexed()
    assert indexed is not None
    try:
        return list(indexed.task_events(task) or []) or None
    finally:
        indexed.close()


def test_a_task_read_through_the_index_is_verified_in_one_pass(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every prompt adds a line to the session's task, and the hook reads the whole task: line by line (a read and a
    verification each) that took 15 µs a line in a fresh process, twice what one pass over them takes."""
    with store.locked() as ledger:  # the write leaves the checkpoint and the index
        ledger.append([draft(TASKS[1], "after")])
    expected = [e for e in store.read().events if e.task_id == TASKS[1]]
    calls: list[int] = []
    real = _index.verify_continuation
    monkeypatch.setattr(_index, "verify_continuation", lambda data, **kw: calls.append(1) or real(data, **kw))
    assert _indexed_task(store, TASKS[1]) == expected
    assert calls == []


def test_lines_the_bulk_check_refuses_are_checked_one_by_one(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with store.locked() as ledger:
        ledger.append([draft(TASKS[1], "after")])
    expected = [e for e in store.read().events if e.task_id == TASKS[1]]
    monkeypatch.setattr(_index, "verify_lines", lambda body, **kw: None)  # as for a float JavaScript writes its way
    assert _indexed_task(store, TASKS[1]) == expected


@pytest.mark.parametrize("damage", ["two-lines-in-one-record", "another-tasks-line", "cut-short"])
def test_records_that_do_not_name_the_tasks_lines_cost_a_full_read(store: ProjectStore, damage: str) -> None:
    with store.locked() as ledger:
        ledger.append([draft(TASKS[1], "after")])
    view = store.read()
    spans = spans_in_file(store.ledger_path.read_bytes())
    mine = [span for span, event in zip(spans, view.events, strict=True) if event.task_id == TASKS[1]]
    other = [span for span, event in zip(spans, view.events, strict=True) if event.task_id == TASKS[2]]
    assert _indexed_task(store, TASKS[1]) is not None  # control: the index as written answers
    if damage == "two-lines-in-one-record":
        first = mine[1]
        following = spans[spans.index(first) + 1]
        bad = [mine[0], (first[0], first[1] + following[1]), *mine[2:]]
    elif damage == "another-tasks-line":
        bad = sorted([*mine[:-1], other[-1]])
    else:
        bad = [*mine[:-1], (mine[-1][0], mine[-1][1] - 1)]
    _rewrite_task_file(store, TASKS[1], bad)
    indexed = store.indexed()
    assert indexed is not None
    try:
        assert indexed.task_events(TASKS[1]) is None
    finally:
        indexed.close()


def test_a_task_read_does_not_read_much_more_than_the_tasks_lines(
    data_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines close together are read in one ``pread``; what lies between them is read too, so that gap is bounded:
    a task whose lines alternate with another task's 20 KB lines must not read the other task."""
    store = ProjectStore(data_root, PID, config=CONFIG)
    with store.locked() as ledger:
        ledger.append([draft(t, f"start-{i}", "task_started") for i, t in enumerate(TASKS[:2])])
        for i in range(40):
            ledger.append([draft(TASKS[0], f"mine-{i}"), draft(TASKS[1], f"big-{i}", payload={"p": "x" * 20_000})])
    view = store.read()
    mine = sum(
        len(line)
        for line, e in zip(store.ledger_path.read_bytes().splitlines(True), view.events, strict=True)
        if e.task_id == TASKS[0]
    )
    read: list[int] = []
    real = _index.os.pread
    monkeypatch.setattr(_index.os, "pread", lambda fd, n, at: read.append(n) or real(fd, n, at))
    events = _indexed_task(store, TASKS[0])
    assert events is not None and len(events) == 41
    assert sum(read) <= 2 * mine  # with 64 KiB gaps it read every 20 KB line of the other task between them


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_an_offsets_view_is_indexed_a_batch_of_records_at_a_time(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's first write without a vouching checkpoint rebuilds the index from its offsets view: a list of every
    event's span held ~300 bytes an event (333 MB at 1,000,000 events). The index is built from the view's records a
    batch at a time instead, and comes out the same as one built from the decoded events."""
    from intentloop.store import LineEvents

    view = store.read()
    assert isinstance(view.events, LineEvents)
    expected = _index.rebuild_index(store.paths, decoded(store).events, view.byte_length)  # control: the listed path
    assert expected is not None
    want = _files(store.paths.project_dir / expected)

    def listed(*_args: object) -> object:
        raise AssertionError("the spans of every event were listed")

    monkeypatch.setattr(_index, "_entries", listed)
    monkeypatch.setattr(_index, "_SPAN_BATCH", 7)  # batches end inside the ledger, not only at its end
    built = _index.rebuild_index(store.paths, view.events, view.byte_length)
    assert built is not None and built != expected
    assert _files(store.paths.project_dir / built) == want
