"""``task_events_holding``: one task's events whose lines hold a needle, read through the task index (the lines of
that task only) with the answer of ``events_holding`` over the whole ledger, which it falls back to."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.store import ProjectStore, _rewrite, events_holding, task_events_holding
from intentloop.store._index import open_indexed

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_task_index import TASKS, seeded_store

STARTED = b'"event_type":"task_started"'


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = seeded_store(data_root)
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
