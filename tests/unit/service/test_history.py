"""History and time: ``intent_get_snapshot`` with ``as_of`` (record time) and ``include_history``."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
import trio

from intentloop.model import format_time, parse_time


def _times(h: Any) -> list[tuple[str, str]]:
    """(event_type, occurred_at) of every ledger line, in order."""
    return [(e["event_type"], e["occurred_at"]) for e in map(json.loads, h.ledger_lines())]


def _before(instant: str) -> str:
    return format_time(parse_time(instant) - timedelta(milliseconds=1))


def _statements(snapshot: dict[str, Any]) -> list[str]:
    return [c["statement"] for c in snapshot["active_claims"]]


async def test_as_of_before_and_after_a_replacement(h: Any) -> None:
    task = await h.start("first wording")
    await trio.sleep(0.01)
    [original] = (await h.snapshot(task))["active_claims"]
    await h.call(
        "intent_replace_claim",
        task_id=task,
        request_id=h.rid(),
        statement="second wording",
        source_ref=h.user_src(),
        facets=["outcome"],
        replacement_kind="explicit",
        confirmation_reason="direct_statement",
        supersedes=[original["claim_id"]],
    )
    (_, started), (_, replaced) = _times(h)
    assert parse_time(started) < parse_time(replaced)
    now = await h.snapshot(task)
    assert _statements(now) == ["second wording"]
    before = await h.call("intent_get_snapshot", task_id=task, as_of=_before(replaced))
    assert _statements(before) == ["first wording"]
    assert "first wording" in before["compact_text"] and "second wording" not in before["compact_text"]
    # "at or before": the instant of the replacement itself already shows it
    at = await h.call("intent_get_snapshot", task_id=task, as_of=replaced)
    assert _statements(at) == ["second wording"]
    # the task's start is its first visible instant; one millisecond earlier it did not exist
    assert _statements(await h.call("intent_get_snapshot", task_id=task, as_of=started)) == ["first wording"]
    await h.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=task, as_of=_before(started))


async def test_as_of_does_not_reach_another_task_or_another_project(h: Any, make_harness: Any) -> None:
    task = await h.start("alpha")
    other = await h.start("bravo")
    later = format_time(parse_time(_times(h)[-1][1]) + timedelta(days=1))
    assert _statements(await h.call("intent_get_snapshot", task_id=task, as_of=later)) == ["alpha"]
    assert _statements(await h.call("intent_get_snapshot", task_id=other, as_of=later)) == ["bravo"]
    stranger = make_harness()
    stranger.data_root, stranger.service = h.data_root, h.service
    await stranger.start("charlie")
    await stranger.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=task, as_of=later)


async def test_include_history_lists_superseded_and_invalidated_claims(h: Any) -> None:
    task = await h.start()
    kept = await h.explicit(task, "kept as is")
    old = await h.inferred(task, "old guess")
    wrong = await h.inferred(task, "wrong guess")
    new = await h.call(
        "intent_replace_claim",
        task_id=task,
        request_id=h.rid(),
        statement="better guess",
        source_ref=h.agent_src(),
        facets=["soft_constraint"],
        replacement_kind="inferred",
        confidence=0.7,
        supersedes=[old["claim_id"]],
    )
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id=h.rid(),
        claim_id=wrong["claim_id"],
        reason="the user said otherwise",
        source_ref=h.user_src(),
    )
    events = _times(h)
    snap = await h.call("intent_get_snapshot", task_id=task, include_history=True)
    assert _statements(snap) == ["kept as is", "better guess"]
    assert snap["history"] == [
        {"claim": old, "status": "superseded", "by": new["claim_id"], "at": events[-2][1], "reason": None},
        {
            "claim": wrong,
            "status": "invalidated",
            "by": None,
            "at": events[-1][1],
            "reason": "the user said otherwise",
        },
    ]
    assert kept["claim_id"] not in json.dumps(snap["history"])  # an active claim is not history
    # history as of an instant before the invalidation holds only the supersession
    past = await h.call("intent_get_snapshot", task_id=task, include_history=True, as_of=_before(events[-1][1]))
    assert [entry["status"] for entry in past["history"]] == ["superseded"]
    assert "wrong guess" in _statements(past)


async def test_without_the_new_arguments_the_answer_keeps_its_shape(h: Any) -> None:
    task = await h.start("alpha")
    plain = await h.snapshot(task)
    assert "history" not in plain
    explicit_default = await h.call("intent_get_snapshot", task_id=task, include_history=False)
    assert list(explicit_default) == list(plain)
    with_history = await h.call("intent_get_snapshot", task_id=task, include_history=True)
    assert list(with_history) == [*plain, "history"] and with_history["history"] == []


@pytest.mark.parametrize(
    "value",
    ["2026-02-30T00:00:00Z", "2026-01-01T00:00Z", "2026-01-01T00:00:00+01:00", "2026-01-01T00:00:00Z\n", "", 5],
)
async def test_as_of_must_be_a_real_utc_instant(h: Any, value: Any) -> None:
    task = await h.start("alpha")
    error = await h.fails("INVALID_ARGUMENTS", "intent_get_snapshot", task_id=task, as_of=value)
    assert "as_of" in error.message
    # positive control: a well-formed instant after the start is answered
    assert _statements(await h.call("intent_get_snapshot", task_id=task, as_of="2999-01-01T00:00:00Z")) == ["alpha"]


async def test_include_history_rejects_non_booleans(h: Any) -> None:
    task = await h.start("alpha")
    await h.fails("INVALID_ARGUMENTS", "intent_get_snapshot", task_id=task, include_history="yes")
    await h.fails("INVALID_ARGUMENTS", "intent_get_snapshot", task_id=task, include_history=None)


async def test_as_of_reads_a_private_task_from_memory(h: Any) -> None:
    task = await h.start("private start", mode="private", host_session_id="sess-p")
    await trio.sleep(0.01)
    await h.explicit(task, "private later")
    events = h.service._engine.private.get(h.project_id, task)
    first, last = events[0].occurred_at, events[-1].occurred_at
    assert parse_time(first) < parse_time(last)
    snap = await h.call("intent_get_snapshot", task_id=task, as_of=_before(last))
    assert (snap["mode"], _statements(snap)) == ("private", ["private start"])
    assert _statements(await h.snapshot(task)) == ["private start", "private later"]
    await h.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=task, as_of=_before(first))


async def test_as_of_takes_ascii_digits_only(h: Any) -> None:
    task = await h.start("first wording")
    snapshot = await h.call("intent_get_snapshot", task_id=task)
    now = snapshot["generated_at"]
    assert await h.call("intent_get_snapshot", task_id=task, as_of=now)  # control: the ASCII instant is accepted
    fullwidth = now.translate(str.maketrans("0123456789", "０１２３４５６７８９"))
    error = await h.fails("INVALID_ARGUMENTS", "intent_get_snapshot", task_id=task, as_of=fullwidth)
    assert "$.as_of" in error.message
