"""The seven capability marks of seed 004, one named test each, each with a positive control beside the refusal."""

from __future__ import annotations

import itertools
import json
from typing import Any

import trio

from intentloop.errors import CorruptLedgerError
from intentloop.model import hook_context_text, parse_time, project_task
from intentloop.store import ProjectStore

OLD = "2025-01-01T00:00:00.000Z"


def _claim(claim_id: str, statement: str, status: str, role: str, **extra: Any) -> dict[str, Any]:
    return {
        "claim_id": claim_id,
        "statement": statement,
        "role": role,
        "epistemic_status": status,
        "source_ref": {"kind": "user_event", "event_id": "old-turn"},
        "scope": "task",
        "valid_from": OLD,
        "last_confirmed": None,
        "supersedes": [],
        "facets": ["outcome"],
        "related_claim_ids": [],
        **extra,
    }


def _graph(*claims: dict[str, Any], invalidated: list[str] | None = None) -> dict[str, Any]:
    return {
        "format": "intent-loop-export",
        "schema_version": 1,
        "exported_at": "2025-02-01T00:00:00.000Z",
        "source_project_id": "e" * 64,
        "source_task_id": "7a1c2b3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        "history_complete": False,
        "claims": list(claims),
        "invalidated_claim_ids": invalidated or [],
        "candidates": [],
    }


def _current_text(snapshot: dict[str, Any]) -> str:
    return json.dumps(snapshot["active_claims"]) + snapshot["compact_text"]


async def test_mark_tombstone(h: Any) -> None:
    """Invalidated, superseded and deleted content never returns in a current view, not even by a replayed call."""
    task = await h.start("alpha stays")
    invalid = await h.inferred(task, "bravo invalidated", request_id="add-bravo")
    superseded = await h.inferred(task, "charlie superseded")
    deleted = await h.inferred(task, "delta deleted")
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="inv",
        claim_id=invalid["claim_id"],
        reason="wrong",
        source_ref=h.agent_src(),
    )
    await h.call(
        "intent_replace_claim",
        task_id=task,
        request_id="rep",
        statement="charlie corrected",
        source_ref=h.agent_src(),
        facets=["outcome"],
        replacement_kind="evidence",
        supersedes=[superseded["claim_id"]],
    )
    await h.call(
        "intent_delete",
        task_id=task,
        target="claim",
        claim_id=deleted["claim_id"],
        confirmation=f"DELETE CLAIM {deleted['claim_id']}",
    )
    current = _current_text(await h.snapshot(task))
    for gone in ("bravo invalidated", "charlie superseded", "delta deleted"):
        assert gone not in current
    for present in ("alpha stays", "charlie corrected"):
        assert present in current  # positive control
    # replaying the original add returns the original record but does not resurrect it
    replay = await h.inferred(task, "bravo invalidated", request_id="add-bravo")
    assert replay["claim_id"] == invalid["claim_id"]
    assert "bravo invalidated" not in _current_text(await h.snapshot(task))
    await h.fails(
        "CLAIM_NOT_ACTIVE",
        "intent_invalidate",
        task_id=task,
        request_id="inv2",
        claim_id=invalid["claim_id"],
        reason="again",
        source_ref=h.agent_src(),
    )
    await h.fails(
        "CLAIM_NOT_ACTIVE",
        "intent_replace_claim",
        task_id=task,
        request_id="rep2",
        statement="x",
        source_ref=h.agent_src(),
        facets=["outcome"],
        replacement_kind="evidence",
        supersedes=[superseded["claim_id"]],
    )
    # tombstones travel: an export keeps the history, and the imported copy keeps it out of the current view
    graph = await h.call("intent_export", task_id=task)
    assert {"bravo invalidated", "charlie superseded"} <= {c["statement"] for c in graph["claims"]}
    assert "delta deleted" not in json.dumps(graph)
    copy = await h.start()
    imported = _current_text(await h.call("intent_import", task_id=copy, request_id="imp", graph=graph))
    assert "bravo invalidated" not in imported and "charlie superseded" not in imported
    assert "alpha stays" in imported and "charlie corrected" in imported


