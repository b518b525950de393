"""Projection: supersede, invalidate, candidates, imports, session mapping, mode — and incremental == full."""

from __future__ import annotations

from datetime import timedelta

from intentloop.model import (
    ProjectState,
    apply_event,
    is_stale_long_term,
    new_uuid,
    parse_time,
    project,
    project_task,
    sha256_hex,
    task_for_session,
)

SESSION = sha256_hex("session-a")


def test_unknown_task_is_not_started() -> None:
    state = project([])
    assert state.started_task(new_uuid()) is None
    empty = project_task([], "t")
    assert not empty.started and empty.mode == "on" and empty.claims == {}


def test_start_sets_mode_label_session_and_initial_claims(ledger) -> None:
    task_id = new_uuid()
    initial = [ledger.new_claim(statement="Keep JSON."), ledger.new_claim(statement="No network.")]
    start = ledger.start(task_id, label="Refactor", session=SESSION, initial_claims=initial)
    task = project(ledger.events).started_task(task_id)
    assert task is not None and task.started
    assert (task.mode, task.label, task.host_session_hash) == ("on", "Refactor", SESSION)
    assert task.started_at == start.occurred_at == task.last_event_at
    assert [c.statement for c in task.active_claims()] == ["Keep JSON.", "No network."]
    assert task.requests[start.request_id] is start


def test_replacement_supersedes_and_old_claim_stays_in_history(ledger) -> None:
    task_id = new_uuid()
    ledger.start(task_id)
    old = ledger.claim(task_id, statement="Use YAML.")
    keep = ledger.claim(task_id, statement="Keep tests green.")
    new = ledger.claim(task_id, "claim_replaced", statement="Use JSON.", supersedes=[old.claim_id])
    task = project(ledger.events).tasks[task_id]
    assert [c.claim_id for c in task.active_claims()] == [keep.claim_id, new.claim_id]
    assert list(task.claims) == [old.claim_id, keep.claim_id, new.claim_id]
    assert task.superseded_by == {old.claim_id: [new.claim_id]}
    assert not task.is_active(old.claim_id) and task.is_active(new.claim_id)


def test_invalidation_removes_from_current_view_with_reason(ledger) -> None:
    task_id = new_uuid()
    ledger.start(task_id)
    gone = ledger.claim(task_id)
    stays = ledger.claim(task_id, status="evidence", facets=["failure_signal"])
    event = ledger.invalidate(task_id, gone.claim_id, reason="User changed their mind.")
    task = project(ledger.events).tasks[task_id]
    assert [c.claim_id for c in task.active_claims()] == [stays.claim_id]
    info = task.invalidations[gone.claim_id]
    assert (info.reason, info.event_id) == ("User changed their mind.", event.event_id)
    assert info.invalidated_at == event.payload["invalidated_at"] and info.occurred_at == event.occurred_at
    assert info.source_ref is not None and info.source_ref.kind == "user_event"


def test_candidates_from_hooks_long_term_and_imports_in_order(ledger) -> None:
    task_id = new_uuid()
    ledger.start(task_id)
    first = ledger.observe(task_id)
    second = ledger.observe(task_id, "result_signal_observed", "result_feedback")
    third = ledger.observe(task_id, "compaction_observed", "recovery_needed")
    fourth = ledger.observe(task_id, "candidate_added", "long_term_preference")
    imported_claim = ledger.new_claim(status="evidence", facets=["outcome"], source_kind="explicit_import")
    dropped = ledger.new_claim(status="unknown", facets=["unknown"], source_kind="explicit_import")
    imported_candidate = {
        "candidate_id": new_uuid(),
        "candidate_type": "prompt_update",
        "source_ref": {"kind": "explicit_import", "sha256": "e" * 64},
        "created_at": ledger.now(),
    }
    ledger.add(
        "graph_imported",
        task_id,
        {
            "claims": [imported_claim.to_wire(), dropped.to_wire()],
            "invalidated_claim_ids": [dropped.claim_id],
            "candidates": [imported_candidate],
            "imported_from": {
                "source_identity_sha256": "f" * 64,
                "exported_at": ledger.now(),
                "history_complete": False,
            },
            "request_fingerprint": "0" * 64,
        },
    )
    task = project(ledger.events).tasks[task_id]
    ids = [c.candidate_id for c in task.candidates]
    assert ids == [first, second, third, fourth, imported_candidate["candidate_id"]]
    assert [c.claim_id for c in task.active_claims()] == [imported_claim.claim_id]
    assert task.invalidations[dropped.claim_id].reason is None
    assert task.invalidated_claim_ids == [dropped.claim_id]


def test_mode_changes_and_session_moves_only_when_given(ledger) -> None:
    task_id = new_uuid()
    ledger.start(task_id, session=SESSION)
    ledger.set_mode(task_id, "off")
    task = project(ledger.events).tasks[task_id]
    assert task.mode == "off" and task.host_session_hash == SESSION
    ledger.set_mode(task_id, "on", host_session_hash=None)
    ledger.set_mode(task_id, "bogus")
    task = project(ledger.events).tasks[task_id]
    assert task.mode == "on" and task.host_session_hash is None


