"""Physical deletion: no byte of the deleted item in any file, references stripped, fingerprints recomputed."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import timedelta
from typing import Any

from intentloop.model import format_time, parse_time, request_fingerprint
from intentloop.service._rules import claim_fingerprint_input, start_fingerprint_input
from intentloop.store import ProjectStore


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
    for event in h.events():
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
    assert [e["event_type"] for e in h.events()] == ["task_started"]
    assert b"not true" not in h.disk_bytes()


async def test_deleting_an_initial_claim_recomputes_the_start_fingerprint(h: Any) -> None:
    snap = await h.call("intent_start_task", request_id="s", initial_explicit=["stays", "goes ZX-91"])
    task = snap["task_id"]
    goes = next(c for c in snap["active_claims"] if c["statement"] == "goes ZX-91")
    await _delete_claim(h, task, goes["claim_id"])
    (started,) = h.events()
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
    imported = h.events()[-1]
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


async def test_deleting_a_task_removes_every_reference(h: Any) -> None:
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
    assert result == {
        "deleted": "task",
        "task_id": doomed,
        # the ledger, the torn tail's summary, the statements' tombstones and the session's (empty) injection memory
        "persistent_files_scanned": 4,
        "other_copies": [],
        "files_with_content": [],
        "deleted_copies": [],
    }
    after = h.disk_bytes()
    assert doomed.encode() not in after and b"PL-33" not in after
    assert b"kept task text" in after
    assert not any(doomed.encode() in p.read_bytes() for p in (h.project_dir / "quarantine").iterdir())
    assert (await h.call("intent_list_candidates", task_id=kept))[0]["task_ids"] == [kept]
    # the session of the deleted task is free again
    assert await h.start(host_session_id="sess-d")


async def test_deleting_a_claim_of_a_private_task(h: Any) -> None:
    task = await h.start("durable base", host_session_id="sess-p")
    base_claim = (await h.snapshot(task))["active_claims"][0]
    await h.call("intent_set_mode", task_id=task, request_id="p", mode="private")
    private_claim = await h.inferred(task, "private only")
    durable = h.ledger.stat()
    await _delete_claim(h, task, private_claim["claim_id"])
    assert [c["statement"] for c in (await h.snapshot(task))["active_claims"]] == ["durable base"]
    after = h.ledger.stat()  # nothing durable held it: the ledger was not rewritten
    assert (after.st_ino, after.st_mtime_ns) == (durable.st_ino, durable.st_mtime_ns)
    await _delete_claim(h, task, base_claim["claim_id"])
    assert h.ledger.stat().st_ino != durable.st_ino  # the control: a durable claim's deletion rewrites it
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


async def test_deleting_keeps_unrelated_quarantine_and_strips_the_deleted_bytes(h: Any) -> None:
    """An admin's kept raw bytes survive a deletion; only the lines that hold the deleted item go."""
    task = await h.start("kept initial claim")
    doomed = await h.inferred(task, "doomed statement QX-9001")
    other = await h.inferred(task, "unrelated inference QX-1234")
    quarantine = h.project_dir / "quarantine"
    quarantine.mkdir(mode=0o700)
    unrelated = b'{"kept":"salvageable event of someone else"}\n{"more":"kept bytes"}\n'
    (quarantine / "damaged-1-kept.bytes").write_bytes(unrelated)
    (quarantine / "damaged-1-kept.json").write_bytes(b'{"byte_length":70,"raw_bytes_file":"damaged-1-kept.bytes"}\n')
    doomed_line = next(line for line in h.ledger_lines() if doomed["claim_id"].encode() in line)
    other_line = next(line for line in h.ledger_lines() if other["claim_id"].encode() in line)
    (quarantine / "damaged-2-mixed.bytes").write_bytes(other_line + b"\n" + doomed_line + b"\n")
    (quarantine / "damaged-3-only.bytes").write_bytes(doomed_line + b"\n")
    (quarantine / "0600.mode").write_bytes(b"no ids here\n")
    result = await _delete_claim(h, task, doomed["claim_id"])
    assert result["deleted"] == "claim"
    assert (quarantine / "damaged-1-kept.bytes").read_bytes() == unrelated  # untouched, byte for byte
    assert (quarantine / "damaged-1-kept.json").exists() and (quarantine / "0600.mode").exists()
    assert (quarantine / "damaged-2-mixed.bytes").read_bytes() == other_line + b"\n"  # the other line stays
    assert not (quarantine / "damaged-3-only.bytes").exists()  # nothing else was in it
    assert doomed["claim_id"].encode() not in h.disk_bytes() and b"QX-9001" not in h.disk_bytes()
    assert b"QX-1234" in h.disk_bytes()  # positive control


