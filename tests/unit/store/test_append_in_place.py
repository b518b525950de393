"""Appending in place: the same v1 bytes, the verified inode only, and the shared checkpoint that lets a process trust
what it verified before (and nothing a foreign program changed since)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import msgspec
import pytest

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model import EventDraft, event_line, project_id_for, seal
from intentloop.store import LockConfig, ProjectStore, _project, verify_ledger_bytes
from intentloop.store._checkpoint import CHECKPOINT_NAME, read_checkpoint

PID = project_id_for("/append/in/place")
TASK = str(uuid.uuid4())
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)
WRITER = Path(__file__).resolve().parents[2] / "crash" / "ledger_writer.py"


def draft(request_id: str) -> EventDraft:
    return EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=request_id, payload={"n": 1})


def append(store: ProjectStore, *request_ids: str) -> None:
    with store.locked() as ledger:
        ledger.append([draft(r) for r in request_ids])


def forget(store: ProjectStore) -> None:
    """Drop this process's verified cache: the next read is a cold process's."""
    _project._cache.drop(str(store.ledger_path))


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=CONFIG)
    append(store, "r-1", "r-2")
    return store


def test_appends_keep_the_inode_and_the_v1_bytes(store):
    inode = os.stat(store.ledger_path).st_ino
    append(store, "r-3")
    append(store, "r-4")
    data = store.ledger_path.read_bytes()
    assert os.stat(store.ledger_path).st_ino == inode  # written in place, not replaced
    events = store.read().events
    assert data == b"".join(event_line(e) for e in events)  # exactly the v1 lines, nothing else
    assert verify_ledger_bytes(data, project_id=PID).ok
    assert oct(os.stat(store.ledger_path).st_mode & 0o777) == "0o600"
    with store.locked() as ledger:  # a rewrite (deletion) still replaces the file
        ledger.rewrite(ledger.view.events[:2])
    assert os.stat(store.ledger_path).st_ino != inode


def _swap_for_copy(store: ProjectStore) -> None:
    copy = store.project_dir / "copy"
    copy.write_bytes(store.ledger_path.read_bytes())
    os.chmod(copy, 0o600)
    os.replace(copy, store.ledger_path)


def _symlink(store: ProjectStore) -> None:
    elsewhere = store.data_root / "elsewhere.jsonl"
    elsewhere.write_bytes(store.ledger_path.read_bytes())
    os.unlink(store.ledger_path)
    os.symlink(elsewhere, store.ledger_path)


def _hard_link(store: ProjectStore) -> None:
    os.link(store.ledger_path, store.data_root / "second-link.jsonl")


def _grow(store: ProjectStore) -> None:
    with open(store.ledger_path, "ab") as handle:
        handle.write(b"\n")


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (_symlink, "PATH_ESCAPE"),
        (_hard_link, "UNSAFE_DATA_FILE"),
        (_swap_for_copy, "TRANSIENT_FILE_RACE"),
        (_grow, "TRANSIENT_FILE_RACE"),
        (None, None),  # positive control: nothing changed since the verification, the append goes in
    ],
    ids=["symlink", "hard-link", "other-inode", "grown", "control"],
)
def test_append_goes_only_into_the_verified_file(store, change, code):
    files = [store.ledger_path, store.data_root / "elsewhere.jsonl", store.data_root / "second-link.jsonl"]
    with store.locked() as ledger:
        if change is not None:
            change(store)
        before = {p: p.read_bytes() for p in files if p.exists()}
        if code is None:
            ledger.append([draft("r-3")])
        else:
            with pytest.raises(StorageError) as info:
                ledger.append([draft("r-3")])
            assert info.value.code == code
    after = {p: p.read_bytes() for p in files if p.exists()}
    if code is None:
        assert after[store.ledger_path].endswith(b'"r-3","schema_version":1,"task_id":"' + TASK.encode() + b'"}\n')
    else:
        assert after == before  # nothing written through the link, into the copy or after the foreign bytes


def test_checkpoint_records_the_file_after_each_write(store):
    append(store, "r-3")
    checkpoint = read_checkpoint(store.paths)
    st = os.stat(store.ledger_path)
    view = store.read()
    assert checkpoint is not None and checkpoint.matches(st)
    assert (checkpoint.size, checkpoint.lines, checkpoint.head) == (st.st_size, 3, view.head_hash)
    assert oct(os.stat(store.project_dir / CHECKPOINT_NAME).st_mode & 0o777) == "0o600"


def _foreign_append(store: ProjectStore, request_id: str) -> None:
    """Another process (a real subprocess, so this one's cache is not told) appends one event."""
    subprocess.run(
        [sys.executable, str(WRITER), "append", str(store.data_root), PID, TASK, "--writer", request_id],
        check=True,
        capture_output=True,
        timeout=60,
    )


def test_a_checkpointed_growth_is_read_from_where_the_cache_ends(store, monkeypatch):
    assert len(store.read()) == 2  # this process has verified two events
    _foreign_append(store, "x")
    calls: list[int] = []
    real = _project.stream_verify
    monkeypatch.setattr(_project, "stream_verify", lambda fd, st, pid: calls.append(st.st_size) or real(fd, st, pid))
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "x-0"]
    assert calls == []  # only the new line was read and verified
    _foreign_append(store, "y")
    (store.project_dir / CHECKPOINT_NAME).unlink()  # control: without the checkpoint, the whole file is verified
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "x-0", "y-0"]
    assert calls == [os.stat(store.ledger_path).st_size]


