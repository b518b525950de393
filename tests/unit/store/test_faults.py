"""Fault injection at each write step: a structured error, the previous ledger intact, the next write works."""

from __future__ import annotations

import errno
import os
import stat
import uuid
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import LockConfig, ProjectStore, head_signature_status, verify_ledger_bytes
from intentloop.store._checkpoint import CHECKPOINT_NAME

PID = project_id_for("/fault/tests")
TASK = str(uuid.uuid4())
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)
STEPS = ["open", "write", "fsync"]


def draft(request_id: str) -> EventDraft:
    return EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=request_id, payload={})


def append_once(store: ProjectStore, request_id: str) -> None:
    """What a service does: append unless this request id is already in the ledger (idempotent retry)."""
    with store.locked() as ledger:
        if ledger.view.find_request(TASK, request_id) is None:
            ledger.append([draft(request_id)])


def fd_name(fd: int) -> str:
    return os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=CONFIG)
    append_once(store, "r-1")
    return store


def inject(monkeypatch, store: ProjectStore, step: str, code: int) -> None:
    """Fail one step of an append in place: opening the ledger for writing, writing it or fsyncing it."""
    real_open, real_write, real_fsync = os.open, os.write, os.fsync

    def failing_open(path, flags, *args, **kwargs):
        if os.path.basename(os.fspath(path)) == "ledger.jsonl" and flags & os.O_WRONLY:
            raise OSError(code, os.strerror(code))
        return real_open(path, flags, *args, **kwargs)

    def failing_write(fd, data):
        if fd_name(fd) == "ledger.jsonl":
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    def failing_fsync(fd):
        if fd_name(fd) == "ledger.jsonl":
            raise OSError(code, os.strerror(code))
        return real_fsync(fd)

    monkeypatch.setattr(os, {"open": "open", "write": "write", "fsync": "fsync"}[step], locals()[f"failing_{step}"])


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
@pytest.mark.parametrize("step", STEPS)
def test_write_path_fault_leaves_a_verified_ledger(store, monkeypatch, step, code):
    before = store.ledger_path.read_bytes()
    inject(monkeypatch, store, step, code)
    with pytest.raises(StorageError) as info:
        append_once(store, "r-2")
    monkeypatch.undo()
    error = info.value
    assert error.code == "STORAGE_WRITE_FAILED" and error.retryable
    assert isinstance(error.__cause__, OSError) and error.__cause__.errno == code
    after = store.ledger_path.read_bytes()
    assert after == before  # a failed write or fsync was cut back off
    assert verify_ledger_bytes(after, project_id=PID).ok
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]  # no temp file, no lock
    append_once(store, "r-2")  # the retry (idempotent) and a further write work
    append_once(store, "r-3")
    assert head_signature_status(store.paths, store.read().events)[0] == "valid"
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "r-3"]


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
def test_directory_fsync_fault_on_create_is_reported(data_root, monkeypatch, code):
    """The first write creates the file: its directory entry is durable only after the directory fsync."""
    store = ProjectStore(data_root, PID, config=CONFIG)
    store.paths.ensure()
    real_fsync = os.fsync

    def failing_fsync(fd):
        if stat.S_ISDIR(os.fstat(fd).st_mode) and os.readlink(f"/proc/self/fd/{fd}") == str(store.project_dir):
            raise OSError(code, os.strerror(code))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(StorageError) as info:
        append_once(store, "r-1")
    monkeypatch.undo()
    assert info.value.code == "STORAGE_WRITE_FAILED" and info.value.__cause__.errno == code
    append_once(store, "r-1")  # the retry finds the event (idempotent) and adds nothing
    append_once(store, "r-2")
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2"]