async def test_deleting_a_task_keeps_unrelated_quarantine(h: Any) -> None:
    doomed = await h.start("doomed task text PL-77")
    kept = await h.start("kept task text")
    quarantine = h.project_dir / "quarantine"
    quarantine.mkdir(mode=0o700)
    (quarantine / "damaged-1-kept.bytes").write_bytes(b'{"task_id":"' + kept.encode() + b'"}\n')
    (quarantine / "damaged-2-doomed.bytes").write_bytes(b'{"task_id":"' + doomed.encode() + b'"}\n')
    await h.call("intent_delete", task_id=doomed, target="task", confirmation=f"DELETE TASK {doomed}")
    assert (quarantine / "damaged-1-kept.bytes").exists()
    assert not (quarantine / "damaged-2-doomed.bytes").exists()
    assert doomed.encode() not in h.disk_bytes() and kept.encode() in h.disk_bytes()


async def _imported_copy(h: Any, statement: str) -> tuple[str, str, str, str]:
    """(source task, its claim, target task, the imported copy's claim id)."""
    source = await h.start(statement, "another source claim")
    claim = next(c for c in (await h.snapshot(source))["active_claims"] if c["statement"] == statement)
    graph = await h.call("intent_export", task_id=source)
    target = await h.start("target's own claim")
    snap = await h.call("intent_import", task_id=target, request_id=h.rid(), graph=graph)
    copy = next(c for c in snap["active_claims"] if c["statement"] == statement)
    assert copy["claim_id"] != claim["claim_id"]
    return source, claim["claim_id"], target, copy["claim_id"]


async def test_deleting_a_claim_reports_its_copy_in_another_task(h: Any) -> None:
    source, claim_id, target, copy_id = await _imported_copy(h, "deploy only on Fridays ZK-5521")
    quoting = await h.inferred(target, "we doubt 'deploy only on Fridays ZK-5521' still holds")
    result = await _delete_claim(h, source, claim_id)
    assert result["other_copies"] == [  # the import first, then the later claim quoting it (record order)
        {"task_id": target, "claim_id": copy_id, "match": "same_statement"},
        {"task_id": target, "claim_id": quoting["claim_id"], "match": "contains_statement"},
    ]
    assert result["files_with_content"] == ["ledger.jsonl"]
    assert result["deleted_copies"] == []
    assert claim_id.encode() not in h.disk_bytes()
    assert b"ZK-5521" in h.disk_bytes()  # the copy was only reported: the user decides


async def test_deleting_a_claim_with_its_copies_leaves_no_byte_of_the_statement(h: Any) -> None:
    source, claim_id, target, copy_id = await _imported_copy(h, "deploy only on Fridays ZK-5522")
    quarantine = h.project_dir / "quarantine"
    quarantine.mkdir(mode=0o700)
    copy_line = next(line for line in h.ledger_lines() if b"graph_imported" in line)
    (quarantine / "damaged-1-kept.bytes").write_bytes(copy_line + b"\n" + b'{"other":"kept"}\n')
    result = await h.call(
        "intent_delete",
        task_id=source,
        target="claim",
        claim_id=claim_id,
        confirmation=f"DELETE CLAIM {claim_id}",
        delete_copies=True,
    )
    assert result["deleted_copies"] == [{"task_id": target, "claim_id": copy_id}]
    assert result["other_copies"] == [] and result["files_with_content"] == []
    after = h.disk_bytes()
    assert b"ZK-5522" not in after and claim_id.encode() not in after and copy_id.encode() not in after
    assert (quarantine / "damaged-1-kept.bytes").read_bytes() == b'{"other":"kept"}\n'
    statements = [c["statement"] for c in (await h.snapshot(target))["active_claims"]]
    assert statements == ["target's own claim", "another source claim"]  # positive control: the rest stays