def test_session_maps_to_newest_started_task(ledger) -> None:
    older, newer, unstarted = new_uuid(), new_uuid(), new_uuid()
    ledger.start(older, session=SESSION)
    ledger.start(newer, session=SESSION)
    ledger.add("mode_set", unstarted, {"mode": "on", "host_session_hash": SESSION})
    state = project(ledger.events)
    assert task_for_session(state, SESSION).task_id == newer
    ledger.claim(older)  # activity makes the older task the newest
    assert task_for_session(project(ledger.events), SESSION).task_id == older
    ledger.set_mode(older, "on", host_session_hash=sha256_hex("other"))  # re-association elsewhere
    assert task_for_session(project(ledger.events), SESSION).task_id == newer
    assert task_for_session(project(ledger.events), sha256_hex("nobody")) is None


def test_session_tie_breaks_on_task_id(ledger) -> None:
    a, b = sorted([new_uuid(), new_uuid()])
    ledger.start(b, session=SESSION)
    ledger.add("task_started", a, {"mode": "on", "host_session_hash": SESSION}, at=ledger.events[-1].occurred_at)
    assert task_for_session(project(ledger.events), SESSION).task_id == b


def test_overwritten_claim_id_replaces_in_place_and_updates_supersession(ledger) -> None:
    task_id = new_uuid()
    ledger.start(task_id)
    target = ledger.claim(task_id)
    other = ledger.claim(task_id, status="evidence", facets=["outcome"])
    replacement = ledger.claim(task_id, "claim_replaced", supersedes=[target.claim_id])
    rewritten = {**replacement.to_wire(), "supersedes": [other.claim_id]}
    ledger.add("claim_replaced", task_id, {"claim": rewritten})
    task = project(ledger.events).tasks[task_id]
    assert list(task.claims) == [target.claim_id, other.claim_id, replacement.claim_id]
    assert task.superseded_by == {other.claim_id: [replacement.claim_id]}
    assert task.is_active(target.claim_id) and not task.is_active(other.claim_id)


def test_malformed_records_are_skipped_and_counted(ledger) -> None:
    task_id = new_uuid()
    ledger.start(task_id)
    good = ledger.claim(task_id)
    ledger.add("claim_added", task_id, {"claim": {"claim_id": new_uuid(), "statement": 5}})
    ledger.add("claim_added", task_id, {"claim": "not an object"})
    ledger.add("source_observed", task_id, {"candidate": {"candidate_id": new_uuid()}})
    task = project(ledger.events).tasks[task_id]
    assert [c.claim_id for c in task.active_claims()] == [good.claim_id]
    assert task.malformed == 2 and task.candidates == []


def test_incremental_projection_equals_full_projection(ledger) -> None:
    tasks = [new_uuid() for _ in range(5)]
    for t in tasks:
        ledger.start(t, session=sha256_hex(t))
    claims = []
    for i in range(300):
        t = tasks[i % 5]
        if i % 7 == 3 and claims:
            ledger.invalidate(claims[-1][0], claims[-1][1].claim_id)
            claims.pop()
        elif i % 11 == 5:
            ledger.observe(t)
        else:
            claims.append((t, ledger.claim(t, status=["explicit", "evidence", "unknown"][i % 3])))
    full = project(ledger.events)
    cached = ProjectState()
    for cut in (0, 17, 150, 299, len(ledger.events)):
        project(ledger.events[cached.event_count : cut], cached)
        assert cached.event_count == cut
    assert cached.head_hash == ledger.events[-1].event_hash
    for t in tasks:
        a, b = full.tasks[t], cached.tasks[t]
        assert [c.to_wire() for c in a.active_claims()] == [c.to_wire() for c in b.active_claims()]
        assert (a.invalidations, a.superseded_by, a.candidates, a.last_event_at) == (
            b.invalidations,
            b.superseded_by,
            b.candidates,
            b.last_event_at,
        )
    assert apply_event(ProjectState(), ledger.events[0]).task_id == tasks[0]


def test_ten_thousand_events_project(ledger) -> None:
    """Shape only (speed is a benchmark's business): 10,000 events over 50 tasks fold into 50 tasks."""
    tasks = [new_uuid() for _ in range(50)]
    for t in tasks:
        ledger.start(t)
    template = ledger.new_claim().to_wire()
    for i in range(10_000 - 50):
        ledger.add("claim_added", tasks[i % 50], {"claim": {**template, "claim_id": new_uuid()}})
    state = project(ledger.events)
    assert state.event_count == 10_000 and len(state.tasks) == 50
    assert sum(len(t.claims) for t in state.tasks.values()) == 9_950


def test_stale_long_term_inferences(ledger) -> None:
    now = parse_time(ledger.now())
    fresh = ledger.new_claim(status="inferred", scope="long_term", facets=["soft_constraint"])
    assert not is_stale_long_term(fresh, now + timedelta(days=90))
    assert is_stale_long_term(fresh, now + timedelta(days=90, seconds=1))
    task_scoped = ledger.new_claim(status="inferred", scope="task", facets=["soft_constraint"])
    explicit = ledger.new_claim(status="explicit", scope="long_term")
    assert not is_stale_long_term(task_scoped, now + timedelta(days=400))
    assert not is_stale_long_term(explicit, now + timedelta(days=400))
    import msgspec

    unreadable = msgspec.structs.replace(fresh, valid_from="yesterday")
    assert is_stale_long_term(unreadable, now)