async def test_mark_trust_state(h: Any) -> None:
    """Epistemic statuses are stored apart, reported apart, and filter what may become instruction text."""
    task = await h.start("user said: keep the API")
    inferred = await h.inferred(task, "agent guesses: user wants speed", confidence=0.4)
    evidence = await h.call(
        "intent_add_evidence",
        task_id=task,
        request_id="ev",
        statement="tool: tests pass",
        source_ref={"kind": "tool_result", "event_id": "run-1"},
        facets=["success_signal"],
    )
    unknown = await h.call(
        "intent_mark_unknown",
        task_id=task,
        request_id="u",
        statement="target platform unknown",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
    )
    dispute = await h.call(
        "intent_mark_dispute",
        task_id=task,
        request_id="d",
        statement="speed vs API disputed",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
        related_claim_ids=[inferred["claim_id"]],
    )
    await h.call(
        "intent_import",
        task_id=task,
        request_id="imp",
        graph=_graph(_claim("0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e", "imported user claim", "explicit", "user")),
    )
    snap = await h.snapshot(task)
    by_status = {
        c["statement"]: (c["epistemic_status"], c["role"], c["source_ref"]["kind"]) for c in snap["active_claims"]
    }
    assert by_status == {
        "user said: keep the API": ("explicit", "user", "user_event"),
        "agent guesses: user wants speed": ("inferred", "agent", "agent_turn"),
        "tool: tests pass": ("evidence", "evidence", "tool_result"),
        "target platform unknown": ("unknown", "agent", "agent_turn"),
        "speed vs API disputed": ("disputed", "system", "agent_turn"),
        "imported user claim": ("explicit", "user", "explicit_import"),
    }
    assert [c["claim_id"] for c in snap["unknowns"]] == [unknown["claim_id"]]
    assert [c["claim_id"] for c in snap["disagreements"]] == [dispute["claim_id"]]
    assert "- [inferred/agent; soft_constraint confidence=0.40] agent guesses" in snap["compact_text"]
    assert "- [evidence/evidence; success_signal] tool: tests pass" in snap["compact_text"]
    assert evidence["epistemic_status"] == "evidence"
    # only direct user-explicit records may become hook text; everything else is counted, never quoted
    state = project_task(ProjectStore(h.data_root, h.project_id).read().events, task)
    hook = hook_context_text(state)
    assert "user said: keep the API" in hook  # positive control
    for excluded in ("agent guesses", "tool: tests pass", "target platform", "speed vs API", "imported user claim"):
        assert excluded not in hook
    assert "omitted from Hook context: 5" in hook
    # stale long-term inferences are reported apart and kept out of the compact text
    await h.call(
        "intent_import",
        task_id=task,
        request_id="imp-lt",
        graph=_graph(
            _claim(
                "1b2c3d4e-5f6a-4b7c-8d9e-0f1a2b3c4d5e",
                "old long-term habit",
                "inferred",
                "agent",
                confidence=0.7,
                scope="long_term",
            ),
        ),
    )
    snap = await h.snapshot(task)
    assert [c["statement"] for c in snap["stale_long_term"]] == ["old long-term habit"]
    assert "old long-term habit" not in snap["compact_text"]
    assert "user said: keep the API" in snap["compact_text"]


