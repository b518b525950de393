"""The lock with real processes: dead owners go at once, live owners never, unknown ones after the stale window."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import LockConfig, ProjectStore
from intentloop.store._checkpoint import CHECKPOINT_NAME
from intentloop.store._lock import UNREADABLE_OWNER_GRACE_S

PID = project_id_for("/lock/tests")
TASK = str(uuid.uuid4())
# Default stale window: a dead owner must be reclaimed at once, not because the window passed.
PATIENT = LockConfig(heartbeat_s=10, stale_s=30, wait_s=5, ceiling_s=30)
QUICK = LockConfig(heartbeat_s=10, stale_s=1.0, wait_s=0.3, ceiling_s=3.0)


def append(store: ProjectStore, request_id: str, deadline: float | None = None) -> float:
    started = time.monotonic()
    with store.locked(deadline) as ledger:
        ledger.append(
            [EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=request_id, payload={})]
        )
    return time.monotonic() - started


@pytest.fixture
def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def snapshot(store: ProjectStore) -> dict[str, bytes | None]:
    state: dict[str, bytes | None] = {}
    for path in sorted(store.project_dir.rglob("*")):
        state[str(path.relative_to(store.project_dir))] = path.read_bytes() if path.is_file() else None
    return state


def test_owner_record_identifies_this_process(data_root, ledger_kit):
    store = ProjectStore(data_root, PID, config=PATIENT)
    with store.locked():
        record = json.loads((store.lock_path / "owner.json").read_bytes())
    assert set(record) == {"acquired_at", "boot_id", "heartbeat_at", "host", "pid", "start_time", "token"}
    assert record["pid"] == os.getpid() and record["start_time"] == ledger_kit.process_start_time(os.getpid())
    assert record["boot_id"] == ledger_kit.boot_id() and record["host"] == os.uname().nodename
    assert len(record["token"]) >= 32
    assert sorted(os.listdir(store.project_dir)) == []  # released: no lock, no remnants


@pytest.mark.parametrize("style", ["ours", "legacy"])
def test_owner_with_a_gone_pid_is_reclaimed_at_once(data_root, ledger_kit, dead_pid, style):
    store = ProjectStore(data_root, PID, config=PATIENT)
    append(store, "before")
    owner = ledger_kit.owner_record(dead_pid, start_time=1) if style == "ours" else ledger_kit.legacy_owner(dead_pid)
    ledger_kit.plant_lock(store.project_dir, owner)
    assert append(store, "after") < 1.0
    assert [e.request_id for e in store.read().events] == ["before", "after"]
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]


def test_live_pid_with_another_start_time_is_a_reused_pid_and_reclaimed(data_root, ledger_kit, sleeper):
    store = ProjectStore(data_root, PID, config=PATIENT)
    real = ledger_kit.process_start_time(sleeper.pid)
    ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(sleeper.pid, start_time=real + 4242))
    assert append(store, "after") < 1.0
    assert sleeper.poll() is None  # the unrelated process is untouched


def test_owner_from_a_previous_boot_is_dead(data_root, ledger_kit, sleeper):
    store = ProjectStore(data_root, PID, config=PATIENT)
    record = json.loads(ledger_kit.owner_record(sleeper.pid))
    record["boot_id"] = str(uuid.uuid4())
    ledger_kit.plant_lock(store.project_dir, ledger_kit.canonical(record))
    assert append(store, "after") < 1.0


@pytest.mark.parametrize("style", ["ours", "legacy"])
def test_live_owner_is_never_robbed(data_root, ledger_kit, sleeper, style):
    store = ProjectStore(data_root, PID, config=QUICK)
    append(store, "before")
    owner = ledger_kit.owner_record(sleeper.pid) if style == "ours" else ledger_kit.legacy_owner(sleeper.pid)
    lock = ledger_kit.plant_lock(store.project_dir, owner)
    ledger_kit.age(lock, 3600)  # long past the stale window: liveness still wins
    before = snapshot(store)
    started = time.monotonic()
    with pytest.raises(StorageError) as info:
        append(store, "after")
    elapsed = time.monotonic() - started
    assert info.value.code == "LOCK_TIMEOUT" and info.value.retryable
    assert QUICK.wait_s <= elapsed < QUICK.wait_s + 0.5
    assert snapshot(store) == before


@pytest.mark.parametrize(
    "owner", [b"", b"{garbage", b'{"pid":"x","token":5}', None], ids=["empty", "garbled", "wrong-types", "no-record"]
)
def test_owner_of_unknown_liveness_is_broken_only_after_the_stale_window(data_root, ledger_kit, owner):
    store = ProjectStore(data_root, PID, config=QUICK)
    append(store, "before")
    lock = ledger_kit.plant_lock(store.project_dir, owner)
    before = snapshot(store)
    with pytest.raises(StorageError) as info:
        append(store, "too-early")
    assert info.value.code == "LOCK_TIMEOUT"
    assert snapshot(store) == before
    ledger_kit.age(lock, QUICK.stale_s + 0.5)
    assert append(store, "after") < 1.0
    assert [e.request_id for e in store.read().events] == ["before", "after"]
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]


@pytest.mark.parametrize(
    "owner", [b"", b"{garbage", b'{"pid":"x","token":5}', None], ids=["empty", "garbled", "wrong-types", "no-record"]
)
def test_unreadable_owner_record_is_abandoned_after_the_grace_not_the_stale_window(data_root, ledger_kit, owner):
    """An acquirer writes ``owner.json`` right after its ``mkdir``: a record still unreadable well after that is
    abandoned, so it blocks writers for the grace (3 s), not the 30 s stale window."""
    store = ProjectStore(data_root, PID, config=PATIENT)
    append(store, "before")
    lock = ledger_kit.plant_lock(store.project_dir, owner)
    before = snapshot(store)
    # positive control: a fresh unreadable record may still be being written by a live acquirer; it is respected
    with pytest.raises(StorageError) as info:
        append(store, "too-early", deadline=time.monotonic() + 1.0)
    assert info.value.code == "LOCK_TIMEOUT"
    assert snapshot(store) == before
    ledger_kit.age(lock, UNREADABLE_OWNER_GRACE_S + 0.5)  # far below the 30 s stale window
    # the defect would wait out the 30 s stale window; a third of it is a bound no loaded machine crosses
    assert append(store, "after") < PATIENT.stale_s / 3
    assert [e.request_id for e in store.read().events] == ["before", "after"]
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]


def test_readable_owner_of_unknown_liveness_still_gets_the_stale_window(data_root, ledger_kit, dead_pid):
    """The grace is only for unreadable records: a complete record of another host is not abandoned after it."""
    store = ProjectStore(data_root, PID, config=PATIENT)
    lock = ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(os.getpid(), host="another-host"))
    ledger_kit.age(lock, UNREADABLE_OWNER_GRACE_S + 0.5)
    with pytest.raises(StorageError) as info:
        append(store, "too-early", deadline=time.monotonic() + 1.0)
    assert info.value.code == "LOCK_TIMEOUT" and lock.exists()


def test_owner_on_another_host_is_broken_only_after_the_stale_window(data_root, ledger_kit, dead_pid):
    store = ProjectStore(data_root, PID, config=QUICK)
    lock = ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(os.getpid(), host="another-host"))
    with pytest.raises(StorageError):
        append(store, "too-early")
    assert lock.exists()
    ledger_kit.age(lock, QUICK.stale_s + 0.5)
    append(store, "after")


def test_waiter_keeps_waiting_while_the_owner_makes_progress_until_the_ceiling(data_root, ledger_kit, sleeper):
    config = LockConfig(heartbeat_s=10, stale_s=30, wait_s=0.3, ceiling_s=1.5)
    store = ProjectStore(data_root, PID, config=config)
    lock = ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(sleeper.pid))
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(0.1):
            record = json.loads((lock / "owner.json").read_bytes())
            record["heartbeat_at"] = f"2026-11-30T01:02:{time.time() % 60:06.3f}Z"
            (lock / "owner.json").write_bytes(ledger_kit.canonical(record))

    beater = threading.Thread(target=heartbeat)
    beater.start()
    started = time.monotonic()
    try:
        with pytest.raises(StorageError) as info:
            append(store, "x")
    finally:
        stop.set()
        beater.join()
    assert info.value.code == "LOCK_TIMEOUT"
    # Not after wait_s (the owner made progress); the upper bound only a wait that ignores the ceiling crosses.
    assert config.ceiling_s <= time.monotonic() - started < config.ceiling_s + 5


def test_a_progressing_queue_of_owners_is_not_a_stuck_lock(data_root, ledger_kit):
    config = LockConfig(heartbeat_s=10, stale_s=30, wait_s=0.4, ceiling_s=5)
    store = ProjectStore(data_root, PID, config=config)
    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
    lock = ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(sleepers[0].pid))

    def hand_over() -> None:  # a new owner takes over every 0.25 s (each one alive), then the queue drains
        for index in range(6):
            time.sleep(0.25)
            (lock / "owner.json").write_bytes(ledger_kit.owner_record(sleepers[index % 2].pid))
        time.sleep(0.25)
        for path in lock.iterdir():
            path.unlink()
        lock.rmdir()

    mover = threading.Thread(target=hand_over)
    mover.start()
    try:
        elapsed = append(store, "x")
    finally:
        mover.join()
        for process in sleepers:
            process.kill()
            process.wait()
    # Outlived several wait_s periods because owners kept changing (a stuck-lock verdict would have raised instead).
    assert 1.5 < elapsed < config.ceiling_s


def test_deadline_bounds_the_wait(data_root, ledger_kit, sleeper):
    store = ProjectStore(data_root, PID, config=PATIENT)
    ledger_kit.plant_lock(store.project_dir, ledger_kit.owner_record(sleeper.pid))
    started = time.monotonic()
    with pytest.raises(StorageError) as info:
        append(store, "x", deadline=time.monotonic() + 0.25)
    assert info.value.code == "LOCK_TIMEOUT"
    assert time.monotonic() - started < 4.0  # the owner lives on: only a wait that ignores the deadline crosses it


def test_live_reclaimer_marker_is_respected_and_a_dead_one_is_not(data_root, ledger_kit, sleeper, dead_pid):
    store = ProjectStore(data_root, PID, config=QUICK)
    lock = ledger_kit.plant_lock(store.project_dir, ledger_kit.legacy_owner(dead_pid))
    (lock / "reclaim.json").write_bytes(ledger_kit.owner_record(sleeper.pid))
    with pytest.raises(StorageError) as info:
        append(store, "x")
    assert info.value.code == "LOCK_TIMEOUT" and lock.exists()
    (lock / "reclaim.json").write_bytes(ledger_kit.owner_record(dead_pid, start_time=1))
    assert append(store, "x") < 1.0


def test_unreadable_reclaim_marker_is_ignored_after_the_grace(data_root, ledger_kit, dead_pid):
    store = ProjectStore(data_root, PID, config=PATIENT)
    lock = ledger_kit.plant_lock(store.project_dir, ledger_kit.legacy_owner(dead_pid))
    (lock / "reclaim.json").write_bytes(b"{garbage")
    with pytest.raises(StorageError) as info:  # positive control: a fresh marker may be a reclaimer mid-write
        append(store, "x", deadline=time.monotonic() + 1.0)
    assert info.value.code == "LOCK_TIMEOUT" and lock.exists()
    ledger_kit.age(lock, UNREADABLE_OWNER_GRACE_S + 0.5)
    assert append(store, "x") < 1.0


def test_orphans_are_removed_by_strict_name_only(data_root, ledger_kit, sleeper, dead_pid):
    store = ProjectStore(data_root, PID, config=PATIENT)
    append(store, "first")
    project = store.project_dir
    u = lambda: str(uuid.uuid4())  # noqa: E731
    orphans = [f"ledger-append-{u()}.tmp", f"ledger-repair-{u()}.tmp", f"ledger-rewrite-{u()}.tmp"]
    for name in orphans:
        (project / name).write_bytes(b"partial")
    for name in (f"ledger.lock.stale-{u()}", f"ledger.lock.release-{uuid.uuid4().hex}-{u()}"):
        (project / name).mkdir()
        (project / name / "owner.json").write_bytes(b"{}")
        orphans.append(name)
    dead_stage, live_stage = project / f"ledger.lock.acquire-{u()}", project / f"ledger.lock.acquire-{u()}"
    for stage, pid in ((dead_stage, dead_pid), (live_stage, sleeper.pid)):
        stage.mkdir()
        (stage / "owner.json").write_bytes(ledger_kit.owner_record(pid, start_time=1 if pid == dead_pid else None))
    orphans.append(dead_stage.name)
    store.private_dir.mkdir()
    (store.private_dir / f"control-{u()}.tmp").write_bytes(b"x")
    (project / f"head-sig-{u()}.tmp").write_bytes(b"x")  # a signer killed before its rename
    keep = [
        "notes.txt",
        "ledger-append-not-a-uuid.tmp",
        "ledger.lock.stale-abc",
        "ledger-append-x.tmp.bak",
        "head-sig-x.tmp",
    ]
    for name in keep:
        (project / name).write_bytes(b"user data")
    append(store, "second")
    assert sorted(n for n in os.listdir(project) if not n.startswith("index-")) == sorted(
        [*keep, "head.sig", CHECKPOINT_NAME, "ledger.jsonl", "private-sessions", live_stage.name]
    )
    assert os.listdir(store.private_dir) == []


def test_empty_staging_of_an_acquirer_killed_before_its_owner_record_is_removed(data_root, sleeper, dead_pid):
    """kill -9 between mkdir and writing owner.json leaves an empty staging directory: its name's pid decides."""
    store = ProjectStore(data_root, PID, config=PATIENT)
    append(store, "first")
    u = str(uuid.uuid4())
    dead_stage = store.project_dir / f"ledger.lock.acquire-{dead_pid}-{u}"
    live_stage = store.project_dir / f"ledger.lock.acquire-{sleeper.pid}-{u}"  # positive control: still acquiring
    unnamed = store.project_dir / f"ledger.lock.acquire-{u}"  # older form, no pid: only the stale window clears it
    for stage in (dead_stage, live_stage, unnamed):
        stage.mkdir()
    append(store, "second")
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == sorted(
        ["head.sig", CHECKPOINT_NAME, "ledger.jsonl", live_stage.name, unnamed.name]
    )


