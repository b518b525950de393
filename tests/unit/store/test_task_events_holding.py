"""``task_events_holding``: one task's events whose lines hold a needle, read through the task index (the lines of
that task only) with the answer of ``events_holding`` over the whole ledger, which it falls back to."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import EventDraft, project_id_for
from intentloop.store import LockConfig, ProjectStore, _project, _rewrite, events_holding, task_events_holding
from intentloop.store._index import open_indexed

PID = project_id_for("/task/events/holding")
TASKS = [str(uuid.uuid4()) for _ in range(3)]
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)
STARTED = b'"event_type":"task_started"'


def draft(task: str, request_id: str, kind: str = "claim_added", payload: dict[str, Any] | None = None) -> EventDraft:
    return EventDraft(event_type=kind, task_id=task, actor="user", request_id=request_id, payload=payload or {})


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=CONFIG)
    with store.locked() as ledger:
        ledger.append([draft(t, f"start-{i}", "task_started") for i, t in enumerate(TASKS)])
        ledger.append([draft(TASKS[i % 3], f"r-{i}", payload={"n": i, "w": "é" * i}) for i in range(30)])
    _project._cache.drop(str(store.ledger_path))
    indexed = open_indexed(store.paths)
    assert indexed is not None  # the checkpoint vouches for the file: the index answers
    indexed.close()
    return store


def expected(store: ProjectStore, task: str, needles: list[bytes]) -> list[Any]:
    return [event for event in events_holding(store.paths, needles) if event.task_id == task]


def test_the_index_answers_what_a_pass_over_the_ledger_answers(
    store: ProjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    needles = [b'"n":3,', b'"n":6,', STARTED]
    wanted = expected(store, TASKS[0], needles)
    assert [e.request_id for e in wanted] == ["start-0", "r-3", "r-6"]

    def no_pass(*_args: Any) -> Any:
        raise AssertionError("read the whole ledger")

    monkeypatch.setattr(_rewrite, "_lines_holding", no_pass)
    assert task_events_holding(store.paths, TASKS[0], needles) == wanted
    assert task_events_holding(store.paths, TASKS[1], needles) == expected_started(store, TASKS[1])


def expected_started(store: ProjectStore, task: str) -> list[Any]:
    return [e for e in _rewrite.task_events(store.paths, task) if e.event_type == "task_started"]


def test_without_a_checkpoint_the_ledger_is_read(store: ProjectStore) -> None:
    needles = [b'"n":4,', STARTED]
    wanted = expected(store, TASKS[1], needles)
    (store.paths.project_dir / "ledger.checkpoint.json").unlink()
    assert open_indexed(store.paths) is None
    assert task_events_holding(store.paths, TASKS[1], needles) == wanted


def test_a_record_naming_another_tasks_line_is_not_trusted(store: ProjectStore) -> None:
    """A task file holding another task's records (the same count, so the sealed counts hold): its lines hold none
    of the needles, yet the answer is not an empty list — the line is seen not to be the task's, the index is not
    trusted and the ledger is read."""
    needles = [b'"n":3,']
    wanted = expected(store, TASKS[0], needles)
    assert [e.request_id for e in wanted] == ["r-3"]
    indexed = open_indexed(store.paths)
    assert indexed is not None
    directory = indexed.directory
    indexed.close()
    mine, other = directory / f"t-{TASKS[0]}", directory / f"t-{TASKS[1]}"
    assert mine.stat().st_size == other.stat().st_size
    mine.write_bytes(other.read_bytes())
    assert task_events_holding(store.paths, TASKS[0], needles) == wanted
