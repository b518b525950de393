"""ProjectStore reads and LockedLedger writes: views, indexes, cache, torn-tail repair, rewrite, controls."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from intentloop.errors import CorruptLedgerError, InvalidInputError, StorageError
from intentloop.model import EventDraft, project_id_for, rechain
from intentloop.store import LedgerView, LockConfig, PrivateControl, ProjectStore, verify_ledger_bytes
from intentloop.store._checkpoint import CHECKPOINT_NAME

FAST = LockConfig(heartbeat_s=0.5, stale_s=1.0, wait_s=0.3, ceiling_s=2.0)
PID = project_id_for("/ledger/tests")


def draft(task: str, request_id: str, **payload) -> EventDraft:
    return EventDraft(event_type="claim_added", task_id=task, actor="user", request_id=request_id, payload=payload)


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    return ProjectStore(data_root, PID, config=FAST)


def test_append_then_read_with_indexes(store):
    task_a, task_b = str(uuid.uuid4()), str(uuid.uuid4())
    with store.locked() as ledger:
        assert ledger.view.events == () and ledger.view.head_hash is None
        first = ledger.append([draft(task_a, "a-1", n=1), draft(task_b, "b-1", n=2)])
        assert ledger.view.find_request(task_a, "a-1") == first[0]
        second = ledger.append([draft(task_a, "a-2", text="ünïcode ✓", confidence=0.85)])
        assert ledger.view.head_hash == second[0].event_hash
    view = store.read()
    assert [e.request_id for e in view.events] == ["a-1", "b-1", "a-2"]
    assert view.find_request(task_a, "a-2") == second[0]
    assert view.find_request(task_b, "a-2") is None  # scoped by task
    assert [e.request_id for e in view.by_task(task_a)] == ["a-1", "a-2"]
    assert view.by_task(str(uuid.uuid4())) == ()
    assert second[0].prev_hash == first[1].event_hash
    assert verify_ledger_bytes(store.ledger_path.read_bytes(), project_id=PID).ok


def test_extended_view_keeps_indexes_consistent():
    task = str(uuid.uuid4())
    base = LedgerView()
    assert base.find_request(task, "x") is None  # builds indexes
    from intentloop.model import seal

    event = seal(draft(task, "x"), project_id=PID, prev_hash=None)
    grown = base.extended([event], 10)
    assert grown.find_request(task, "x") == event and grown.by_task(task) == (event,)
    assert base.find_request(task, "x") is None and base.by_task(task) == ()  # the old view is untouched


def test_a_view_extended_twice_keeps_each_branch_apart():
    """Extending hands the indexes over; a second extension of the same view (a branch) must not see the first's."""
    from intentloop.model import seal

    task = str(uuid.uuid4())
    base = LedgerView()
    first = seal(draft(task, "a"), project_id=PID, prev_hash=None)
    base = base.extended([first], 1)
    assert base.find_request(task, "a") == first  # builds the indexes
    one = base.extended([seal(draft(task, "b"), project_id=PID, prev_hash=first.event_hash)], 2)
    two = base.extended([seal(draft(task, "c"), project_id=PID, prev_hash=first.event_hash)], 2)
    assert [e.request_id for e in one.by_task(task)] == ["a", "b"] and one.find_request(task, "c") is None
    assert [e.request_id for e in two.by_task(task)] == ["a", "c"] and two.find_request(task, "b") is None
    assert [e.request_id for e in base.by_task(task)] == ["a"] and base.find_request(task, "b") is None
    assert base.task_ids() == (task,) and LedgerView().task_ids() == ()
    three = one.extended([seal(draft(str(uuid.uuid4()), "d"), project_id=PID, prev_hash=None)], 3)
    assert len(three.task_ids()) == 2 and len(one.task_ids()) == 1


def test_append_refuses_a_draft_the_verifier_would_reject(store):
    with store.locked() as ledger:
        for bad in (
            EventDraft(event_type="nonsense", task_id=str(uuid.uuid4()), actor="user", request_id="r", payload={}),
            EventDraft(event_type="claim_added", task_id="not-a-uuid", actor="user", request_id="r", payload={}),
            EventDraft(event_type="claim_added", task_id=str(uuid.uuid4()), actor="user", request_id="", payload={}),
            draft(str(uuid.uuid4()), "r", bad=float("nan")),
        ):
            with pytest.raises(InvalidInputError) as info:
                ledger.append([bad])
            assert info.value.code == "INVALID_ARGUMENTS"
        assert ledger.append([draft(str(uuid.uuid4()), "ok")])  # control
    assert len(store.read()) == 1