def test_sync_heartbeat_refreshes_the_owner_record(data_root):
    store = ProjectStore(data_root, PID, config=LockConfig(heartbeat_s=0.1, stale_s=1, wait_s=1, ceiling_s=2))
    with store.locked():
        first = json.loads((store.lock_path / "owner.json").read_bytes())
        time.sleep(0.35)
        later = json.loads((store.lock_path / "owner.json").read_bytes())
        assert any(t.name == "intentloop-lock-heartbeat" for t in threading.enumerate())
    assert later["token"] == first["token"] and later["heartbeat_at"] > first["heartbeat_at"]
    assert not any(t.name == "intentloop-lock-heartbeat" for t in threading.enumerate())


def test_no_heartbeat_thread_for_a_deadline_below_the_heartbeat_interval(data_root):
    store = ProjectStore(data_root, PID, config=PATIENT)
    with store.locked(deadline=time.monotonic() + 2.5):
        assert not any(t.name == "intentloop-lock-heartbeat" for t in threading.enumerate())
    with store.locked():  # control: no deadline, heartbeat thread running
        assert any(t.name == "intentloop-lock-heartbeat" for t in threading.enumerate())


def test_a_released_lock_is_removed_without_following_a_symlink_inside(tmp_path):
    """The release removes the flat lock directory by its descriptor; a symlink in it goes, its target stays."""
    from intentloop.store._fs import remove_tree_quietly

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    released = tmp_path / "ledger.lock.release-x"
    released.mkdir()
    (released / "owner.json").write_text("{}")
    (released / "reclaim.json").write_text("{}")
    os.symlink(outside, released / "link")
    remove_tree_quietly(released)
    assert not os.path.lexists(released)
    assert (outside / "keep.txt").read_text() == "kept"


