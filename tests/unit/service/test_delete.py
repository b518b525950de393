"""Physical deletion: no byte of the deleted item in any file, references stripped, fingerprints recomputed."""

from __future__ import annotations

import itertools
import json
from typing import Any

from intentloop.model import request_fingerprint
from intentloop.service._rules import claim_fingerprint_input, start_fingerprint_input
from intentloop.store import ProjectStore


def _events(h: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in h.ledger_lines()]


async def _delete_claim(h: Any, task: str, claim_id: str) -> dict[str, Any]:
    result: dict[str, Any] = await h.call(
        "intent_delete", task_id=task, target="claim", claim_id=claim_id, confirmation=f"DELETE CLAIM {claim_id}"
    )
    return result


async def test_deleting_a_claim_leaves_no_byte_of_it(h: Any) -> None:
    task = await h.start("kept initial claim")
    doomed = await h.inferred(task, "doomed statement QX-4471")
    kept = await h.inferred(task, "kept inference")
    dispute = await h.call(
        "intent_mark_dispute",
        task_id=task,
        request_id="d",
        statement="doomed vs kept",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
        related_claim_ids=[doomed["claim_id"], kept["claim_id"]],
    )
    replacement = await h.call(
        "intent_replace_claim",
        task_id=task,
        request_id="r",
        statement="replacement of doomed",
        source_ref=h.agent_src(),
        facets=["tradeoff"],
        replacement_kind="unknown",
        supersedes=[doomed["claim_id"]],
    )
    before = h.disk_bytes()
    assert doomed["claim_id"].encode() in before and b"QX-4471" in before
    result = await _delete_claim(h, task, doomed["claim_id"])
    assert result["persistent_files_scanned"] >= 1
    after = h.disk_bytes()
    assert doomed["claim_id"].encode() not in after
    assert b"QX-4471" not in after
    for survivor in ("kept initial claim", "kept inference", "doomed vs kept", "replacement of doomed"):
        assert survivor.encode() in after  # positive control: the scan reads the real files
    ProjectStore(h.data_root, h.project_id).read()  # the re-chained ledger verifies
    by_id = {c["claim_id"]: c for c in (await h.call("intent_export", task_id=task))["claims"]}
    assert by_id[dispute["claim_id"]]["related_claim_ids"] == [kept["claim_id"]]
    assert by_id[replacement["claim_id"]]["supersedes"] == []
    for event in _events(h):
        if event["event_type"] in ("claim_added", "claim_replaced"):
            claim = event["payload"]["claim"]
            assert event["payload"]["request_fingerprint"] == request_fingerprint(
                event["event_type"], claim_fingerprint_input(claim, require_long_term_candidate=False)
            )


async def test_deleting_an_invalidated_claim_removes_its_invalidation(h: Any) -> None:
    task = await h.start()
    claim = await h.inferred(task, "short lived")
    await h.call(
        "intent_invalidate",
        task_id=task,
        request_id="inv",
        claim_id=claim["claim_id"],
        reason="not true",
        source_ref=h.agent_src(),
    )
    await _delete_claim(h, task, claim["claim_id"])
    assert [e["event_type"] for e in _events(h)] == ["task_started"]
    assert b"not true" not in h.disk_bytes()


async def test_deleting_an_initial_claim_recomputes_the_start_fingerprint(h: Any) -> None:
    snap = await h.call("intent_start_task", request_id="s", initial_explicit=["stays", "goes ZX-91"])
    task = snap["task_id"]
    goes = next(c for c in snap["active_claims"] if c["statement"] == "goes ZX-91")
    await _delete_claim(h, task, goes["claim_id"])
    (started,) = _events(h)
    payload = started["payload"]
    assert [c["statement"] for c in payload["initial_claims"]] == ["stays"]
    assert payload["request_fingerprint"] == request_fingerprint(
        "start_task", start_fingerprint_input(task, "on", None, None, payload["initial_claims"])
    )
    assert b"ZX-91" not in h.disk_bytes()
    # the original start retried now no longer matches: it would resurrect the deleted claim
    await h.fails("REQUEST_ID_REUSED", "intent_start_task", request_id="s", initial_explicit=["stays", "goes ZX-91"])