async def test_mark_bitemporal(h: Any) -> None:
    """Valid time (valid_from, last_confirmed) and record time (the event's occurred_at) are both kept and queryable."""
    task = await h.start()
    fresh = await h.explicit(task, "recorded now")
    await h.call(
        "intent_import",
        task_id=task,
        request_id="imp",
        graph=_graph(_claim("2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f", "valid since 2025", "evidence", "evidence")),
    )
    events = h.events()
    added = next(e for e in events if e["event_type"] == "claim_added")
    imported_event = next(e for e in events if e["event_type"] == "graph_imported")
    imported = imported_event["payload"]["claims"][0]
    # positive control: a claim recorded now is valid from now
    assert abs((parse_time(added["occurred_at"]) - parse_time(fresh["valid_from"])).total_seconds()) < 5
    assert fresh["last_confirmed"] == fresh["valid_from"]
    # an imported claim keeps its own valid time; the ledger keeps when we learned it
    assert imported["valid_from"] == OLD
    assert parse_time(imported_event["occurred_at"]) > parse_time(imported["valid_from"])
    snap = await h.snapshot(task)
    assert {c["statement"]: c["valid_from"] for c in snap["active_claims"]}["valid since 2025"] == OLD
    await trio.sleep(0.01)  # the invalidation gets a record time of its own
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="inv",
        claim_id=fresh["claim_id"],
        reason="user withdrew it",
        source_ref=h.user_src(),
    )
    invalidation = h.events()[-1]
    assert invalidation["payload"]["invalidated_at"] and invalidation["occurred_at"]
    graph = await h.call("intent_export", task_id=task)
    kept = {c["statement"]: c for c in graph["claims"]}
    assert kept["recorded now"]["valid_from"] == fresh["valid_from"]  # history keeps the valid time too
    # record time is queryable: as_of folds the events recorded at or before an instant
    before_invalidation = await h.call("intent_get_snapshot", task_id=task, as_of=imported_event["occurred_at"])
    assert {c["statement"] for c in before_invalidation["active_claims"]} == {"recorded now", "valid since 2025"}
    after = await h.call("intent_get_snapshot", task_id=task, as_of=invalidation["occurred_at"], include_history=True)
    assert {c["statement"] for c in after["active_claims"]} == {"valid since 2025"}
    assert [(e["claim"]["statement"], e["status"], e["at"]) for e in after["history"]] == [
        ("recorded now", "invalidated", invalidation["occurred_at"])
    ]
    # valid time is not record time: the imported claim was valid in 2025, but nothing was recorded then
    await h.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=task, as_of=OLD)


async def test_mark_scope_enforced(h: Any, make_harness: Any) -> None:
    """Project and task boundaries are enforced on every read and every reference."""
    task = await h.start("project A task one")
    claim = await h.inferred(task, "task one inference")
    sibling = await h.start("project A task two")
    other = make_harness()
    other.data_root, other.service = h.data_root, h.service
    # project isolation
    await other.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=task)
    await other.fails("TASK_NOT_FOUND", "intent_export", task_id=task)
    assert (await h.snapshot(task))["project_id"] == h.project_id  # positive control
    # task isolation: a claim of task one cannot be touched from task two
    await h.fails(
        "CLAIM_NOT_ACTIVE",
        "intent_invalidate",
        task_id=sibling,
        request_id="x1",
        claim_id=claim["claim_id"],
        reason="cross-task",
        source_ref=h.agent_src(),
    )
    await h.fails(
        "RELATED_CLAIM_NOT_FOUND",
        "intent_mark_dispute",
        task_id=sibling,
        request_id="x2",
        statement="d",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
        related_claim_ids=[claim["claim_id"]],
    )
    await h.fails(
        "CLAIM_NOT_FOUND",
        "intent_delete",
        task_id=sibling,
        target="claim",
        claim_id=claim["claim_id"],
        confirmation=f"DELETE CLAIM {claim['claim_id']}",
    )
    assert await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="x3",
        claim_id=claim["claim_id"],
        reason="same task",
        source_ref=h.agent_src(),
    )
    assert [c["statement"] for c in (await h.snapshot(sibling))["active_claims"]] == ["project A task two"]
    # the scope field itself is kept as given
    scoped = await h.explicit(sibling, "applies to the project", scope="project")
    assert scoped["scope"] == "project"