async def test_deleting_a_task_with_copies_removes_its_statements_elsewhere(h: Any) -> None:
    source, _claim_id, target, copy_id = await _imported_copy(h, "deploy only on Fridays ZK-5523")
    kept = await h.call("intent_delete", task_id=source, target="task", confirmation=f"DELETE TASK {source}")
    assert {"task_id": target, "claim_id": copy_id, "match": "same_statement"} in kept["other_copies"]
    assert b"ZK-5523" in h.disk_bytes()
    other = await h.start("deploy only on Fridays ZK-5524")
    await h.call(
        "intent_import", task_id=target, request_id=h.rid(), graph=await h.call("intent_export", task_id=other)
    )
    result = await h.call(
        "intent_delete", task_id=other, target="task", confirmation=f"DELETE TASK {other}", delete_copies=True
    )
    assert len(result["deleted_copies"]) == 1 and result["deleted_copies"][0]["task_id"] == target
    assert b"ZK-5524" not in h.disk_bytes() and b"ZK-5523" in h.disk_bytes()


async def test_a_deleted_claim_does_not_come_back_on_a_retry(h: Any) -> None:
    task = await h.start("kept")
    call = {"task_id": task, "statement": "retry me not QX-7301", "request_id": "add-7301"}
    doomed = await h.inferred(**call)
    assert (await h.inferred(**call))["claim_id"] == doomed["claim_id"]  # an ordinary retry: the same claim
    await _delete_claim(h, task, doomed["claim_id"])
    for service in (h, h.restarted()):  # this process, and a fresh one reading only the files
        await service.fails(
            "CLAIM_DELETED",
            "intent_add_inference",
            source_ref=h.agent_src(),
            facets=["soft_constraint"],
            confidence=0.6,
            **call,
        )
    assert [c["statement"] for c in (await h.snapshot(task))["active_claims"]] == ["kept"]
    tombstones = json.loads((h.project_dir / "deleted-requests.json").read_bytes())
    # the request's tombstone and the statement's (an old export leaves it out: test_share_erased_imports.py)
    assert len(tombstones["digests"]) == 2 and all(len(d) == 64 for d in tombstones["digests"])
    assert b"QX-7301" not in (h.project_dir / "deleted-requests.json").read_bytes()
    after = h.disk_bytes()
    assert doomed["claim_id"].encode() not in after and b"QX-7301" not in after and b"add-7301" not in after
    # positive controls: the statement again under a new request id is a new claim; another call is unaffected
    again = await h.inferred(task, "retry me not QX-7301", request_id="add-7301-again")
    assert again["claim_id"] != doomed["claim_id"]
    assert (await h.inferred(task, "something else", request_id="add-7302"))["statement"] == "something else"


async def test_a_deleted_replacement_is_remembered_too(h: Any) -> None:
    task = await h.start()
    base = await h.inferred(task, "deploy only on Fridays ZK-7303")
    replacement = {
        "task_id": task,
        "request_id": "rep-7303",
        "statement": "deploy any weekday ZK-7304",
        "source_ref": h.agent_src(),
        "facets": ["tradeoff"],
        "replacement_kind": "unknown",
        "supersedes": [base["claim_id"]],
    }
    replaced = await h.call("intent_replace_claim", **replacement)
    await _delete_claim(h, task, replaced["claim_id"])
    await h.fails("CLAIM_DELETED", "intent_replace_claim", **replacement)
    assert replaced["claim_id"].encode() not in h.disk_bytes() and b"ZK-7304" not in h.disk_bytes()
    assert (await h.snapshot(task))["active_claims"] == []  # what it replaced stays replaced