async def test_deleting_an_imported_claim_rewrites_the_import(h: Any) -> None:
    source = await h.start("imported one", "imported two KV-7")
    graph = await h.call("intent_export", task_id=source)
    target = await h.start()
    snap = await h.call("intent_import", task_id=target, request_id="imp", graph=graph)
    doomed = next(c for c in snap["active_claims"] if c["statement"] == "imported two KV-7")
    await _delete_claim(h, target, doomed["claim_id"])
    imported = _events(h)[-1]
    assert [c["statement"] for c in imported["payload"]["claims"]] == ["imported one"]
    assert imported["payload"]["request_fingerprint"] == request_fingerprint(
        "import_graph_after_delete",
        {
            "task_id": target,
            "claims": imported["payload"]["claims"],
            "invalidated_claim_ids": [],
            "candidates": [],
            "imported_from": imported["payload"]["imported_from"],
        },
    )
    assert doomed["claim_id"].encode() not in h.disk_bytes()


async def test_deleting_a_task_removes_every_reference_and_the_quarantine(h: Any) -> None:
    doomed = await h.start("doomed task text PL-33", host_session_id="sess-d")
    kept = await h.start("kept task text")
    for task in (doomed, kept):
        await h.inferred(task, "repeated preference", scope="long_term", signal_key="pref")
    candidate = (await h.call("intent_list_candidates", task_id=kept))[0]
    assert sorted(candidate["task_ids"]) == sorted([doomed, kept])
    h.ledger.write_bytes(h.ledger.read_bytes() + b'{"partial')  # a torn tail, quarantined by the next write
    await h.inferred(kept, "written after the crash")
    assert any((h.project_dir / "quarantine").iterdir())
    result = await h.call("intent_delete", task_id=doomed, target="task", confirmation=f"DELETE TASK {doomed}")
    assert result == {"deleted": "task", "task_id": doomed, "persistent_files_scanned": 1}
    after = h.disk_bytes()
    assert doomed.encode() not in after and b"PL-33" not in after
    assert b"kept task text" in after
    assert not (h.project_dir / "quarantine").exists()
    assert (await h.call("intent_list_candidates", task_id=kept))[0]["task_ids"] == [kept]
    # the session of the deleted task is free again
    assert await h.start(host_session_id="sess-d")


async def test_deleting_a_claim_of_a_private_task(h: Any) -> None:
    task = await h.start("durable base", host_session_id="sess-p")
    base_claim = (await h.snapshot(task))["active_claims"][0]
    await h.call("intent_set_mode", task_id=task, request_id="p", mode="private")
    private_claim = await h.inferred(task, "private only")
    await _delete_claim(h, task, private_claim["claim_id"])
    assert [c["statement"] for c in (await h.snapshot(task))["active_claims"]] == ["durable base"]
    await _delete_claim(h, task, base_claim["claim_id"])
    assert (await h.snapshot(task))["active_claims"] == []
    assert base_claim["claim_id"].encode() not in h.disk_bytes()
    events = h.service._engine.private.get(h.project_id, task)
    assert all(b.prev_hash == a.event_hash for a, b in itertools.pairwise(events))


async def test_the_deletion_scan_refuses_symlinks_and_hard_links(h: Any, tmp_path: Any) -> None:
    task = await h.start("x")
    outside = tmp_path / "outside.txt"
    outside.write_text("nothing to see")
    link = h.project_dir / "sneaky"
    link.symlink_to(outside)
    await h.fails("PATH_ESCAPE", "intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}")
    link.unlink()
    hard = h.project_dir / "twin"
    hard.hardlink_to(outside)
    await h.fails("UNSAFE_DATA_FILE", "intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}")
    hard.unlink()
    assert (await h.snapshot(task))["active_claims"]  # refused before anything changed
    result = await h.call("intent_delete", task_id=task, target="task", confirmation=f"DELETE TASK {task}")
    assert result["deleted"] == "task"