def test_a_directory_with_subdirectories_is_still_removed_whole(tmp_path):  # the rmtree fallback
    from intentloop.store._fs import remove_tree_quietly

    tree = tmp_path / "tree"
    (tree / "sub" / "deeper").mkdir(parents=True)
    (tree / "sub" / "deeper" / "f").write_text("x")
    (tree / "g").write_text("y")
    remove_tree_quietly(tree)
    assert not os.path.lexists(tree)


def test_poll_jitter_stays_within_its_bounds():
    from intentloop.store._lock import _token, _uniform

    draws = [_uniform(0.01, 0.05) for _ in range(2000)]
    assert all(0.01 <= d < 0.05 for d in draws)
    assert min(draws) < 0.015 and max(draws) > 0.045  # spread over the interval, not a constant
    tokens = {_token() for _ in range(100)}
    assert len(tokens) == 100 and all(len(t) == 32 and int(t, 16) >= 0 for t in tokens)


def test_the_orphan_prefilter_holds_for_every_leftover_pattern():
    """``remove_orphans`` skips names without ``.tmp`` or ``ledger.lock.`` before matching: proven from the parsed
    patterns that every name they match holds one of the two (so the skip never keeps a leftover)."""
    from re import _parser

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))
    from test_redaction_prefilter import _mandatory

    from intentloop.store import _names
    from intentloop.store._checkpoint import CHECKPOINT_TEMP_RE

    patterns = [
        _names.LEDGER_TEMP_RE,
        _names.HEAD_SIG_TEMP_RE,
        CHECKPOINT_TEMP_RE,
        _names.STALE_LOCK_RE,
        _names.RELEASED_LOCK_RE,
        _names.QUARANTINE_TEMP_RE,
        _names.STAGED_LOCK_RE,
    ]
    literals = (".tmp", _names._LOCK_PREFIX)
    for pattern in patterns:
        assert _mandatory(list(_parser.parse(pattern.source, pattern.flags)), literals, False), pattern.source
    assert not _mandatory(list(_parser.parse(r"^ledger\.jsonl$", 0)), literals, False)  # control
    names = [_names.ledger_temp_name("append"), _names.stale_lock_name(), _names.staged_lock_name()]
    assert all(any(p.match(n) for p in patterns) and any(lit in n for lit in literals) for n in names)
