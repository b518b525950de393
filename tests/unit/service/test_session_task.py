"""The store's answer to "which task is this session bound to" (``ProjectStore.session_task`` lock-free,
``LockedLedger.session_task`` under the lock), and the hook's plan built on it (plan, then act)."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from intentloop.errors import InvalidInputError
from intentloop.model import association_context, session_hash
from intentloop.service.hookops import Observation, plan_observation, record_planned
from intentloop.store import CHECKPOINT_NAME, ProjectStore
from intentloop.store._sessions import SessionTask

SESSION = "session-0001"


def _stamp(store: ProjectStore) -> tuple[int, int, int, int, int]:
    st = os.lstat(store.ledger_path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def test_the_index_answers_when_the_checkpoint_vouches(project: Any) -> None:
    task = project.start_task(SESSION, claims=["Use PostgreSQL only"])
    store = project.store
    found = store.session_task(session_hash(SESSION))
    assert found.answered and found.task is not None and found.task.task_id == task
    assert found.view is None  # no whole read
    assert found.stamp == _stamp(store)
    assert store.session_task(session_hash("another")).task is None  # control: an unbound session


def test_without_a_checkpoint_the_whole_ledger_answers(project: Any) -> None:
    task = project.start_task(SESSION)
    store = project.store
    (store.project_dir / CHECKPOINT_NAME).unlink()
    found = store.session_task(session_hash(SESSION))
    assert found.view is not None and found.task is not None and found.task.task_id == task


def test_a_whole_read_larger_than_allowed_is_refused_with_the_size(project: Any) -> None:
    project.start_task(SESSION)
    store = project.store
    (store.project_dir / CHECKPOINT_NAME).unlink()
    size = store.ledger_path.stat().st_size
    refused = store.session_task(session_hash(SESSION), whole_read_limit=size - 1)
    assert not refused.answered and refused.whole_read_bytes == size and refused.view is None
    allowed = store.session_task(session_hash(SESSION), whole_read_limit=size)  # control: at the limit it reads
    assert allowed.answered and allowed.task is not None


def test_under_the_lock_an_index_answer_stands_while_the_file_is_unchanged(project: Any) -> None:
    project.start_task(SESSION)
    other = project.start_task("someone-else")
    store = project.store
    shash = session_hash(SESSION)
    decoy = store.session_task(session_hash("someone-else")).task  # a task this session is NOT bound to
    assert decoy is not None and decoy.task_id == other
    with store.locked(time.monotonic() + 5) as ledger:
        stale = SessionTask(decoy, (0, 0, 0, 0, 0))  # a stamp no file has: read again
        assert ledger.session_task(shash, since=stale) is not None
        assert ledger.session_task(shash, since=stale).task_id != other  # type: ignore[union-attr]
        current = SessionTask(decoy, _stamp(store))  # the file as it is: the earlier answer is taken as it is
        assert ledger.session_task(shash, since=current) is decoy


def test_the_plan_of_a_large_unvouched_ledger_says_how_large(project: Any) -> None:
    project.start_task(SESSION)
    store = project.store
    (store.project_dir / CHECKPOINT_NAME).unlink()
    obs = Observation(event="UserPromptSubmit", session_id=SESSION, turn_id="t1", text="hello")
    plan = plan_observation(project.data_root, str(project.root), obs, whole_read_limit=1)
    assert plan.whole_read_bytes == store.ledger_path.stat().st_size and plan.task_id is None
    with pytest.raises(InvalidInputError):  # acting on it would decide without reading: refused
        record_planned(plan, deadline=time.monotonic() + 2)
    whole = plan_observation(project.data_root, str(project.root), obs)  # control: no limit, a decision
    assert whole.whole_read_bytes is None and whole.task_id is not None
    assert record_planned(whole, deadline=time.monotonic() + 2).recorded


def test_an_unlinked_session_plans_nothing_and_takes_no_lock(project: Any) -> None:
    project.start_task("someone-else")
    obs = Observation(event="UserPromptSubmit", session_id=SESSION, turn_id="t1", text="hello")
    plan = plan_observation(project.data_root, str(project.root), obs)
    assert plan.task_id is None and plan.context == association_context(SESSION)
    before = _stamp(project.store)
    outcome = record_planned(plan, deadline=time.monotonic() + 2, with_context=True)
    assert (outcome.recorded, outcome.context) == (False, association_context(SESSION))
    assert _stamp(project.store) == before
