"""A resident service (the server's) without the history: tasks folded from their own events on demand by the store's
view, within a budget, and the ledger verified off the event loop before a call reads it."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from intentloop.model import project
from intentloop.store import LineEvents, _lines, _project
from intentloop.store._verify import verify_ledger_bytes


def _view(h: Any) -> Any:
    """The view the server's store holds (offsets, with its kept folds)."""
    cached = _project._cache.get(str(h.ledger))
    assert cached is not None and isinstance(cached.view.events, LineEvents)
    return cached.view


def _kept(h: Any) -> dict[str, Any]:
    return {task_id: task for task_id, (_count, task) in _view(h).events._table.folds._kept.items()}


def _full(h: Any) -> Any:
    """The projection of the whole ledger, every event decoded and folded."""
    check = verify_ledger_bytes(h.ledger.read_bytes(), project_id=h.project_id)
    assert check.error is None
    return project(check.events)


async def test_folded_tasks_stay_within_the_budget_and_answer_as_the_whole_fold(
    h: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_lines, "FOLD_BUDGET_EVENTS", 4)
    tasks = [await h.start(f"task {i}") for i in range(4)]
    for round_ in range(2):
        for task in tasks:
            await h.inferred(task, f"claim {round_} of {task}")
            await h.snapshot(task)
            kept = _kept(h)
            assert task in kept and sum(t.event_count for t in kept.values()) <= 4  # 3 events a task after round 0
    doomed = (await h.snapshot(tasks[0]))["active_claims"][0]["claim_id"]
    await h.call(
        "intent_invalidate",
        task_id=tasks[0],
        request_id=h.rid(),
        claim_id=doomed,
        reason="changed",
        source_ref=h.user_src(),
    )
    view, full = _view(h), _full(h)
    assert len(view.task_ids()) == len(full.tasks) == 4
    for task in tasks:
        folded, expected = view.task(task), full.tasks[task]
        assert folded.claims == expected.claims and folded.invalidations == expected.invalidations
        assert folded.event_count == expected.event_count and folded.requests == expected.requests
    status = await h.call("intent_status")
    assert status["task_count"] == 4