def test_read_reports_torn_tail_and_changes_nothing(store):
    task = str(uuid.uuid4())
    with store.locked() as ledger:
        ledger.append([draft(task, "r-1")])
    good = store.ledger_path.read_bytes()
    store.ledger_path.write_bytes(good + b'{"actor":"user","ev')
    with pytest.raises(CorruptLedgerError) as info:
        store.read()
    assert info.value.code == "CORRUPT_TRAILING_EVENT" and info.value.retryable and info.value.line == 2
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]


def test_next_write_quarantines_torn_tail_summary_only(store):
    task = str(uuid.uuid4())
    with store.locked() as ledger:
        ledger.append([draft(task, "r-1")])
    good = store.ledger_path.read_bytes()
    torn = b'{"actor":"user","secret":"do-not-keep'
    store.ledger_path.write_bytes(good + torn)
    with store.locked() as ledger:
        assert len(ledger.view) == 1
        ledger.append([draft(task, "r-2")])
    records = os.listdir(store.quarantine_dir)
    assert len(records) == 1 and records[0].startswith("partial-") and records[0].endswith(".json")
    record = json.loads((store.quarantine_dir / records[0]).read_bytes())
    assert set(record) == {"byte_length", "observed_at", "sha256"}
    assert record["byte_length"] == len(torn)
    import hashlib

    assert record["sha256"] == hashlib.sha256(torn).hexdigest()
    assert b"do-not-keep" not in (store.quarantine_dir / records[0]).read_bytes()
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2"]
    assert store.ledger_path.read_bytes().startswith(good)


def test_entering_the_lock_repairs_torn_tail_even_without_a_write(store):
    task = str(uuid.uuid4())
    with store.locked() as ledger:
        ledger.append([draft(task, "r-1")])
    good = store.ledger_path.read_bytes()
    store.ledger_path.write_bytes(good + b"{")
    with store.locked():
        pass
    assert store.ledger_path.read_bytes() == good
    assert len(store.read()) == 1


def test_corrupt_middle_line_refuses_the_lock_but_verify_false_opens_it(store):
    task = str(uuid.uuid4())
    with store.locked() as ledger:
        ledger.append([draft(task, "r-1"), draft(task, "r-2"), draft(task, "r-3")])
    lines = store.ledger_path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"r-2"', b'"r-X"')
    store.ledger_path.write_bytes(b"\n".join(lines))
    before = store.ledger_path.read_bytes()
    for action in (store.read, lambda: store.locked().__enter__()):
        with pytest.raises(CorruptLedgerError) as info:
            action()
        assert info.value.code == "CORRUPT_LEDGER" and info.value.line == 2
    assert store.ledger_path.read_bytes() == before and not store.lock_path.exists()
    with store.locked(verify=False) as ledger:
        assert ledger.damage is not None and ledger.damage.line == 2
        assert len(ledger.view) == 1
        with pytest.raises(CorruptLedgerError):
            ledger.append([draft(task, "r-4")])
        ledger.rewrite(ledger.view.events)  # recovery keeps the verified prefix
        assert ledger.damage is None
        ledger.append([draft(task, "r-4")])
    assert [e.request_id for e in store.read().events] == ["r-1", "r-4"]


def test_future_schema_is_refused_by_read_and_lock(store, ledger_kit):
    event = ledger_kit.make_event(PID, None, task_id=str(uuid.uuid4()), request_id="r", schema_version=2)
    store.project_dir.mkdir(parents=True)
    store.ledger_path.write_bytes(ledger_kit.line(event))
    for action in (store.read, lambda: store.locked().__enter__()):
        with pytest.raises(CorruptLedgerError) as info:
            action()
        assert info.value.code == "FUTURE_SCHEMA"


def test_rewrite_replaces_and_verifies(store):
    task_a, task_b = str(uuid.uuid4()), str(uuid.uuid4())
    with store.locked() as ledger:
        ledger.append([draft(task_a, "a"), draft(task_b, "b"), draft(task_a, "c")])
        kept = rechain([e for e in ledger.view.events if e.task_id == task_a], project_id=PID)
        ledger.rewrite(kept)
        assert ledger.view.events == tuple(kept)
        with pytest.raises(StorageError) as info:
            ledger.rewrite(list(reversed(kept)))  # a broken chain is never written
        assert info.value.code == "DELETE_VERIFICATION_FAILED"
    assert [e.request_id for e in store.read().events] == ["a", "c"]


def test_cache_is_never_trusted_when_the_file_changes(store):
    task = str(uuid.uuid4())
    with store.locked() as ledger:
        ledger.append([draft(task, "r-1"), draft(task, "r-2")])
    assert len(store.read()) == 2
    data = store.ledger_path.read_bytes()
    tampered = data.replace(b'"r-2"', b'"r-3"')  # same size, different bytes, written in place
    with open(store.ledger_path, "r+b") as handle:
        handle.write(tampered)
    with pytest.raises(CorruptLedgerError) as info:
        store.read()
    assert info.value.line == 2
    with open(store.ledger_path, "r+b") as handle:
        handle.write(data)
    assert len(store.read()) == 2