async def test_a_claim_is_looked_up_in_its_own_task_even_when_another_task_quotes_its_id(h: Any) -> None:
    """The claim is found by the lines that name it: a line of another task holding the id is not the claim."""
    owner = await h.start("owner's claim")
    other = await h.start("other's claim")
    doomed = await h.inferred(owner, "doomed statement QX-8801")
    quoting = await h.inferred(other, f"see claim {doomed['claim_id']} in the other task")
    for task in (other, str(uuid.uuid4())):
        code = "CLAIM_NOT_FOUND" if task == other else "TASK_NOT_FOUND"
        await h.fails(
            code,
            "intent_delete",
            task_id=task,
            target="claim",
            claim_id=doomed["claim_id"],
            confirmation=f"DELETE CLAIM {doomed['claim_id']}",
        )
    before = h.ledger.read_bytes()
    # In its own task it is found; its id is still quoted by the other task, so the rewrite refuses to go on.
    await h.fails(
        "DELETE_VERIFICATION_FAILED",
        "intent_delete",
        task_id=owner,
        target="claim",
        claim_id=doomed["claim_id"],
        confirmation=f"DELETE CLAIM {doomed['claim_id']}",
    )
    assert h.ledger.read_bytes() == before  # refused before anything changed
    await _delete_claim(h, other, quoting["claim_id"])
    result = await _delete_claim(h, owner, doomed["claim_id"])  # control: nothing quotes it any more
    assert result["deleted"] == "claim" and b"QX-8801" not in h.disk_bytes()


# ------------------------------------------------------------------ a deleted claim's supersessions outlive it


