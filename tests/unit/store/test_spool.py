"""The observation spool: drained by the next writer exactly once, bounded, strict about what it accepts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from intentloop.model import EventDraft, project_id_for, utc_now
from intentloop.store import ProjectStore, _spool as spool_module

PID = project_id_for("/spool/tests")
TASK = str(uuid.uuid4())


def _observation(n: int, task: str = TASK, event_type: str = "source_observed") -> EventDraft:
    return EventDraft(
        event_type=event_type,
        task_id=task,
        actor="user",
        request_id=f"hook:UserPromptSubmit:{n:024x}",
        payload={"char_count": n},
        occurred_at=utc_now(),
    )


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID)
    with store.locked() as ledger:
        ledger.append([EventDraft(event_type="task_started", task_id=TASK, actor="user", request_id="s", payload={})])
    return store


def _write(store: ProjectStore) -> None:
    """Any write: the next writer drains the spool before its own change."""
    with store.locked() as ledger:
        ledger.append([EventDraft(event_type="mode_set", task_id=TASK, actor="user", request_id=str(uuid.uuid4()),
                                  payload={})])  # fmt: skip


def _observed(store: ProjectStore) -> list[str]:
    return [e.request_id for e in store.read().events if e.request_id.startswith("hook:")]


def test_next_writer_appends_every_spooled_observation_once(store: ProjectStore) -> None:
    assert all(store.spool(_observation(n)) for n in range(3))
    assert store.spool(_observation(1))  # the same turn spooled twice
    assert _observed(store) == []  # a read never drains
    _write(store)
    assert sorted(_observed(store)) == [f"hook:UserPromptSubmit:{n:024x}" for n in range(3)]
    assert os.listdir(store.paths.spool_dir) == []
    assert store.verify().ok


def test_a_drain_repeated_after_its_commit_records_nothing_twice(store: ProjectStore, tmp_path: Path) -> None:
    """A crash after the append but before the entries are removed leaves them: the next drain skips them."""
    for n in range(3):
        store.spool(_observation(n))
    kept = tmp_path / "kept"
    shutil.copytree(store.paths.spool_dir, kept)
    _write(store)
    for name in os.listdir(kept):
        shutil.copy2(kept / name, store.paths.spool_dir / name)
    _write(store)
    assert len(_observed(store)) == 3 and len(set(_observed(store))) == 3
    assert os.listdir(store.paths.spool_dir) == []


_KILLED_DRAIN = """
import os, signal, sys, uuid
from intentloop.model import EventDraft
from intentloop.store import ProjectStore
import intentloop.store._spool as spool
def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # right after the drain's commit, before any entry is removed
spool.unlink_quietly = killed
store = ProjectStore(sys.argv[1], sys.argv[2])
with store.locked() as ledger:
    pass
"""


def test_a_drainer_killed_after_its_commit_leaves_nothing_to_double(store: ProjectStore) -> None:
    for n in range(3):
        store.spool(_observation(n))
    child = subprocess.run([sys.executable, "-c", _KILLED_DRAIN, str(store.data_root), PID], check=False)
    assert child.returncode == -signal.SIGKILL
    assert len(_observed(store)) == 3  # committed by the killed drainer
    assert len(os.listdir(store.paths.spool_dir)) == 3  # and its entries left behind
    _write(store)
    assert len(_observed(store)) == 3 and len(set(_observed(store))) == 3
    assert os.listdir(store.paths.spool_dir) == []


def test_the_spool_is_bounded(store: ProjectStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spool_module, "SPOOL_MAX_ENTRIES", 4)
    assert [store.spool(_observation(n)) for n in range(6)] == [True] * 4 + [False] * 2
    big = EventDraft(
        event_type="source_observed", task_id=TASK, actor="user", request_id="hook:Stop:x",
        payload={"pad": "x" * spool_module.SPOOL_MAX_ENTRY_BYTES}, occurred_at=utc_now(),
    )  # fmt: skip
    _write(store)
    assert not store.spool(big)  # an oversized entry is refused
    assert store.spool(_observation(9))  # positive control: drained, there is room again


def test_only_observations_of_known_tasks_are_appended(store: ProjectStore) -> None:
    assert not store.spool(_observation(1, event_type="claim_added"))  # the hook face refuses non-observations
    directory = store.paths.spool_dir
    store.spool(_observation(2))  # valid, beside the planted ones below
    [valid] = os.listdir(directory)
    planted = (directory / valid).read_bytes().replace(b"source_observed", b"claim_added")
    assert planted != (directory / valid).read_bytes()
    store.spool(_observation(3, task=str(uuid.uuid4())))  # a task the ledger does not hold (deleted since)
    (directory / f"obs-{uuid.uuid4()}.json").write_bytes(b"{garbage")
    (directory / f"obs-{uuid.uuid4()}.json").write_bytes(planted)
    (directory / "notes.txt").write_bytes(b"a user's file")  # not a spool name: never touched
    _write(store)
    assert _observed(store) == [f"hook:UserPromptSubmit:{2:024x}"]
    assert sorted(os.listdir(directory)) == ["notes.txt"]
    assert store.verify().ok


def test_recovery_entering_a_damaged_ledger_does_not_drain(store: ProjectStore) -> None:
    store.spool(_observation(1))
    with store.ledger_path.open("ab") as handle:
        handle.write(b"{torn")
    with store.locked(verify=False) as ledger:
        assert ledger.damage is not None
    assert len(os.listdir(store.paths.spool_dir)) == 1
    _write(store)  # positive control: the next ordinary write repairs the tail and drains
    assert len(_observed(store)) == 1


def _bound_task(store: ProjectStore, session: str, mode: str = "on") -> str:
    """A task started bound to ``session`` (as ``intent_start_task`` with ``host_session_id`` leaves it)."""
    from intentloop.model import session_hash

    task = str(uuid.uuid4())
    payload = {"mode": mode, "label": "bound", "initial_claims": [], "host_session_hash": session_hash(session)}
    with store.locked() as ledger:
        ledger.append([EventDraft(event_type="task_started", task_id=task, actor="user", request_id=task,
                                  payload=payload)])  # fmt: skip
    return task


def test_an_entry_by_session_is_recorded_into_the_task_the_hook_would_record_it_into(store: ProjectStore) -> None:
    from intentloop.model import session_hash
    from intentloop.store import PrivateControl

    on = _bound_task(store, "session-on")
    _bound_task(store, "session-off", mode="off")
    private_task = _bound_task(store, "session-private")
    with store.locked() as ledger:
        ledger.write_control(
            PrivateControl(
                created_at=utc_now(),
                host_session_hash=session_hash("session-private"),
                project_id=PID,
                task_id=private_task,
            )
        )
    for n, session in enumerate(("session-on", "session-off", "session-private", "session-unbound")):
        assert store.spool(_observation(n, task=""), session_hash=session_hash(session))
    _write(store)
    recorded = [(e.task_id, e.request_id) for e in store.read().events if e.request_id.startswith("hook:")]
    # only the session whose task is on (positive control); off, private and unbound sessions record nothing
    assert recorded == [(on, f"hook:UserPromptSubmit:{0:024x}")]
    assert os.listdir(store.paths.spool_dir) == []  # every entry is gone, recorded or not
    assert not store.spool(_observation(5, task=""), session_hash="not-a-hash")  # a malformed hash is refused
