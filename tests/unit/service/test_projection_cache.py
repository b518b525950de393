"""The per-process projection is extended with new events only, and rebuilt when the chain was rewritten."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from intentloop.model import Event, ProjectState, project as real_project
from intentloop.service import _state


@pytest.fixture
def folded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    counts: list[int] = []

    def counting(events: Iterable[Event], state: ProjectState | None = None) -> ProjectState:
        items = list(events)
        counts.append(len(items))
        return real_project(items, state)

    monkeypatch.setattr(_state, "project", counting)
    return counts


def _state_of(h: Any) -> ProjectState:
    engine = h.service._engine
    (state,) = (s for store, s in engine._states.items() if store.project_id == h.project_id)
    return state


async def test_reads_and_writes_fold_only_new_events(h: Any, folded: list[int]) -> None:
    task = await h.start("a")
    for i in range(5):
        await h.inferred(task, f"claim {i}")
    folded.clear()
    for _ in range(3):
        await h.snapshot(task)
    assert sum(folded) == 0  # unchanged file: the cached projection answers
    await h.inferred(task, "one more")
    await h.snapshot(task)
    assert sum(folded) == 1
    state = _state_of(h)
    assert (
        state.event_count == 7
        and state.head_hash == h.service._engine._stores[(str(h.data_root), h.project_id)].read().head_hash
    )


async def test_writes_from_another_process_are_folded_incrementally(h: Any, folded: list[int]) -> None:
    task = await h.start("a")
    await h.snapshot(task)
    other = h.restarted()
    await other.inferred(task, "written elsewhere")
    await other.inferred(task, "and again")
    folded.clear()
    snap = await h.snapshot(task)
    assert folded == [2]
    assert len(snap["active_claims"]) == 3


async def test_a_rewritten_chain_is_projected_afresh(h: Any, folded: list[int]) -> None:
    task = await h.start("a")
    doomed = await h.inferred(task, "doomed")
    await h.inferred(task, "kept")
    before = _state_of(h)
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
    assert _state_of(h) is not before
