"""Salvage at the library level: the cases the CLI tests cannot stage (an interrupted run, a foreign line, a request
redone after quarantine, a stale mode change), each beside a positive control."""

from __future__ import annotations

import json

from intentloop.model import EventDraft, canonical_bytes, new_uuid
from intentloop.recovery import count_suffix, quarantine_damaged_suffix, salvage
from intentloop.recovery.salvaging import SALVAGE_PREFIX
from intentloop.store import verify_ledger_bytes


def _quarantined(project, count: int = 6, bad: int = 2) -> list[bytes]:
    """A ledger of ``count`` lines with line ``bad`` (0-based) tampered, quarantined with its raw bytes kept."""
    lines = project.write_lines(count)
    lines[bad] = project.tamper(lines[bad])
    project.write(b"".join(lines))
    assert quarantine_damaged_suffix(project.store, keep_bytes=True).action == "quarantined"
    return lines


def test_count_suffix_counts_events_claims_tasks_and_intact_events(project) -> None:
    lines = project.lines(5)
    suffix = project.tamper(lines[2]) + lines[3] + lines[4][:30]
    counted = count_suffix(suffix, project_id=project.project_id, first_line=3)
    assert counted.to_dict() == {
        "bytes": len(suffix),
        "lines": 3,
        "events": 2,
        "intact_events": 1,
        "claims": 2,
        "tasks": 1,
    }


def test_an_interrupted_salvage_is_redone_and_a_finished_one_is_not(project) -> None:
    lines = _quarantined(project)
    # An earlier run wrote its provenance record and died before the append: its planned ids are not in the ledger.
    original = json.loads(lines[3])
    stale = {
        "salvaged_at": "x",
        "sources": [],
        "events": [{"original_event_hash": original["event_hash"], "new_event_id": new_uuid()}],
    }
    (project.dir / "quarantine" / f"{SALVAGE_PREFIX}0-stale.json").write_bytes(canonical_bytes(stale))
    result = salvage(project.store)
    assert [item["line"] for item in result.appended] == [4, 5, 6]  # line 4 is not taken for done
    again = salvage(project.store)  # control: a finished run is recognised
    assert not again.appended and {s["reason"] for s in again.skipped} >= {"already salvaged"}


def test_an_event_whose_request_was_redone_after_quarantine_is_not_appended_twice(project) -> None:
    lines = _quarantined(project)
    redone = json.loads(lines[4])
    with project.store.locked() as ledger:  # the agent retried request req-4 after the quarantine
        ledger.append(
            [
                EventDraft(
                    event_type=redone["event_type"],
                    task_id=redone["task_id"],
                    actor="user",
                    request_id=redone["request_id"],
                    payload=redone["payload"],
                )
            ]
        )
    result = salvage(project.store)
    assert [item["line"] for item in result.appended] == [4, 6]
    assert {"line": 5, "reason": "its request is already in the ledger"}.items() <= next(
        s for s in result.skipped if s["line"] == 5
    ).items()


def test_lines_of_another_project_or_not_events_are_skipped_with_a_reason(project, new_project) -> None:
    lines = _quarantined(project, count=4, bad=1)
    foreign = new_project("someone else").lines(2)[1]
    raw_file = next((project.dir / "quarantine").glob("*.bytes"))
    raw_file.write_bytes(raw_file.read_bytes() + foreign + b"not json\n")
    result = salvage(project.store)
    reasons = {s["line"]: s["reason"] for s in result.skipped}
    assert reasons == {2: "event_hash does not match", 5: "belongs to another project", 6: "not JSON"}
    assert [item["line"] for item in result.appended] == [3, 4]
    check = verify_ledger_bytes(project.ledger.read_bytes(), project_id=project.project_id)
    assert check.error is None and len(check.events) == 3
    assert [e.request_id for e in check.events] == [json.loads(x)["request_id"] for x in (lines[0], lines[2], lines[3])]


def test_dry_run_changes_nothing(project) -> None:
    _quarantined(project)
    before = project.ledger.read_bytes()
    plan = salvage(project.store, dry_run=True)
    assert len(plan.appended) == 3 and plan.record is None and project.ledger.read_bytes() == before
    assert not list((project.dir / "quarantine").glob(f"{SALVAGE_PREFIX}*"))


def test_a_stale_mode_change_does_not_undo_a_newer_one(project) -> None:
    from intentloop.model import EventDraft as Draft

    lines = project.write_lines(4)
    task = json.loads(lines[0])["task_id"]
    with project.store.locked() as ledger:  # line 5: the task is set on; line 6: a claim
        ledger.append(
            [
                Draft(
                    event_type="mode_set",
                    task_id=task,
                    actor="user",
                    request_id="old-on",
                    payload={"mode": "on"},
                    occurred_at="2026-11-30T01:00:00.000Z",
                )
            ]
        )
        ledger.append(
            [
                Draft(
                    event_type="claim_added",
                    task_id=task,
                    actor="user",
                    request_id="late",
                    payload={"claim": {"statement": "claim number 9"}},
                )
            ]
        )
    lines = project.ledger.read_bytes().splitlines(keepends=True)
    lines[3] = project.tamper(lines[3])
    project.write(b"".join(lines))
    assert quarantine_damaged_suffix(project.store, keep_bytes=True).action == "quarantined"
    with project.store.locked() as ledger:  # after the damage the user turned the task off
        ledger.append(
            [
                Draft(
                    event_type="mode_set",
                    task_id=task,
                    actor="user",
                    request_id="now-off",
                    payload={"mode": "off"},
                    occurred_at="2026-11-30T02:00:00.000Z",
                )
            ]
        )
    result = salvage(project.store)
    reasons = {s["line"]: s["reason"] for s in result.skipped}
    assert reasons[5] == "a later mode change of its task is already in the ledger"
    assert [item["line"] for item in result.appended] == [6]  # control: the claim after it is given back
    from intentloop.model import project as fold

    assert fold(project.store.read().events).tasks[task].mode == "off"


def test_events_of_a_task_whose_start_was_the_damaged_line_stay_set_aside(project) -> None:
    """Line 2 starts task B and is damaged: B's claim (line 4) would be re-appended where no view shows it (no task
    without its ``task_started`` exists for readers), so it stays in quarantine and says why; task A's claims, whose
    start is in the ledger, come back (positive control)."""
    from intentloop.model import project as fold

    lines = project.write_lines(5, tasks=2)  # tasks A, B started; claims of A (lines 3, 5) and B (line 4)
    lines[1] = project.tamper(lines[1])
    project.write(b"".join(lines))
    assert quarantine_damaged_suffix(project.store, keep_bytes=True).action == "quarantined"
    task_a, task_b = (json.loads(lines[i])["task_id"] for i in (0, 1))
    result = salvage(project.store)
    assert [(item["line"], item["task_id"]) for item in result.appended] == [(3, task_a), (5, task_a)]
    [aside] = [s for s in result.skipped if s["line"] == 4]
    assert aside["set_aside"] is True and aside["task_id"] == task_b
    assert "task_started" in aside["reason"] and "quarantine" in aside["reason"]
    state = fold(project.store.read().events)
    assert {e.task_id for e in project.store.read().events} == {task_a}  # nothing of B was appended
    assert all(state.tasks[item["task_id"]].started for item in result.appended)  # every appended event is seen
