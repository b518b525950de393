"""Every tool's success path through ``IntentService.dispatch``, with the exact result shapes of the reference."""

from __future__ import annotations

from typing import Any

from intentloop.model import canonical_bytes, deterministic_task_id, request_fingerprint, session_hash, sha256_hex

CLAIM_KEYS = {
    "claim_id",
    "statement",
    "role",
    "epistemic_status",
    "source_ref",
    "scope",
    "valid_from",
    "last_confirmed",
    "supersedes",
    "facets",
    "related_claim_ids",
}
SNAPSHOT_KEYS = [
    "project_id",
    "task_id",
    "mode",
    "generated_at",
    "active_claims",
    "unknowns",
    "disagreements",
    "stale_long_term",
    "candidate_count",
    "compact_text",
]


async def test_status_of_an_empty_project_creates_nothing(h: Any) -> None:
    result = await h.call("intent_status")
    assert result == {
        "project_id": h.project_id,
        "task_count": 0,
        "candidate_count": 0,
        "data_directory": str(h.project_dir),
        "schema_version": 1,
        "private_tasks_in_process": 0,
        "private_session_control_count": 0,
    }
    assert not h.data_root.exists()


async def test_start_task_with_initial_claims_in_one_event(h: Any) -> None:
    snap = await h.call(
        "intent_start_task",
        request_id="start-1",
        label="Refactor the parser",
        initial_explicit=["never touch the public API", {"statement": "tests stay green", "facets": ["outcome"]}],
    )
    assert list(snap) == SNAPSHOT_KEYS
    assert snap["task_id"] == deterministic_task_id(h.project_id, "start-1")
    assert snap["mode"] == "on"
    assert [c["statement"] for c in snap["active_claims"]] == ["never touch the public API", "tests stay green"]
    first = snap["active_claims"][0]
    assert set(first) == CLAIM_KEYS
    assert (first["role"], first["epistemic_status"], first["scope"], first["facets"]) == (
        "user",
        "explicit",
        "task",
        ["hard_constraint"],
    )
    assert first["source_ref"] == {
        "kind": "user_event",
        "event_id": "start:" + sha256_hex("start-1")[:32],
        "sha256": sha256_hex(canonical_bytes({"request_id": "start-1", "index": 0, "statement": first["statement"]})),
    }
    assert first["valid_from"] == first["last_confirmed"]
    events = h.events()
    assert [e["event_type"] for e in events] == ["task_started"]
    payload = events[0]["payload"]
    assert payload["label"] == "Refactor the parser"
    assert len(payload["initial_claims"]) == 2
    expected = request_fingerprint(
        "start_task",
        {
            "task_id": snap["task_id"],
            "mode": "on",
            "label": "Refactor the parser",
            "host_session_hash": None,
            "initial_explicit": [
                {"statement": "never touch the public API", "scope": "task", "facets": ["hard_constraint"]},
                {"statement": "tests stay green", "scope": "task", "facets": ["outcome"]},
            ],
        },
    )
    assert payload["request_fingerprint"] == expected
    assert events[0]["actor"] == "user"


async def test_start_retry_returns_the_same_task_and_appends_nothing(h: Any) -> None:
    first = await h.call("intent_start_task", request_id="s", initial_explicit=["a"])
    again = await h.call("intent_start_task", request_id="s", initial_explicit=["a"])
    assert again["task_id"] == first["task_id"]
    assert [c["claim_id"] for c in again["active_claims"]] == [c["claim_id"] for c in first["active_claims"]]
    assert len(h.ledger_lines()) == 1


async def test_start_without_request_id_generates_one(h: Any) -> None:
    a = await h.call("intent_start_task")
    b = await h.call("intent_start_task")
    assert a["task_id"] != b["task_id"]
    assert all(e["request_id"].startswith("start:") for e in h.events())