def test_a_second_store_object_sees_writes_of_the_first(data_root):
    one, two = ProjectStore(data_root, PID, config=FAST), ProjectStore(data_root, PID, config=FAST)
    task = str(uuid.uuid4())
    for index in range(3):
        with one.locked() as ledger:
            ledger.append([draft(task, f"r-{index}")])
        assert len(two.read()) == index + 1


def test_locked_ledger_is_invalid_after_release(store):
    with store.locked() as ledger:
        pass
    with pytest.raises(StorageError) as info:
        ledger.append([draft(str(uuid.uuid4()), "late")])
    assert info.value.code == "LOCK_COMPROMISED"
    assert not store.lock_path.exists()


def test_lost_owner_token_blocks_the_replace_and_the_release(store, ledger_kit):
    task = str(uuid.uuid4())
    with store.locked() as ledger:
        ledger.append([draft(task, "r-1")])
    before = store.ledger_path.read_bytes()
    with store.locked() as ledger:
        (store.lock_path / "owner.json").write_bytes(ledger_kit.owner_record(os.getpid(), token="someone-else"))
        with pytest.raises(StorageError) as info:
            ledger.append([draft(task, "r-2")])
        assert info.value.code == "LOCK_COMPROMISED" and info.value.retryable
    assert store.ledger_path.read_bytes() == before
    assert [p.name for p in store.project_dir.iterdir() if p.name.startswith("ledger-")] == []  # temp removed
    assert b"someone-else" in (store.lock_path / "owner.json").read_bytes()  # not released: not ours


def test_private_controls_roundtrip(store):
    task = str(uuid.uuid4())
    control = PrivateControl(
        created_at="2026-11-30T01:02:03.456Z", host_session_hash="c" * 64, project_id=PID, task_id=task
    )
    with store.locked() as ledger:
        ledger.write_control(control)
    path = store.private_dir / f"{'c' * 64}.json"
    assert json.loads(path.read_bytes()) == {
        "created_at": "2026-11-30T01:02:03.456Z",
        "host_session_hash": "c" * 64,
        "mode": "private",
        "project_id": PID,
        "schema_version": 1,
        "task_id": task,
    }
    assert store.read_controls() == [control] and store.read_control("c" * 64) == control
    assert store.read_control("d" * 64) is None
    with store.locked() as ledger:
        assert ledger.remove_control("c" * 64) is True
        assert ledger.remove_control("c" * 64) is False
    assert store.read_controls() == []


def test_invalid_controls_are_refused(store):
    task = str(uuid.uuid4())
    with pytest.raises(InvalidInputError) as info:
        store.read_control("../x")
    assert info.value.code == "INVALID_SESSION_HASH"
    with store.locked() as ledger:
        with pytest.raises(InvalidInputError):
            ledger.write_control(
                PrivateControl(created_at="now", host_session_hash="c" * 64, project_id=PID, task_id=task)
            )
        with pytest.raises(InvalidInputError):
            ledger.write_control(
                PrivateControl(
                    created_at="2026-11-30T01:02:03.456Z", host_session_hash="c" * 64, project_id="e" * 64, task_id=task
                )
            )
    store.private_dir.mkdir()
    path = store.private_dir / f"{'c' * 64}.json"
    for content in (b"{", b"[]", json.dumps({"created_at": "x"}).encode()):
        path.write_bytes(content)
        with pytest.raises(StorageError) as info:
            store.read_controls()
        assert info.value.code == "CORRUPT_PRIVATE_CONTROL" and info.value.retryable
    path.write_bytes(
        json.dumps(
            {
                "created_at": "2026-11-30T01:02:03.456Z",
                "host_session_hash": "d" * 64,  # does not match the file name
                "mode": "private",
                "project_id": PID,
                "schema_version": 1,
                "task_id": task,
            }
        ).encode()
    )
    with pytest.raises(StorageError) as info:
        store.read_control("c" * 64)
    assert info.value.code == "CORRUPT_PRIVATE_CONTROL"
    path.unlink()
    (store.private_dir / "stray.json").write_text("{}")
    with pytest.raises(StorageError) as info:
        store.read_controls()
    assert info.value.code == "INVALID_SESSION_HASH"


def test_remove_quarantine(store):
    with store.locked() as ledger:
        ledger.remove_quarantine()  # nothing there: fine
        ledger.write_quarantine("partial-1-x.json", b"{}\n")
    assert store.quarantine_dir.is_dir()
    with store.locked() as ledger:
        ledger.remove_quarantine()
    assert not store.quarantine_dir.exists()
    assert sorted(os.listdir(store.project_dir)) == []