@pytest.mark.parametrize("damage", ["deleted", "garbled", "wrong-head", "wrong-lines", "symlink"])
def test_a_missing_or_garbled_checkpoint_costs_time_never_correctness(store, damage):
    assert len(store.read()) == 2
    _foreign_append(store, "x")
    path = store.project_dir / CHECKPOINT_NAME
    record = msgspec.json.decode(path.read_bytes())
    if damage == "deleted":
        path.unlink()
    elif damage == "garbled":
        path.write_bytes(b"\x00{not json")
    elif damage == "symlink":
        path.unlink()
        path.symlink_to(store.ledger_path)
    else:
        record["head" if damage == "wrong-head" else "lines"] = "0" * 64 if damage == "wrong-head" else 99
        path.write_bytes(msgspec.json.encode(record))
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "x-0"]
    forget(store)
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "x-0"]
    append(store, "r-3")  # and the next write works and writes a good checkpoint again
    checkpoint = read_checkpoint(store.paths)
    assert checkpoint is not None and checkpoint.matches(os.stat(store.ledger_path)) and checkpoint.lines == 4


def _tamper_middle(store: ProjectStore) -> None:
    """Change one byte in the middle of the first line, keeping the size (a request id's character)."""
    data = bytearray(store.ledger_path.read_bytes())
    at = data.index(b'"r-1"') + 2
    data[at] = ord("s")
    with open(store.ledger_path, "r+b") as handle:  # in place: same inode, same size
        handle.write(bytes(data))


def _chained_append(store: ProjectStore) -> None:
    """A correct next line chained after the current head (what a foreign program would write)."""
    last = store.ledger_path.read_bytes().splitlines()[-1]
    event = seal(draft("z"), project_id=PID, prev_hash=msgspec.json.decode(last)["event_hash"])
    with open(store.ledger_path, "ab") as handle:
        handle.write(event_line(event))


@pytest.mark.parametrize("then_append", [False, True], ids=["same-size", "plus-chained-append"])
@pytest.mark.parametrize("warm", [True, False], ids=["warm-cache", "cold"])
def test_an_edit_in_the_middle_is_found_by_the_next_read_and_write(store, then_append, warm):
    assert len(store.read()) == 2
    if not warm:
        forget(store)
    _tamper_middle(store)
    if then_append:
        _chained_append(store)
    before = store.ledger_path.read_bytes()
    with pytest.raises(CorruptLedgerError) as info:
        store.read()
    assert info.value.code == "CORRUPT_LEDGER" and info.value.line == 1
    with pytest.raises(CorruptLedgerError) as info, store.locked() as ledger:
        ledger.append([draft("r-3")])
    assert info.value.code == "CORRUPT_LEDGER"
    assert store.ledger_path.read_bytes() == before  # nothing appended


def test_a_foreign_well_chained_append_alone_is_accepted(store):
    """Positive control for the test above: the original implementation extending the ledger is not damage."""
    assert len(store.read()) == 2
    _chained_append(store)
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "z"]
    append(store, "r-3")
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "z", "r-3"]


def test_torn_tail_is_cut_in_place(store):
    inode = os.stat(store.ledger_path).st_ino
    good = store.ledger_path.read_bytes()
    with open(store.ledger_path, "ab") as handle:
        handle.write(b'{"actor":"us')
    append(store, "r-3")
    data = store.ledger_path.read_bytes()
    assert os.stat(store.ledger_path).st_ino == inode and data.startswith(good)
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "r-3"]
    assert len(os.listdir(store.quarantine_dir)) == 1
