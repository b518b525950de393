"""Every error code the service can raise, each beside a positive control that the same call shape succeeds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from intentloop.errors import IntentLoopError
from intentloop.model import EventDraft
from intentloop.service.intent_service import IntentService
from intentloop.store import PrivateControl, ProjectStore

NIL = "00000000-0000-0000-0000-000000000000"
UNKNOWN_TASK = "5f0c7c52-2f67-4a7e-9d2d-1b0e6b8f3a11"
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _unknown(h: Any, task: str, **extra: Any) -> dict[str, Any]:
    base = {
        "task_id": task,
        "request_id": h.rid(),
        "statement": "which database",
        "source_ref": h.agent_src(),
        "facets": ["tradeoff"],
    }
    return {**base, **extra}


async def test_invalid_arguments(h: Any) -> None:
    error = await h.fails("INVALID_ARGUMENTS", "intent_get_snapshot", task_id=UNKNOWN_TASK, max_characters="x")
    assert "$.max_characters" in error.message
    await h.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=UNKNOWN_TASK, max_characters=600)


async def test_invalid_id(h: Any) -> None:
    await h.fails("INVALID_ID", "intent_get_snapshot", task_id=NIL)
    await h.fails("INVALID_ID", "intent_status", task_id="ffffffff-ffff-ffff-ffff-ffffffffffff")
    task = await h.start()
    await h.fails("INVALID_ID", "intent_mark_dispute", **_unknown(h, task, related_claim_ids=[NIL]))
    await h.fails("INVALID_ID", "intent_start_task", task_id=NIL)
    assert await h.call("intent_mark_unknown", **_unknown(h, task))


async def test_invalid_request_id(h: Any) -> None:
    task = await h.start()
    # The published pattern (Python's ``$``) lets one trailing newline through; the service refuses it.
    await h.fails("INVALID_REQUEST_ID", "intent_mark_unknown", **_unknown(h, task, request_id="abc\n"))
    await h.fails("INVALID_REQUEST_ID", "intent_start_task", request_id="start\n")
    assert await h.call("intent_mark_unknown", **_unknown(h, task, request_id="abc"))


async def test_sensitive_id_rejected(h: Any) -> None:
    task = await h.start()
    await h.fails("SENSITIVE_ID_REJECTED", "intent_mark_unknown", **_unknown(h, task, request_id=GITHUB_TOKEN))
    await h.fails(
        "SENSITIVE_ID_REJECTED", "intent_mark_unknown", **_unknown(h, task, source_ref=h.agent_src(GITHUB_TOKEN))
    )
    await h.fails(
        "SENSITIVE_ID_REJECTED",
        "intent_add_inference",
        **{
            **_unknown(h, task),
            "confidence": 0.5,
            "scope": "long_term",
            "signal_key": GITHUB_TOKEN,
        },
    )
    # a UUID-looking request id is only high-entropy, not a credential
    assert await h.call("intent_mark_unknown", **_unknown(h, task, request_id="9b0f3c4e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"))
    assert GITHUB_TOKEN.encode() not in h.disk_bytes()


async def test_invalid_source(h: Any) -> None:
    task = await h.start()
    await h.fails("INVALID_SOURCE", "intent_mark_unknown", **_unknown(h, task, source_ref={"kind": "agent_turn"}))
    await h.fails(
        "INVALID_SOURCE",
        "intent_mark_unknown",
        **_unknown(h, task, source_ref={"kind": "agent_turn", "event_id": "a b"}),
    )
    await h.fails(
        "INVALID_SOURCE",
        "intent_add_explicit",
        **{
            **_unknown(h, task),
            "confirmation_reason": "direct_statement",
        },
    )
    await h.fails(
        "INVALID_SOURCE",
        "intent_add_evidence",
        **_unknown(
            h,
            task,
            source_ref={
                "kind": "explicit_import",
                "sha256": "c" * 64,
            },
        ),
    )
    await h.fails(
        "INVALID_SOURCE",
        "intent_add_inference",
        **{
            **_unknown(h, task, source_ref={"kind": "tool_result", "event_id": "t"}),
            "confidence": 0.4,
            "scope": "long_term",
        },
    )
    assert await h.call(
        "intent_add_evidence", **_unknown(h, task, source_ref={"kind": "tool_result", "sha256": "c" * 64})
    )


async def test_invalid_label(h: Any) -> None:
    await h.fails("INVALID_LABEL", "intent_start_task", label="x" * 121)
    assert await h.call("intent_start_task", label="x" * 120)


async def test_task_not_found_for_unknown_other_project_and_deleted_tasks(h: Any, make_harness: Any) -> None:
    await h.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=UNKNOWN_TASK)
    task = await h.start("mine")
    other = make_harness()
    other.service = h.service  # same process, same data root, another project
    other.data_root = h.data_root
    for tool in ("intent_get_snapshot", "intent_list_candidates", "intent_export", "intent_status"):
        await other.fails("TASK_NOT_FOUND", tool, task_id=task)
    await other.fails("TASK_NOT_FOUND", "intent_mark_unknown", **_unknown(other, task))
    await other.fails("TASK_NOT_FOUND", "intent_set_mode", task_id=task, request_id="m", mode="off")
    await other.fails(
        "TASK_NOT_FOUND", "intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}"
    )
    assert (await h.snapshot(task))["active_claims"][0]["statement"] == "mine"


async def test_invalid_statement_and_raw_prompt(h: Any) -> None:
    task = await h.start()
    await h.fails("INVALID_STATEMENT", "intent_mark_unknown", **_unknown(h, task, statement="   "))
    await h.fails("RAW_PROMPT_REJECTED", "intent_mark_unknown", **_unknown(h, task, statement="line one\nline two"))
    await h.fails("RAW_PROMPT_REJECTED", "intent_start_task", initial_explicit=["a\r\nb"])
    await h.fails("INVALID_STATEMENT", "intent_mark_unknown", **_unknown(h, task, statement="y" * 501))
    await h.fails(
        "INVALID_STATEMENT",
        "intent_invalidate",
        task_id=task,
        request_id="i",
        claim_id=UNKNOWN_TASK,
        reason="r" * 241,
        source_ref=h.agent_src(),
    )
    assert await h.call("intent_mark_unknown", **_unknown(h, task, statement="y" * 500))


async def test_request_id_reused(h: Any) -> None:
    task = await h.start()
    first = await h.call("intent_mark_unknown", **_unknown(h, task, request_id="same"))
    assert await h.call("intent_mark_unknown", **_unknown(h, task, request_id="same")) == first
    await h.fails("REQUEST_ID_REUSED", "intent_mark_unknown", **_unknown(h, task, request_id="same", statement="other"))
    await h.fails("REQUEST_ID_REUSED", "intent_add_evidence", **_unknown(h, task, request_id="same"))
    await h.call("intent_start_task", request_id="s1", initial_explicit=["a"])
    await h.fails("REQUEST_ID_REUSED", "intent_start_task", request_id="s1", initial_explicit=["b"])
    started = await h.start(request_id="s2")
    await h.fails("REQUEST_ID_REUSED", "intent_set_mode", task_id=started, request_id="s2", mode="on")


async def test_mode_off_semantic_input(h: Any) -> None:
    await h.fails("MODE_OFF_SEMANTIC_INPUT", "intent_start_task", mode="off", label="secret project")
    await h.fails("MODE_OFF_SEMANTIC_INPUT", "intent_start_task", mode="off", initial_explicit=["x"])
    snap = await h.call("intent_start_task", mode="off", label="   ")
    assert snap["mode"] == "off"


async def test_private_session_token_required(h: Any) -> None:
    await h.fails("PRIVATE_SESSION_TOKEN_REQUIRED", "intent_start_task", mode="private")
    task = await h.start()
    await h.fails("PRIVATE_SESSION_TOKEN_REQUIRED", "intent_set_mode", task_id=task, request_id="p", mode="private")
    linked = await h.start(host_session_id="sess-a")
    assert (await h.call("intent_set_mode", task_id=linked, request_id="p", mode="private"))["mode"] == "private"


async def test_task_already_started(h: Any) -> None:
    task = await h.start("first")
    await h.fails("TASK_ALREADY_STARTED", "intent_start_task", task_id=task, request_id="again", initial_explicit=["x"])
    assert (await h.call("intent_start_task", task_id=task, request_id="again"))["task_id"] == task


async def test_session_already_associated(h: Any) -> None:
    await h.start(host_session_id="sess-1")
    await h.fails("SESSION_ALREADY_ASSOCIATED", "intent_start_task", request_id="b", host_session_id="sess-1")
    await h.fails(
        "SESSION_ALREADY_ASSOCIATED", "intent_start_task", request_id="c", mode="private", host_session_id="sess-1"
    )
    assert await h.start(host_session_id="sess-2")


async def test_corrupt_private_state(h: Any) -> None:
    task = await h.start("x")
    store = ProjectStore(h.data_root, h.project_id)
    with store.locked() as locked:
        locked.append(
            [
                EventDraft(
                    event_type="mode_set", task_id=task, actor="user", request_id="bad", payload={"mode": "private"}
                )
            ]
        )
    await h.fails("CORRUPT_PRIVATE_STATE", "intent_get_snapshot", task_id=task)
    await h.fails("CORRUPT_PRIVATE_STATE", "intent_mark_unknown", **_unknown(h, task))
    # deletion is the way out
    assert (await h.call("intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}"))[
        "deleted"
    ] == "task"


async def test_private_control_missing(h: Any) -> None:
    task = await h.start(mode="private", host_session_id="sess-p")
    assert (await h.snapshot(task))["mode"] == "private"
    for path in (h.project_dir / "private-sessions").iterdir():
        path.unlink()
    await h.fails("PRIVATE_CONTROL_MISSING", "intent_get_snapshot", task_id=task)
    await h.fails("PRIVATE_CONTROL_MISSING", "intent_mark_unknown", **_unknown(h, task))


async def test_private_session_active(h: Any) -> None:
    task = await h.start("durable", host_session_id="sess-x")
    await h.call("intent_set_mode", task_id=task, request_id="p", mode="private")
    other = h.restarted()
    error = await other.fails("PRIVATE_SESSION_ACTIVE", "intent_get_snapshot", task_id=task)
    assert "set the mode to on or off" in error.message and "delete the task" in error.message
    await other.fails("PRIVATE_SESSION_ACTIVE", "intent_mark_unknown", **_unknown(other, task))
    await other.fails("PRIVATE_SESSION_ACTIVE", "intent_status", task_id=task)
    await other.fails("PRIVATE_SESSION_ACTIVE", "intent_start_task", task_id=task, request_id="again")
    assert (await h.snapshot(task))["mode"] == "private"


async def test_private_control_mismatch(h: Any) -> None:
    task = await h.start(host_session_id="sess-1")
    # the same task made private from another session (another process), then that process is gone
    await h.restarted().call(
        "intent_start_task", task_id=task, request_id="p", mode="private", host_session_id="sess-2"
    )
    await h.restarted().fails("PRIVATE_CONTROL_MISMATCH", "intent_set_mode", task_id=task, request_id="on", mode="on")
    await h.restarted().fails(
        "PRIVATE_CONTROL_MISMATCH", "intent_set_mode", task_id=task, request_id="pv", mode="private"
    )
    assert await h.restarted().call("intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}")


async def test_private_session_owned_and_task_owned(h: Any) -> None:
    first = await h.start(mode="private", host_session_id="sess-1", request_id="p1")
    await h.fails(
        "PRIVATE_SESSION_OWNED", "intent_start_task", mode="private", host_session_id="sess-1", request_id="p2"
    )
    await h.restarted().fails(
        "PRIVATE_TASK_OWNED",
        "intent_start_task",
        task_id=first,
        mode="private",
        host_session_id="sess-9",
        request_id="p3",
    )
    assert await h.start(mode="private", host_session_id="sess-2", request_id="p4")


async def test_private_control_conflict_and_corrupt_control(h: Any) -> None:
    task = await h.start(host_session_id="sess-1")
    assert (await h.call("intent_status", task_id=task))["mode"] == "on"
    store = ProjectStore(h.data_root, h.project_id)
    with store.locked() as locked:
        for session in ("a" * 64, "b" * 64):
            locked.write_control(
                PrivateControl(
                    created_at="2026-01-01T00:00:00.000Z",
                    host_session_hash=session,
                    project_id=h.project_id,
                    task_id=task,
                )
            )
    await h.fails("PRIVATE_CONTROL_CONFLICT", "intent_status", task_id=task)
    (h.project_dir / "private-sessions" / ("b" * 64 + ".json")).write_text("{not json")
    await h.fails("CORRUPT_PRIVATE_CONTROL", "intent_status", task_id=task)


async def test_mode_off(h: Any) -> None:
    task = await h.start("x")
    claim = await h.inferred(task, "y")
    await h.call("intent_set_mode", task_id=task, request_id="off", mode="off")
    for tool in ("intent_get_snapshot", "intent_list_candidates", "intent_export"):
        await h.fails("MODE_OFF", tool, task_id=task)
    await h.fails("MODE_OFF", "intent_mark_unknown", **_unknown(h, task))
    await h.fails(
        "MODE_OFF",
        "intent_invalidate",
        task_id=task,
        request_id="i",
        claim_id=claim["claim_id"],
        reason="no",
        source_ref=h.agent_src(),
    )
    assert (await h.call("intent_status", task_id=task))["mode"] == "off"
    await h.call("intent_set_mode", task_id=task, request_id="on", mode="on")
    assert await h.call("intent_mark_unknown", **_unknown(h, task))


async def test_replace_prechecks(h: Any) -> None:
    task = await h.start()
    target = await h.inferred(task, "old")

    def replace(**extra: Any) -> dict[str, Any]:
        return {**_unknown(h, task), "supersedes": [target["claim_id"]], **extra}

    await h.fails(
        "EXPLICIT_SOURCE_REQUIRED",
        "intent_replace_claim",
        **replace(replacement_kind="explicit", confirmation_reason="direct_statement"),
    )
    await h.fails(
        "EXPLICIT_SOURCE_REQUIRED",
        "intent_replace_claim",
        **replace(replacement_kind="explicit", source_ref=h.user_src()),
    )
    await h.fails("CONFIDENCE_REQUIRED", "intent_replace_claim", **replace(replacement_kind="inferred"))
    await h.fails(
        "LONG_TERM_CONFIRMATION_REQUIRED",
        "intent_replace_claim",
        **replace(replacement_kind="inferred", confidence=0.5, scope="long_term"),
    )
    await h.fails(
        "CONFIDENCE_NOT_ALLOWED", "intent_replace_claim", **replace(replacement_kind="evidence", confidence=0.5)
    )
    new = await h.call("intent_replace_claim", **replace(replacement_kind="inferred", confidence=0.5))
    assert new["supersedes"] == [target["claim_id"]]


async def test_claim_not_active_and_explicit_protection(h: Any) -> None:
    task = await h.start()
    explicit = await h.explicit(task, "no new dependencies")
    await h.fails(
        "EXPLICIT_REPLACEMENT_REQUIRES_USER",
        "intent_replace_claim",
        **{
            **_unknown(h, task),
            "replacement_kind": "evidence",
            "supersedes": [explicit["claim_id"]],
        },
    )
    await h.fails(
        "EXPLICIT_INVALIDATION_REQUIRES_USER",
        "intent_invalidate",
        task_id=task,
        request_id="i1",
        claim_id=explicit["claim_id"],
        reason="tool says so",
        source_ref={"kind": "tool_result", "event_id": "t"},
    )
    assert await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="i2",
        claim_id=explicit["claim_id"],
        reason="user changed mind",
        source_ref=h.user_src(),
    )
    await h.fails(
        "CLAIM_NOT_ACTIVE",
        "intent_invalidate",
        task_id=task,
        request_id="i3",
        claim_id=explicit["claim_id"],
        reason="again",
        source_ref=h.user_src(),
    )
    await h.fails(
        "CLAIM_NOT_ACTIVE",
        "intent_replace_claim",
        **{
            **_unknown(h, task),
            "replacement_kind": "unknown",
            "supersedes": [explicit["claim_id"]],
        },
    )


async def test_related_claim_not_found_and_invalid_dispute(h: Any) -> None:
    task = await h.start()
    await h.fails(
        "RELATED_CLAIM_NOT_FOUND", "intent_mark_dispute", **_unknown(h, task, related_claim_ids=[UNKNOWN_TASK])
    )
    await h.fails("INVALID_DISPUTE", "intent_mark_dispute", **_unknown(h, task, statement="   "))
    real = await h.inferred(task, "z")
    assert await h.call("intent_mark_dispute", **_unknown(h, task, related_claim_ids=[real["claim_id"]]))


async def test_invalid_signal_key_and_long_term_confirmation(h: Any) -> None:
    task = await h.start()
    inference = {**_unknown(h, task), "confidence": 0.5, "scope": "long_term"}
    await h.fails("INVALID_SIGNAL_KEY", "intent_add_inference", **{**inference, "signal_key": "has space"})
    assert await h.call("intent_add_inference", **{**inference, "request_id": h.rid(), "signal_key": "ok.key"})
    await h.fails(
        "LONG_TERM_CONFIRMATION_REQUIRED",
        "intent_add_explicit",
        task_id=task,
        request_id="lt",
        statement="prefers dark mode",
        source_ref=h.user_src(),
        facets=["soft_constraint"],
        scope="long_term",
        confirmation_reason="confirmed_candidate",
    )
    assert await h.explicit(task, "prefers dark mode", scope="long_term", confirmation_reason="direct_statement")


async def test_confirmation_and_claim_id_required(h: Any) -> None:
    task = await h.start()
    claim = await h.inferred(task, "x")
    await h.fails("CONFIRMATION_REQUIRED", "intent_delete", task_id=task, target="task", confirmation="yes delete it")
    await h.fails(
        "CONFIRMATION_REQUIRED",
        "intent_delete",
        task_id=task,
        target="claim",
        claim_id=claim["claim_id"],
        confirmation=f"DELETE TASK {task}",
    )
    await h.fails("CLAIM_ID_REQUIRED", "intent_delete", task_id=task, target="claim", confirmation="DELETE CLAIM")
    await h.fails(
        "CLAIM_NOT_FOUND",
        "intent_delete",
        task_id=task,
        target="claim",
        claim_id=UNKNOWN_TASK,
        confirmation=f"DELETE CLAIM {UNKNOWN_TASK}",
    )
    assert await h.call(
        "intent_delete",
        task_id=task,
        target="claim",
        claim_id=claim["claim_id"],
        confirmation=f"DELETE CLAIM {claim['claim_id']}",
    )


async def test_delete_verification_failed(h: Any) -> None:
    task = await h.start("x")
    stray = h.project_dir / "notes.txt"
    stray.write_text(f"someone copied {task} here")
    await h.fails(
        "DELETE_VERIFICATION_FAILED", "intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}"
    )
    assert (await h.snapshot(task))["active_claims"]  # refused before anything was rewritten
    stray.unlink()
    assert await h.call("intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}")


async def test_corrupt_ledger_is_reported_with_the_line(h: Any) -> None:
    task = await h.start("x")
    await h.inferred(task, "y")
    assert await h.snapshot(task)
    lines = h.ledger.read_bytes().splitlines(keepends=True)
    h.ledger.write_bytes(lines[0] + lines[1].replace(b'"y"', b'"z"'))
    error = await h.fails("CORRUPT_LEDGER", "intent_get_snapshot", task_id=task)
    assert "2" in error.message
    await h.fails("CORRUPT_LEDGER", "intent_mark_unknown", **_unknown(h, task))


async def test_data_dir_required(h: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("INTENT_LOOP_DATA_DIR", "CODEX_HOME", "PLUGIN_DATA", "HOME"):
        monkeypatch.delenv(name, raising=False)
    service = IntentService()
    with pytest.raises(IntentLoopError) as info:
        await service.dispatch("intent_status", {}, project_root=h.project_root, project_id=h.project_id)
    assert info.value.code == "DATA_DIR_REQUIRED"
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", str(h.data_root))
    assert (await service.dispatch("intent_status", {}, project_root=h.project_root, project_id=h.project_id))[
        "task_count"
    ] == 0


async def test_lock_timeout(h: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, autojump_clock: Any) -> None:
    # The service waits for the lock on trio's clock: the 0.3 s window passes in virtual time.
    task = await h.start()
    monkeypatch.setenv("INTENT_LOOP_LOCK_WAIT_S", "0.3")
    monkeypatch.setenv("INTENT_LOOP_LOCK_CEILING_S", "0.6")
    fresh = h.restarted()
    store = ProjectStore(h.data_root, h.project_id)
    with store.locked():
        waited_from = trio.current_time()
        error = await fresh.fails("LOCK_TIMEOUT", "intent_mark_unknown", **_unknown(fresh, task))
        assert error.retryable
        assert trio.current_time() - waited_from >= 0.3  # the wait ran on trio's clock, not on a blocked thread
        assert (await fresh.snapshot(task))["task_id"] == task  # reads never wait for the lock
    assert await fresh.call("intent_mark_unknown", **_unknown(fresh, task))
    assert os.path.isdir(h.project_dir)


async def test_corrupt_trailing_event_is_retryable_and_the_next_write_repairs_it(h: Any) -> None:
    task = await h.start("x")
    h.ledger.write_bytes(h.ledger.read_bytes() + b'{"torn')
    error = await h.fails("CORRUPT_TRAILING_EVENT", "intent_get_snapshot", task_id=task)
    assert error.retryable
    assert await h.call("intent_mark_unknown", **_unknown(h, task))
    assert len((await h.snapshot(task))["unknowns"]) == 1


async def test_calls_on_unknown_tasks_create_no_storage(h: Any) -> None:
    for tool in ("intent_get_snapshot", "intent_list_candidates", "intent_export", "intent_status"):
        await h.fails("TASK_NOT_FOUND", tool, task_id=UNKNOWN_TASK)
    for mode in ("private", "on", "off"):
        await h.fails("TASK_NOT_FOUND", "intent_set_mode", task_id=UNKNOWN_TASK, request_id="m", mode=mode)
    await h.fails("TASK_NOT_FOUND", "intent_mark_unknown", **_unknown(h, UNKNOWN_TASK))
    await h.fails(
        "TASK_NOT_FOUND",
        "intent_delete",
        task_id=UNKNOWN_TASK,
        target="task",
        confirmation=f"DELETE TASK {UNKNOWN_TASK}",
    )
    assert not h.data_root.exists()
    await h.start()
    assert h.ledger.exists()  # positive control: a write does create it