async def test_start_existing_task_reassociates_with_mode_set(h: Any) -> None:
    task = await h.start("x", host_session_id="session-old")
    snap = await h.call("intent_start_task", task_id=task, request_id="again", host_session_id="session-new")
    assert snap["task_id"] == task
    last = h.events()[-1]
    assert last["event_type"] == "mode_set"
    assert last["payload"]["host_session_hash"] == session_hash("session-new")
    assert last["payload"]["mode"] == "on"


async def test_get_snapshot_and_max_characters(h: Any) -> None:
    task = await h.start(*[f"constraint number {i} " + "x" * 60 for i in range(12)])
    full = await h.call("intent_get_snapshot", task_id=task)
    small = await h.call("intent_get_snapshot", task_id=task, max_characters=500)
    assert len(full["active_claims"]) == len(small["active_claims"]) == 12
    assert len(small["compact_text"]) <= 500 < len(full["compact_text"])
    assert "[truncated]" in small["compact_text"]


async def test_add_explicit_returns_the_claim(h: Any) -> None:
    task = await h.start()
    claim = await h.explicit(task, "use tabs", facets=["soft_constraint", "soft_constraint"])
    assert set(claim) == CLAIM_KEYS
    assert (claim["role"], claim["epistemic_status"], claim["facets"]) == ("user", "explicit", ["soft_constraint"])
    assert claim["last_confirmed"] == claim["valid_from"]
    event = h.events()[-1]
    assert (event["event_type"], event["actor"], event["payload"]["claim"]) == ("claim_added", "user", claim)


async def test_add_inference_claim_and_long_term_candidate(h: Any) -> None:
    task = await h.start()
    claim = await h.inferred(task, "prefers small commits", confidence=0.62)
    assert set(claim) == CLAIM_KEYS | {"confidence"}
    assert (claim["role"], claim["epistemic_status"], claim["confidence"]) == ("agent", "inferred", 0.62)
    assert claim["last_confirmed"] is None
    snap = await h.snapshot(task)
    assert "confidence=0.62] prefers small commits" in snap["compact_text"]
    candidate = await h.inferred(task, "likes dark themes", scope="long_term", signal_key="theme")
    assert set(candidate) == {"candidate_id", "candidate_type", "source_ref", "created_at", "summary", "task_ids"}
    assert candidate["candidate_type"] == "long_term_preference"
    assert (candidate["summary"], candidate["task_ids"]) == ("likes dark themes", [task])
    event = h.events()[-1]
    assert event["event_type"] == "candidate_added"
    assert event["payload"]["signal_key"] == "theme"
    assert event["payload"]["eligible_for_confirmation"] is False
    snap = await h.snapshot(task)
    assert "likes dark themes" not in [c["statement"] for c in snap["active_claims"]]
    assert snap["candidate_count"] == 1


async def test_add_evidence_with_feedback_class(h: Any) -> None:
    task = await h.start()
    claim = await h.call(
        "intent_add_evidence",
        task_id=task,
        request_id="ev",
        statement="the benchmark got 3% slower",
        source_ref={"kind": "tool_result", "sha256": "b" * 64, "excerpt": "  bench:   3%   slower  "},
        facets=["result_feedback"],
        feedback_class="implementation_change",
    )
    assert (claim["role"], claim["epistemic_status"], claim["result_feedback_class"]) == (
        "evidence",
        "evidence",
        "implementation_change",
    )
    assert claim["source_ref"] == {"kind": "tool_result", "sha256": "b" * 64, "excerpt": "bench: 3% slower"}
    assert h.events()[-1]["actor"] == "evidence"


