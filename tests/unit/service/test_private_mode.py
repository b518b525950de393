"""Private mode: semantic state only in this process's memory, a hashed control on disk, fail-closed restarts."""

from __future__ import annotations

import itertools
import json
from typing import Any

from intentloop.model import session_hash

SECRET_STATEMENT = "the launch codename is BLUE-HERON-77"
NOTES = {
    "on": "Structured local persistence is enabled.",
    "off": "Semantic reads and writes are disabled.",
    "private": "Semantic changes are memory-only; a hashed control marker suppresses separate Hook processes.",
    "again": "Semantic changes remain memory-only; a hashed control marker suppresses separate Hook processes.",
    "discarded_on": "Private changes were discarded; the earlier durable task state is enabled again.",
    "discarded_off": "Private changes were discarded; durable semantic reads and writes are disabled.",
    "recovered_durable": (
        "Private in-memory semantics were unavailable after restart; a new empty durable task was explicitly enabled."
    ),
    "discarded_new_on": "Private changes were discarded; a new empty durable task is enabled.",
    "recovered_private": (
        "Prior private semantics were unavailable after restart; a new empty memory-only task is active."
    ),
}


def _controls(h: Any) -> list[dict[str, Any]]:
    directory = h.project_dir / "private-sessions"
    if not directory.exists():
        return []
    return [json.loads(p.read_text()) for p in sorted(directory.iterdir())]


async def _private_task(h: Any) -> str:
    task = await h.start(SECRET_STATEMENT, mode="private", host_session_id="sess-private", label="BLUE-HERON label")
    await h.inferred(task, "BLUE-HERON inference")
    await h.call(
        "intent_add_evidence",
        task_id=task,
        request_id=h.rid(),
        statement="BLUE-HERON evidence",
        source_ref={"kind": "tool_result", "event_id": "tool-1", "excerpt": "BLUE-HERON excerpt"},
        facets=["result_feedback"],
    )
    return task


async def test_private_mode_leaves_no_semantic_byte_on_disk(h: Any) -> None:
    durable = await h.start("durable statement that is allowed on disk")
    task = await _private_task(h)
    snap = await h.snapshot(task)
    assert snap["mode"] == "private"
    assert {c["statement"] for c in snap["active_claims"]} == {
        SECRET_STATEMENT,
        "BLUE-HERON inference",
        "BLUE-HERON evidence",
    }
    disk = h.disk_bytes()
    assert b"BLUE-HERON" not in disk
    assert b"durable statement that is allowed on disk" in disk  # positive control: the grep sees durable text
    (control,) = _controls(h)
    assert set(control) == {"created_at", "host_session_hash", "mode", "project_id", "schema_version", "task_id"}
    assert (control["task_id"], control["host_session_hash"], control["mode"]) == (
        task,
        session_hash("sess-private"),
        "private",
    )
    status = await h.call("intent_status", task_id=task)
    assert (status["mode"], status["data_directory"], status["active_claim_count"]) == ("private", None, 3)
    overall = await h.call("intent_status")
    assert (overall["private_tasks_in_process"], overall["private_session_control_count"], overall["task_count"]) == (
        1,
        1,
        1,
    )
    assert durable != task


async def test_private_events_are_hash_chained_in_memory(h: Any) -> None:
    task = await _private_task(h)
    events = h.service._engine.private.get(h.project_id, task)
    assert [e.event_type for e in events] == ["task_started", "claim_added", "claim_added"]
    assert events[0].prev_hash is None
    assert all(b.prev_hash == a.event_hash for a, b in itertools.pairwise(events))
    retry = await h.call(
        "intent_start_task",
        task_id=task,
        request_id="again",
        mode="private",
        host_session_id="sess-private",
    )
    assert len(retry["active_claims"]) == 3


async def test_restart_fails_closed_with_recovery_choices(h: Any) -> None:
    task = await _private_task(h)
    after = h.restarted()
    status = await after.call("intent_status", task_id=task)
    assert status == {
        "project_id": h.project_id,
        "task_id": task,
        "mode": "private",
        "active_claim_count": 0,
        "candidate_count": 0,
        "semantic_state_available": False,
        "recovery_action": (
            "Explicitly set mode to on/off to create an empty durable task, resume private, or delete the task."
        ),
        "data_directory": None,
        "schema_version": 1,
    }
    for tool in ("intent_get_snapshot", "intent_list_candidates", "intent_export"):
        await after.fails("PRIVATE_SESSION_ACTIVE", tool, task_id=task)
    # positive control: the process that owns the private state still reads it
    assert (await h.snapshot(task))["mode"] == "private"


