"""A server's folds of its tasks are extended with new events only, and folded afresh when the chain was rewritten."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from intentloop.model import Event, ProjectState, TaskState, projection
from intentloop.store import _project

real_project = projection.project


@pytest.fixture
def folded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counts: list[int] = []

    def counting(events: Iterable[Event], state: ProjectState | None = None) -> ProjectState:
        items = list(events)
        counts.append(len(items))
        return real_project(items, state)

    monkeypatch.setattr(projection, "project", counting)  # the store's fold imports it when it folds
    return counts


def _fold_of(h: Any, task_id: str) -> TaskState:
    cached = _project._cache.get(str(h.ledger))
    assert cached is not None
    task = cached.view.task(task_id)
    assert task is not None
    return task


async def test_reads_and_writes_fold_only_new_events(h: Any, folded: list[int]) -> None:
    task = await h.start("a")
    for i in range(5):
        await h.inferred(task, f"claim {i}")
    await h.snapshot(task)
    folded.clear()
    for _ in range(3):
        await h.snapshot(task)
    assert folded == []  # unchanged file: the kept fold answers
    await h.inferred(task, "one more")
    await h.snapshot(task)
    assert folded == [1]  # the write's own check folded nothing new; the read after it folds its event
    assert _fold_of(h, task).event_count == 7


async def test_writes_from_another_process_are_folded_incrementally(h: Any, folded: list[int]) -> None:
    task = await h.start("a")
    await h.snapshot(task)
    other = h.restarted()
    await other.inferred(task, "written elsewhere")
    await other.inferred(task, "and again")
    folded.clear()
    snap = await h.snapshot(task)
    # Both services share this process's store cache, so the other's writes may have folded some of the events
    # already; none folds the task's 3 events afresh.
    assert folded and all(count < 3 for count in folded)
    assert len(snap["active_claims"]) == 3


async def test_a_rewritten_chain_is_projected_afresh(h: Any, folded: list[int]) -> None:
    task = await h.start("a")
    doomed = await h.inferred(task, "doomed")
    await h.inferred(task, "kept")
    before = _fold_of(h, task)
    other = h.restarted()
    await other.call(
        "intent_delete",
        task_id=task,
        target="claim",
        claim_id=doomed["claim_id"],
        confirmation=f"DELETE CLAIM {doomed['claim_id']}",
    )
    folded.clear()
    snap = await h.snapshot(task)
    assert [c["statement"] for c in snap["active_claims"]] == ["a", "kept"]
    assert folded == [2]
    assert _fold_of(h, task) is not before