async def test_mark_unknown_and_dispute(h: Any) -> None:
    task = await h.start()
    a = await h.explicit(task, "ship on friday")
    b = await h.inferred(task, "friday is flexible")
    unknown = await h.call(
        "intent_mark_unknown",
        task_id=task,
        request_id="u",
        statement="which python versions matter",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
    )
    assert (unknown["role"], unknown["epistemic_status"], unknown["facets"]) == (
        "agent",
        "unknown",
        ["tradeoff", "unknown"],
    )
    dispute = await h.call(
        "intent_mark_dispute",
        task_id=task,
        request_id="d",
        statement="deadline firmness is disputed",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
        related_claim_ids=[a["claim_id"], b["claim_id"], a["claim_id"]],
    )
    assert (dispute["role"], dispute["epistemic_status"]) == ("system", "disputed")
    assert dispute["facets"] == ["tradeoff", "disagreement"]
    assert dispute["related_claim_ids"] == [a["claim_id"], b["claim_id"]]
    snap = await h.snapshot(task)
    assert [c["claim_id"] for c in snap["unknowns"]] == [unknown["claim_id"]]
    assert [c["claim_id"] for c in snap["disagreements"]] == [dispute["claim_id"]]
    assert len(snap["active_claims"]) == 4  # a dispute does not pick a winner


async def test_replace_claim_supersedes_and_keeps_history(h: Any) -> None:
    task = await h.start()
    old = await h.explicit(task, "use postgres")
    new = await h.call(
        "intent_replace_claim",
        task_id=task,
        request_id="rep",
        statement="use sqlite",
        source_ref=h.user_src("turn-9"),
        facets=["hard_constraint"],
        replacement_kind="explicit",
        supersedes=[old["claim_id"]],
        confirmation_reason="direct_statement",
    )
    assert new["supersedes"] == [old["claim_id"]]
    assert new["last_confirmed"] == new["valid_from"]
    assert h.events()[-1]["event_type"] == "claim_replaced"
    snap = await h.snapshot(task)
    assert [c["statement"] for c in snap["active_claims"]] == ["use sqlite"]
    export = await h.call("intent_export", task_id=task)
    assert {c["statement"] for c in export["claims"]} == {"use postgres", "use sqlite"}


async def test_invalidate_result_and_event(h: Any) -> None:
    task = await h.start()
    claim = await h.inferred(task, "wants verbose logs")
    result = await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="inv",
        claim_id=claim["claim_id"],
        reason="  user said the opposite  ",
        source_ref=h.agent_src(),
    )
    assert set(result) == {"claim_id", "invalidated_at", "reason"}
    assert (result["claim_id"], result["reason"]) == (claim["claim_id"], "user said the opposite")
    event = h.events()[-1]
    assert (event["event_type"], event["actor"]) == ("claim_invalidated", "agent")
    assert event["payload"]["request_fingerprint"] == request_fingerprint(
        "invalidate_claim",
        {"claim_id": claim["claim_id"], "reason": "user said the opposite", "source_ref": h.agent_src()},
    )
    assert (await h.snapshot(task))["active_claims"] == []


async def test_list_candidates(h: Any) -> None:
    task = await h.start()
    assert await h.call("intent_list_candidates", task_id=task) == []
    candidate = await h.inferred(task, "likes brevity", scope="long_term")
    assert await h.call("intent_list_candidates", task_id=task) == [candidate]


async def test_export_portable_and_summary(h: Any) -> None:
    task = await h.start("keep it simple")
    gone = await h.inferred(task, "wants a rewrite")
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="i",
        claim_id=gone["claim_id"],
        reason="no",
        source_ref=h.agent_src(),
    )
    graph = await h.call("intent_export", task_id=task)
    assert list(graph) == [
        "format",
        "schema_version",
        "exported_at",
        "source_project_id",
        "source_task_id",
        "history_complete",
        "claims",
        "invalidated_claim_ids",
        "candidates",
        "signature",  # intentloop's own, last; original_format leaves it out
    ]
    assert list(await h.call("intent_export", task_id=task, original_format=True)) == list(graph)[:-1]
    assert (graph["format"], graph["schema_version"], graph["history_complete"]) == ("intent-loop-export", 1, False)
    assert (graph["source_project_id"], graph["source_task_id"]) == (h.project_id, task)
    assert len(graph["claims"]) == 2
    assert graph["invalidated_claim_ids"] == [gone["claim_id"]]
    summary = await h.call("intent_export", task_id=task, detail="summary")
    assert summary == {
        "format": "intent-loop-human-summary",
        "schema_version": 1,
        "task_id": task,
        "generated_at": summary["generated_at"],
        "history_complete": False,
        "active_claim_count": 1,
        "candidate_count": 0,
        "unknown_count": 0,
        "disagreement_count": 0,
        "compact_text": summary["compact_text"],
    }
    assert "keep it simple" in summary["compact_text"]