async def test_mark_audit_log(h: Any) -> None:
    """Each change is one hash-chained event that names the item it changed, who did it and when."""
    task = await h.start("initial")
    added = await h.inferred(task, "first guess")
    replaced = await h.call(
        "intent_replace_claim",
        task_id=task,
        request_id="rep",
        statement="second guess",
        source_ref=h.agent_src(),
        facets=["outcome"],
        replacement_kind="inferred",
        confidence=0.5,
        supersedes=[added["claim_id"]],
    )
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="inv",
        claim_id=replaced["claim_id"],
        reason="neither",
        source_ref=h.user_src(),
    )
    await h.call("intent_set_mode", task_id=task, request_id="off", mode="off")
    events = h.events()
    assert [e["event_type"] for e in events] == [
        "task_started",
        "claim_added",
        "claim_replaced",
        "claim_invalidated",
        "mode_set",
    ]
    assert events[1]["payload"]["claim"]["claim_id"] == added["claim_id"]
    assert events[2]["payload"]["claim"]["claim_id"] == replaced["claim_id"]
    assert events[2]["payload"]["claim"]["supersedes"] == [added["claim_id"]]
    assert events[3]["payload"]["claim_id"] == replaced["claim_id"]
    assert [e["actor"] for e in events] == ["user", "agent", "agent", "user", "user"]
    assert all(e["task_id"] == task and e["occurred_at"] and e["request_id"] for e in events)
    assert all(len(e["payload"]["request_fingerprint"]) == 64 for e in events)
    assert events[0]["prev_hash"] is None
    assert all(b["prev_hash"] == a["event_hash"] for a, b in itertools.pairwise(events))
    store = ProjectStore(h.data_root, h.project_id)
    assert len(store.read().events) == 5  # positive control: the untouched chain verifies
    lines = h.ledger.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"second guess", b"third guess!")
    h.ledger.write_bytes(b"".join(lines))
    try:
        ProjectStore(h.data_root, h.project_id).read()
    except CorruptLedgerError as exc:
        assert exc.line == 3
    else:  # pragma: no cover - the assertion below reports it
        raise AssertionError("a rewritten event was not detected")


async def test_mark_human_review(make_harness: Any) -> None:
    """A repeated long-term signal stays a candidate until the user confirms it; listing never promotes it."""
    h = make_harness()
    tasks = [await h.start() for _ in range(3)]
    candidates = [
        await h.inferred(task, "prefers squash merges", scope="long_term", signal_key="merge-style") for task in tasks
    ]
    assert [len(c["task_ids"]) for c in candidates] == [1, 2, 3]
    assert candidates[2]["task_ids"] == sorted(tasks)
    for task in tasks:
        await h.call("intent_list_candidates", task_id=task)
        assert (await h.snapshot(task))["active_claims"] == []  # never an active claim on its own
    confirm = {"statement": "prefers squash merges", "scope": "long_term", "confirmation_reason": "confirmed_candidate"}
    await h.fails(
        "LONG_TERM_CONFIRMATION_REQUIRED",
        "intent_add_explicit",
        task_id=tasks[1],
        request_id="c1",
        source_ref=h.user_src(),
        facets=["soft_constraint"],
        **confirm,
    )
    await h.fails(
        "LONG_TERM_CONFIRMATION_REQUIRED",
        "intent_replace_claim",
        task_id=tasks[1],
        request_id="c2",
        source_ref=h.user_src(),
        facets=["soft_constraint"],
        replacement_kind="explicit",
        supersedes=[(await h.inferred(tasks[1], "placeholder"))["claim_id"]],
        **confirm,
    )
    claim = await h.explicit(tasks[2], **confirm)  # the user confirms in the task where three tasks are on record
    assert (claim["role"], claim["epistemic_status"], claim["scope"]) == ("user", "explicit", "long_term")
    assert [c["statement"] for c in (await h.snapshot(tasks[2]))["active_claims"]] == ["prefers squash merges"]


async def test_mark_negative_eval(h: Any) -> None:
    """Excluded material is shown absent exactly where allowed material is shown present."""
    task = await h.start("visible constraint")
    other = await h.start("other task constraint")
    await h.inferred(other, "other task inference")
    gone = await h.inferred(task, "withdrawn idea")
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="inv",
        claim_id=gone["claim_id"],
        reason="no",
        source_ref=h.agent_src(),
    )
    await h.explicit(task, "deploy with password=hunter2secret tomorrow")
    snap = await h.snapshot(task)
    statements = [c["statement"] for c in snap["active_claims"]]
    assert "visible constraint" in statements
    assert "other task constraint" not in statements and "other task inference" not in statements
    assert "withdrawn idea" not in statements and "withdrawn idea" not in snap["compact_text"]
    assert "deploy with [REDACTED:credential] tomorrow" in statements
    ledger = h.ledger.read_bytes()
    assert b"hunter2secret" not in ledger and b"deploy with [REDACTED:credential] tomorrow" in ledger
    private = await h.start("private words ZEBRA", mode="private", host_session_id="sess-n")
    assert "private words ZEBRA" in [c["statement"] for c in (await h.snapshot(private))["active_claims"]]
    disk = h.disk_bytes()
    assert b"ZEBRA" not in disk and b"visible constraint" in disk