async def test_recovery_choice_on_creates_an_empty_durable_task(h: Any) -> None:
    task = await _private_task(h)
    after = h.restarted()
    result = await after.call("intent_set_mode", task_id=task, request_id="recover", mode="on")
    assert result == {"mode": "on", "persistence_note": NOTES["recovered_durable"]}
    assert _controls(h) == []
    snap = await after.snapshot(task)
    assert (snap["mode"], snap["active_claims"]) == ("on", [])
    started = json.loads(h.ledger_lines()[-1])
    assert started["event_type"] == "task_started"
    assert started["payload"]["recovered_from_private"] is True
    assert started["payload"]["host_session_hash"] == session_hash("sess-private")
    # the old process's private ledger is now orphaned: it fails closed instead of writing
    await h.fails("PRIVATE_CONTROL_MISSING", "intent_get_snapshot", task_id=task)
    assert b"BLUE-HERON" not in h.disk_bytes()


async def test_recovery_choice_off(h: Any) -> None:
    task = await _private_task(h)
    after = h.restarted()
    assert await after.call("intent_set_mode", task_id=task, request_id="off", mode="off") == {
        "mode": "off",
        "persistence_note": NOTES["off"],
    }
    await after.fails("MODE_OFF", "intent_get_snapshot", task_id=task)


async def test_recovery_choice_resume_private_is_empty(h: Any) -> None:
    task = await _private_task(h)
    after = h.restarted()
    result = await after.call("intent_set_mode", task_id=task, request_id="resume", mode="private")
    assert result == {"mode": "private", "persistence_note": NOTES["recovered_private"]}
    snap = await after.snapshot(task)
    assert (snap["mode"], snap["active_claims"]) == ("private", [])
    assert len(_controls(h)) == 1
    assert not h.ledger.exists()


async def test_recovery_choice_delete_removes_the_control(h: Any) -> None:
    task = await _private_task(h)
    after = h.restarted()
    result = await after.call("intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}")
    assert result["deleted"] == "task"
    assert _controls(h) == []
    await after.fails("TASK_NOT_FOUND", "intent_status", task_id=task)


async def test_leaving_private_discards_private_changes(h: Any) -> None:
    task = await h.start("durable claim", host_session_id="sess-1")
    assert await h.call("intent_set_mode", task_id=task, request_id="p", mode="private") == {
        "mode": "private",
        "persistence_note": NOTES["private"],
    }
    assert await h.call("intent_set_mode", task_id=task, request_id="p2", mode="private") == {
        "mode": "private",
        "persistence_note": NOTES["again"],
    }
    await h.inferred(task, "private only inference")
    assert len((await h.snapshot(task))["active_claims"]) == 2
    lines_before = len(h.ledger_lines())
    assert await h.call("intent_set_mode", task_id=task, request_id="on", mode="on") == {
        "mode": "on",
        "persistence_note": NOTES["discarded_on"],
    }
    snap = await h.snapshot(task)
    assert [c["statement"] for c in snap["active_claims"]] == ["durable claim"]
    assert len(h.ledger_lines()) == lines_before + 1
    assert _controls(h) == []
    assert b"private only inference" not in h.disk_bytes()
    await h.call("intent_set_mode", task_id=task, request_id="p3", mode="private")
    assert await h.call("intent_set_mode", task_id=task, request_id="off", mode="off") == {
        "mode": "off",
        "persistence_note": NOTES["discarded_off"],
    }


async def test_leaving_a_task_private_from_its_start_in_the_same_process(h: Any) -> None:
    task = await _private_task(h)
    assert await h.call("intent_set_mode", task_id=task, request_id="on", mode="on") == {
        "mode": "on",
        "persistence_note": NOTES["discarded_new_on"],  # no restart happened: the restart wording would be false
    }
    snap = await h.snapshot(task)
    assert snap["mode"] == "on" and snap["active_claims"] == []
    assert _controls(h) == []
    assert b"BLUE-HERON" not in h.disk_bytes()


async def test_restart_of_a_durable_task_made_private_resumes_from_durable_state(h: Any) -> None:
    task = await h.start("durable claim", host_session_id="sess-1")
    await h.call("intent_set_mode", task_id=task, request_id="p", mode="private")
    await h.inferred(task, "lost with the process")
    after = h.restarted()
    await after.fails("PRIVATE_SESSION_ACTIVE", "intent_status", task_id=task)
    assert await after.call("intent_set_mode", task_id=task, request_id="p-again", mode="private") == {
        "mode": "private",
        "persistence_note": NOTES["private"],
    }
    assert [c["statement"] for c in (await after.snapshot(task))["active_claims"]] == ["durable claim"]


async def test_starting_on_with_the_session_re_enables_durable_state(h: Any) -> None:
    task = await h.start("durable", host_session_id="sess-1")
    await h.call("intent_set_mode", task_id=task, request_id="p", mode="private")
    snap = await h.call("intent_start_task", task_id=task, request_id="back", host_session_id="sess-1")
    assert snap["mode"] == "on"
    assert _controls(h) == []
    # what the public status reports (no test-only accessor on the service)
    assert (await h.call("intent_status"))["private_tasks_in_process"] == 0


async def test_private_start_without_durable_task_writes_no_ledger(h: Any) -> None:
    await _private_task(h)
    assert not h.ledger.exists()
    assert sorted(p.name for p in h.project_dir.iterdir()) == ["private-sessions"]