async def test_import_remaps_ids_and_marks_provenance(h: Any) -> None:
    source = await h.start("one", "two")
    graph = await h.call("intent_export", task_id=source)
    target = await h.start()
    snap = await h.call("intent_import", task_id=target, request_id="imp", graph=graph)
    assert snap["task_id"] == target
    imported = snap["active_claims"]
    assert sorted(c["statement"] for c in imported) == ["one", "two"]
    assert {c["claim_id"] for c in imported}.isdisjoint({c["claim_id"] for c in graph["claims"]})
    assert all(
        c["source_ref"]["kind"] == "explicit_import" and set(c["source_ref"]) == {"kind", "sha256"} for c in imported
    )
    event = h.events()[-1]
    assert event["event_type"] == "graph_imported"
    assert event["payload"]["imported_from"]["history_complete"] is False
    assert event["payload"]["imported_from"]["source_identity_sha256"] == sha256_hex(
        canonical_bytes({"project_id": h.project_id, "task_id": source})
    )
    retry = await h.call("intent_import", task_id=target, request_id="imp", graph=graph)
    assert len(retry["active_claims"]) == 2
    assert len(h.ledger_lines()) == 3


async def test_delete_claim_and_task_results(h: Any) -> None:
    task = await h.start("stays")
    claim = await h.inferred(task, "goes away")
    result = await h.call(
        "intent_delete",
        task_id=task,
        target="claim",
        claim_id=claim["claim_id"],
        confirmation=f"DELETE CLAIM {claim['claim_id']}",
    )
    nothing_else = {"other_copies": [], "files_with_content": [], "deleted_copies": []}
    scanned = 2  # the ledger and deleted-requests.json (the claim's request tombstone)
    assert result == {
        "deleted": "claim",
        "claim_id": claim["claim_id"],
        "persistent_files_scanned": scanned,
        **nothing_else,
    }
    result = await h.call("intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}")
    assert result == {"deleted": "task", "task_id": task, "persistent_files_scanned": scanned, **nothing_else}
    await h.fails("TASK_NOT_FOUND", "intent_get_snapshot", task_id=task)


async def test_set_mode_on_off_and_status(h: Any) -> None:
    task = await h.start("x")
    off = await h.call("intent_set_mode", task_id=task, request_id="m1", mode="off")
    assert off == {"mode": "off", "persistence_note": "Semantic reads and writes are disabled."}
    status = await h.call("intent_status", task_id=task)
    assert status == {
        "project_id": h.project_id,
        "task_id": task,
        "mode": "off",
        "active_claim_count": 1,
        "candidate_count": 0,
        "data_directory": str(h.project_dir),
        "schema_version": 1,
    }
    on = await h.call("intent_set_mode", task_id=task, request_id="m2", mode="on")
    assert on == {"mode": "on", "persistence_note": "Structured local persistence is enabled."}
    assert (await h.call("intent_set_mode", task_id=task, request_id="m2", mode="on")) == on
    event = h.events()[-1]
    assert event["payload"] == {
        "mode": "on",
        "request_fingerprint": request_fingerprint("set_mode", {"task_id": task, "mode": "on"}),
    }
    assert len(h.ledger_lines()) == 3
    overall = await h.call("intent_status")
    assert (overall["task_count"], overall["candidate_count"]) == (1, 0)