async def _replace(h: Any, task: str, statement: str, supersedes: list[str], **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = await h.call(
        "intent_replace_claim",
        task_id=task,
        request_id=h.rid(),
        statement=statement,
        source_ref=extra.pop("source_ref", h.user_src()),
        facets=["hard_constraint"],
        replacement_kind=extra.pop("replacement_kind", "explicit"),
        supersedes=supersedes,
        **({"confirmation_reason": "direct_statement"} | extra),
    )
    return result


def _history(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["claim"]["claim_id"]: entry for entry in snapshot["history"]}


async def test_deleting_a_replacement_keeps_what_it_replaced_out_of_the_view(h: Any) -> None:
    """A <- B <- C, delete B: A stays out (invalidated, content-free reason, at B's record time), C stays active."""
    task = await h.start()
    a = await h.explicit(task, "Tests must pass on Python 3.11")
    b = await _replace(h, task, "Tests must pass on Python 3.12 XQ-51", [a["claim_id"]])
    c = await _replace(h, task, "Tests must pass on Python 3.13", [b["claim_id"]])
    replaced_at = next(
        e["occurred_at"] for e in h.events() if e["payload"].get("claim", {}).get("claim_id") == b["claim_id"]
    )
    await _delete_claim(h, task, b["claim_id"])
    for harness in (h, h.restarted()):  # the server's cached fold and a fresh one agree
        snapshot = await harness.call("intent_get_snapshot", task_id=task, include_history=True)
        assert [x["claim_id"] for x in snapshot["active_claims"]] == [c["claim_id"]]
        assert snapshot["active_claims"][0]["supersedes"] == []
        entry = _history(snapshot)[a["claim_id"]]
        assert (entry["status"], entry["reason"], entry["by"]) == ("invalidated", "superseded by a deleted claim", None)
        assert entry["at"] == replaced_at
    # record time is kept: just before the replacement, A was the current claim
    earlier = await h.call("intent_get_snapshot", task_id=task, as_of=_just_before(replaced_at))
    assert [x["claim_id"] for x in earlier["active_claims"]] == [a["claim_id"]]
    after = h.disk_bytes()
    assert b["claim_id"].encode() not in after and b"XQ-51" not in after
    (invalidation,) = [e for e in h.events() if e["event_type"] == "claim_invalidated"]
    assert invalidation["actor"] == "user" and invalidation["payload"]["source_ref"] == {"kind": "user_event"}
    assert invalidation["request_id"] == f"intentloop:superseded-by-deleted:{invalidation['event_id']}"
    assert invalidation["payload"]["request_fingerprint"] == request_fingerprint(
        "invalidate_claim",
        {"claim_id": a["claim_id"], "reason": "superseded by a deleted claim", "source_ref": {"kind": "user_event"}},
    )
    ProjectStore(h.data_root, h.project_id).read()  # the rewritten chain verifies


def _just_before(instant: str) -> str:
    return format_time(parse_time(instant) - timedelta(milliseconds=1))


async def test_every_claim_a_deleted_replacement_superseded_stays_out_and_can_be_deleted_after(h: Any) -> None:
    task = await h.start()
    one = await h.inferred(task, "first guess")
    two = await h.inferred(task, "second guess")
    kept = await h.inferred(task, "unrelated guess")
    merged = await _replace(
        h,
        task,
        "merged guess",
        [one["claim_id"], two["claim_id"]],
        source_ref=h.agent_src(),
        replacement_kind="unknown",
    )
    await _delete_claim(h, task, merged["claim_id"])
    snapshot = await h.call("intent_get_snapshot", task_id=task, include_history=True)
    assert [x["claim_id"] for x in snapshot["active_claims"]] == [kept["claim_id"]]  # positive control: it stays
    history = _history(snapshot)
    assert {history[x["claim_id"]]["reason"] for x in (one, two)} == {"superseded by a deleted claim"}
    invalidations = [e for e in h.events() if e["event_type"] == "claim_invalidated"]
    assert [e["actor"] for e in invalidations] == ["agent", "agent"]
    assert len({e["event_id"] for e in invalidations} | {e["request_id"] for e in invalidations}) == 4
    # deleting a claim kept out this way takes its invalidation with it
    await _delete_claim(h, task, one["claim_id"])
    assert one["claim_id"].encode() not in h.disk_bytes()
    assert [e["payload"]["claim_id"] for e in h.events() if e["event_type"] == "claim_invalidated"] == [two["claim_id"]]
    assert [x["claim_id"] for x in (await h.snapshot(task))["active_claims"]] == [kept["claim_id"]]


async def test_deleting_an_imported_replacement_keeps_the_imported_original_out(h: Any) -> None:
    source = await h.start()
    old = await h.explicit(source, "Deploy from the main branch")
    await _replace(h, source, "Deploy from release branches only", [old["claim_id"]])
    graph = await h.call("intent_export", task_id=source)
    target = await h.start()
    await h.call("intent_import", task_id=target, request_id="imp", graph=graph)
    exported = await h.call("intent_export", task_id=target)
    by_statement = {c["statement"]: c["claim_id"] for c in exported["claims"]}
    await _delete_claim(h, target, by_statement["Deploy from release branches only"])
    snapshot = await h.call("intent_get_snapshot", task_id=target, include_history=True)
    assert snapshot["active_claims"] == []
    entry = _history(snapshot)[by_statement["Deploy from the main branch"]]
    assert (entry["status"], entry["reason"]) == ("invalidated", "superseded by a deleted claim")
    assert [e["event_type"] for e in h.events() if e["task_id"] == target][-2:] == [
        "graph_imported",
        "claim_invalidated",
    ]
    # the source task is another task: untouched
    assert [c["statement"] for c in (await h.snapshot(source))["active_claims"]] == [
        "Deploy from release branches only"
    ]


async def test_deleting_a_private_replacement_keeps_what_it_replaced_out(h: Any) -> None:
    task = await h.start(host_session_id="sess-q")
    await h.call("intent_set_mode", task_id=task, request_id="p", mode="private")
    old = await h.explicit(task, "Use the staging database")
    new = await _replace(h, task, "Use a local database", [old["claim_id"]])
    await _delete_claim(h, task, new["claim_id"])
    snapshot = await h.call("intent_get_snapshot", task_id=task, include_history=True)
    assert snapshot["active_claims"] == []
    assert _history(snapshot)[old["claim_id"]]["reason"] == "superseded by a deleted claim"
    events = h.service._engine.private.get(h.project_id, task)
    assert all(b.prev_hash == a.event_hash for a, b in itertools.pairwise(events))
    assert b"Use the staging database" not in h.disk_bytes()  # private state never reaches disk
