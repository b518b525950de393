"""The task index built from a decoded view: every record names the byte span of its event's line in the file."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from intentloop.model import EventDraft, project_id_for
from intentloop.store import LockConfig, ProjectStore, _index, _project

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


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=CONFIG)
    with store.locked() as ledger:
        ledger.append([draft(t, f"start-{i}", "task_started") for i, t in enumerate(TASKS)])
        ledger.append([draft(TASKS[i % 3], f"r-{i}", payload={"n": i, "w": "é" * i}) for i in range(30)])
    _project._cache.drop(str(store.ledger_path))
    return store


def test_index_records_of_a_decoded_view_are_the_lines_of_the_file(store: ProjectStore) -> None:
    view = store.read()
    assert isinstance(view.events, tuple)  # a decoded view, as a hook holds it
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
    view = store.read()
    calls: list[object] = []
    real = _index.event_line
    monkeypatch.setattr(_index, "event_line", lambda event: calls.append(event) or real(event))
    entries = _index._entries(view.events, 0, view.byte_length)
    assert calls == []
    assert sum(len(spans) for name, spans in entries.items() if name != _index.BINDINGS) == len(view)


def test_lines_the_bulk_encoding_does_not_reproduce_are_measured_one_by_one(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = store.read()
    spans = spans_in_file(store.ledger_path.read_bytes())
    monkeypatch.setattr(_index, "_BULK", _Longer())  # as if a line held a float JavaScript writes differently
    entries = _index._entries(view.events, 0, view.byte_length)
    expected = [span for span, event in zip(spans, view.events, strict=True) if event.task_id == TASKS[0]]
    assert entries[f"t-{TASKS[0]}"] == expected


class _Longer:
    """A bulk encoder whose first line comes out one byte longer than the file's."""

    def encode_lines(self, events: object) -> bytes:
        data = _index.msgspec.json.Encoder(order="sorted").encode_lines(events)
        return b" " + data