@pytest.mark.parametrize("code", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
@pytest.mark.parametrize("step", ["write", "fsync", "replace", "dir-fsync"])
def test_rewrite_fault_leaves_a_verified_ledger(store, monkeypatch, step, code):
    """Rewrites (deletion, salvage) keep the temp file + rename path."""
    append_once(store, "r-2")
    before = store.ledger_path.read_bytes()
    real_write, real_fsync, real_replace = os.write, os.fsync, os.replace

    def failing_write(fd, data):
        if fd_name(fd).startswith("ledger-rewrite-"):
            raise OSError(code, os.strerror(code))
        return real_write(fd, data)

    def failing_fsync(fd):
        if step == "fsync" and fd_name(fd).startswith("ledger-rewrite-"):
            raise OSError(code, os.strerror(code))
        if step == "dir-fsync" and os.readlink(f"/proc/self/fd/{fd}") == str(store.project_dir):
            raise OSError(code, os.strerror(code))
        return real_fsync(fd)

    def failing_replace(src, dst, **kwargs):
        if os.path.basename(src).startswith("ledger-rewrite-"):
            raise OSError(code, os.strerror(code))
        return real_replace(src, dst, **kwargs)

    patch = {"write": ("write", failing_write), "replace": ("replace", failing_replace)}
    name, function = patch.get(step, ("fsync", failing_fsync))
    monkeypatch.setattr(os, name, function)
    with pytest.raises(StorageError) as info, store.locked() as ledger:
        ledger.rewrite(ledger.view.events[:1])
    monkeypatch.undo()
    assert info.value.code == "STORAGE_WRITE_FAILED" and info.value.__cause__.errno == code
    after = store.ledger_path.read_bytes()
    if step == "dir-fsync":  # past the rename: the new ledger is in place, only its durability is in doubt
        assert before.startswith(after) and after != before
    else:
        assert after == before
    assert verify_ledger_bytes(after, project_id=PID).ok
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]
    append_once(store, "r-3")


def test_short_writes_are_completed(store, monkeypatch):
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    append_once(store, "r-2")
    monkeypatch.undo()
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2"]


def test_temp_file_creation_failure_is_structured(store, monkeypatch):
    before = store.ledger_path.read_bytes()
    real_open = os.open

    def failing_open(path, flags, *args, **kwargs):
        if os.path.basename(os.fspath(path)).startswith("ledger-rewrite-"):
            raise OSError(errno.EDQUOT, "quota")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", failing_open)
    with pytest.raises(StorageError) as info, store.locked() as ledger:
        ledger.rewrite(ledger.view.events)
    monkeypatch.undo()
    assert info.value.code == "STORAGE_WRITE_FAILED" and isinstance(info.value.__cause__, OSError)
    assert store.ledger_path.read_bytes() == before
    append_once(store, "r-2")


def test_control_write_fault_keeps_the_previous_control(store, monkeypatch):
    from intentloop.store import PrivateControl

    control = PrivateControl(
        created_at="2026-11-30T01:02:03.456Z", host_session_hash="f" * 64, project_id=PID, task_id=TASK
    )
    with store.locked() as ledger:
        ledger.write_control(control)
    real_fsync = os.fsync

    def failing_fsync(fd):
        if fd_name(fd).startswith("control-"):
            raise OSError(errno.EIO, "io")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    changed = PrivateControl(
        created_at="2026-12-01T01:02:03.456Z", host_session_hash="f" * 64, project_id=PID, task_id=TASK
    )
    with pytest.raises(StorageError) as info, store.locked() as ledger:
        ledger.write_control(changed)
    monkeypatch.undo()
    assert info.value.code == "STORAGE_WRITE_FAILED"
    assert store.read_controls() == [control]
    assert os.listdir(store.private_dir) == [f"{'f' * 64}.json"]


def test_read_fault_is_structured_and_retryable(store, monkeypatch):
    real_pread = os.pread

    def failing_pread(fd, size, offset):
        if fd_name(fd) == "ledger.jsonl":
            raise OSError(errno.EIO, "io")
        return real_pread(fd, size, offset)

    other = ProjectStore(store.data_root, PID, config=CONFIG)
    with store.locked() as ledger:  # a new file (new cache key) forces a real read
        ledger.append([draft("r-2")])
    from intentloop.store import _project

    _project._cache.drop(str(store.ledger_path))
    monkeypatch.setattr(os, "pread", failing_pread)
    with pytest.raises(StorageError) as info:
        other.read()
    monkeypatch.undo()
    assert info.value.code == "STORAGE_READ_FAILED" and info.value.retryable
    assert isinstance(info.value.__cause__, OSError)
    assert len(other.read()) == 2  # control


def test_lock_creation_fault_is_structured(store, monkeypatch):
    real_mkdir = os.mkdir

    def failing_mkdir(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)).startswith("ledger.lock"):
            raise OSError(errno.ENOSPC, "full")
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", failing_mkdir)
    with pytest.raises(StorageError) as info:
        append_once(store, "r-2")
    monkeypatch.undo()
    assert info.value.code == "STORAGE_WRITE_FAILED" and isinstance(info.value.__cause__, OSError)
    assert sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]
    append_once(store, "r-2")