async def test_a_session_is_found_through_its_binding_events(h: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from intentloop.store._sessions import bound_in_view

    monkeypatch.setattr(_lines, "FOLD_BUDGET_EVENTS", 1)
    bound = await h.start("bound", host_session_id="session-a")
    other = await h.start("other")
    for i in range(3):
        await h.inferred(other, f"noise {i}")
    await h.fails("SESSION_ALREADY_ASSOCIATED", "intent_start_task", request_id=h.rid(), host_session_id="session-a")
    assert bound_in_view(_view(h), _hash("session-a")).task_id == bound  # type: ignore[union-attr]
    assert bound_in_view(_view(h), _hash("session-b")) is None
    monkeypatch.setattr(_lines, "FOLD_BUDGET_EVENTS", 1000)
    _view(h).events._table.folds._kept.clear()
    assert bound_in_view(_view(h), _hash("session-a")).task_id == bound  # type: ignore[union-attr]
    assert list(_kept(h)) == [bound]  # only the bound task was folded for the question, not the other


def _hash(session: str) -> str:
    from intentloop.model import session_hash

    return session_hash(session)


async def test_verification_runs_off_the_event_loop(make_harness: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """While one project's ledger is being verified (held here at a gate), calls on another project are answered:
    the verification runs in a worker thread. Inline on the loop, the small project's call could not finish before
    the gate opens, and the gate would time out."""
    big, small = make_harness(), make_harness()
    task = await big.start("big")
    await small.start("small")
    service = big.service
    small.service = service
    _project._cache.drop(str(big.ledger))  # the service must verify the big ledger again
    entered, gate = threading.Event(), threading.Event()
    real = _lines.stream_verify

    def held(*args: Any) -> Any:
        if args[2] == big.project_id:
            entered.set()
            if not gate.wait(60):
                raise AssertionError("the gate was never opened: the event loop was blocked")
        return real(*args)

    monkeypatch.setattr(_project, "stream_verify", held)
    answers: list[str] = []

    async def big_call() -> None:
        snap = await big.snapshot(task)
        answers.append(f"big:{snap['active_claims'][0]['statement']}")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(big_call)
        await trio.to_thread.run_sync(entered.wait, 60)
        assert entered.is_set()
        status = await small.call("intent_status")  # answered while the big ledger is still held
        answers.append(f"small:{status['task_count']}")
        gate.set()
    assert answers == ["small:1", "big:big"]


async def test_a_damaged_ledger_found_in_the_background_is_the_calls_error(h: Any) -> None:
    task = await h.start("kept")
    _project._cache.drop(str(h.ledger))
    data = h.ledger.read_bytes()
    h.ledger.write_bytes(data.replace(b'"kept"', b'"kapt"'))
    await h.fails("CORRUPT_LEDGER", "intent_get_snapshot", task_id=task)
    await h.fails("CORRUPT_LEDGER", "intent_get_snapshot", task_id=task)  # and again, from the cached verdict
    h.ledger.write_bytes(data)  # control: the original bytes answer
    assert (await h.snapshot(task))["active_claims"][0]["statement"] == "kept"


async def test_candidates_are_counted_and_signals_found_without_the_whole_history(
    h: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_lines, "FOLD_BUDGET_EVENTS", 1)  # every count and signal look-up reads back from the file
    first, second, quiet = await h.start("one"), await h.start("two"), await h.start("three")
    await h.inferred(quiet, "no candidate here")
    await h.inferred(first, "likes dark themes", scope="long_term", signal_key="theme")
    assert (await h.call("intent_status"))["candidate_count"] == 1
    candidate = await h.inferred(second, "likes dark themes again", scope="long_term", signal_key="theme")
    assert candidate["task_ids"] == sorted([first, second])  # the signal's earlier task, found by event type
    assert (await h.call("intent_status"))["candidate_count"] == 2  # a new carrier; the first one's count kept
    await h.inferred(first, "likes large fonts", scope="long_term", signal_key="fonts")
    assert (await h.call("intent_status"))["candidate_count"] == 3  # the first task grew: counted again
    full = _full(h)
    assert sum(len(t.candidates) for t in full.tasks.values()) == 3


def test_a_held_verification_neither_holds_a_cancelled_call_nor_the_end_of_the_run(
    make_harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verification is a supervised system task running a worker thread: a call cancelled while it waits returns
    at once, and the run ends (the server's shutdown) while the thread is still held; the next run verifies again."""
    h = make_harness()
    trio.run(h.start, "held")
    _project._cache.drop(str(h.ledger))
    entered, gate, released = threading.Event(), threading.Event(), threading.Event()
    real = _lines.stream_verify

    def held(*args: Any) -> Any:
        entered.set()
        gate.wait(30)
        released.set()
        return real(*args)

    monkeypatch.setattr(_project, "stream_verify", held)
    outcome: list[str] = []

    async def main() -> None:
        with trio.move_on_after(60) as scope:  # cancelled below, once the verification is known to be held
            async with trio.open_nursery() as nursery:
                nursery.start_soon(h.call, "intent_status")
                await trio.to_thread.run_sync(entered.wait, 60)
                nursery.cancel_scope.cancel()
        outcome.append("timed out" if scope.cancelled_caught else "call cancelled")

    trio.run(main)  # returns although the verification thread is still at the gate
    outcome.append("thread released first" if released.is_set() else "run ended, thread still held")
    gate.set()
    assert outcome == ["call cancelled", "run ended, thread still held"]
    assert trio.run(h.call, "intent_status")["task_count"] == 1


async def test_a_one_call_process_reads_the_task_alone_and_answers_the_same(h: Any) -> None:
    """A one-call process (a hook's /intent command, the CLI) reads the task through the store's task query (the
    task index, when the checkpoint vouches for the ledger) and keeps no view; the server keeps its view and folds.
    Both answer the same."""
    from intentloop.service.intent_service import IntentService

    task = await h.start("shared")
    await h.inferred(task, "one more")
    lean_answer = await h.snapshot(task)
    other = h.restarted()
    assert task in _kept(h)  # the server keeps the task's fold
    other.service = IntentService(lambda: h.data_root, resident=False)  # a hook's /intent command
    _project._cache.drop(str(h.ledger))
    plain_answer = await other.snapshot(task)
    assert not _project._cache.get(str(h.ledger))  # the ledger was not read whole
    assert plain_answer["active_claims"] == lean_answer["active_claims"]
    assert plain_answer["compact_text"] == lean_answer["compact_text"]
