"""Relink at the library level: an interrupted run finished by a rerun, a different target ledger and a live
private session refused, each beside a positive control."""

from __future__ import annotations

import pytest

from intentloop.errors import IntentLoopError
from intentloop.recovery import relink_project
from intentloop.store import PrivateControl


def test_relink_interrupted_after_the_new_ledger_was_written_is_finished_by_a_rerun(project, new_project) -> None:
    from intentloop.model import rechain

    project.write_lines(4)
    target = new_project("moved here")
    events = list(project.store.read().events)
    with target.store.locked() as ledger:  # what the first run wrote before it died
        ledger.rewrite(rechain(events, project_id=target.project_id))
    result = relink_project(project.store, target.store)
    assert result.resumed and result.events == 4 and project.ledger.read_bytes() == b""
    assert [e.event_id for e in target.store.read().events] == [e.event_id for e in events]


def test_relink_refuses_a_different_target_ledger_and_a_live_private_session(project, new_project) -> None:
    project.write_lines(3)
    target = new_project("target")
    target.write_lines(2)
    with pytest.raises(IntentLoopError) as caught:
        relink_project(project.store, target.store)
    assert caught.value.code == "RELINK_TARGET_EXISTS"
    other = new_project("empty target")
    task = project.store.read().events[0].task_id
    control = PrivateControl(
        created_at="2026-11-30T01:02:03.456Z",
        host_session_hash="a" * 64,
        mode="private",
        project_id=project.project_id,
        schema_version=1,
        task_id=task,
    )
    with project.store.locked() as ledger:
        ledger.write_control(control)
    with pytest.raises(IntentLoopError) as caught:
        relink_project(project.store, other.store)
    assert caught.value.code == "PRIVATE_SESSION_ACTIVE" and not other.dir.exists()
    with project.store.locked() as ledger:
        ledger.remove_control("a" * 64)
    assert relink_project(project.store, other.store).events == 3  # control: without the session it moves
