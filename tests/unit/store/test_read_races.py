"""A writer's rename at each point of a lock-free read: the reader keeps the whole earlier version it opened.

Deterministic: the rename is done from inside the reader's own ``os`` calls. A reader reads exactly the size it
opened, so an append in place meanwhile leaves its bytes whole; only a change of the bytes it read (same inode, a new
mtime without growth) is refused, as the positive control shows.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import ProjectStore

PID = project_id_for("/read/races")
TASK = str(uuid.uuid4())


def _append(store: ProjectStore, *request_ids: str) -> None:
    with store.locked() as ledger:
        ledger.append(
            [
                EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=r, payload={})
                for r in request_ids
            ]
        )


@pytest.fixture
def versions(data_root: Path) -> tuple[ProjectStore, bytes, Path]:
    """A store whose ledger holds version 1, and a prepared version 2 (one more event) ready to be renamed in."""
    store = ProjectStore(data_root, PID)
    _append(store, "r-1")
    old = store.ledger_path.read_bytes()
    _append(store, "r-2")
    new = store.project_dir / "version-2"
    os.replace(store.ledger_path, new)
    store.ledger_path.write_bytes(old)
    os.chmod(store.ledger_path, 0o600)
    return ProjectStore(data_root, PID), old, new


def _rename_when(monkeypatch: pytest.MonkeyPatch, name: str, ledger: Path, new: Path) -> list[bool]:
    """Rename ``new`` over the ledger right after the reader's first ``os.<name>`` call on the ledger."""
    real = getattr(os, name)
    done: list[bool] = []

    def call(*args, **kwargs):
        result = real(*args, **kwargs)
        target = args[0]
        is_ledger = (
            str(target) == str(ledger)
            if name in ("lstat", "open")
            else isinstance(target, int) and os.readlink(f"/proc/self/fd/{target}").startswith(str(ledger))
        )
        if is_ledger and not done:
            os.replace(new, ledger)
            done.append(True)
        return result

    monkeypatch.setattr(os, name, call)
    return done


@pytest.mark.parametrize("step", ["lstat", "open", "pread"])
def test_a_rename_over_the_ledger_during_a_read_keeps_a_whole_version(versions, monkeypatch, step):
    store, _old, new = versions
    done = _rename_when(monkeypatch, step, store.ledger_path, new)
    view = store.read()
    monkeypatch.undo()
    assert done  # the rename really happened inside the read
    # after lstat the reader looks again and finds version 2; after open or read it keeps the version 1 it opened
    expected = ["r-1", "r-2"] if step == "lstat" else ["r-1"]
    assert [e.request_id for e in view.events] == expected
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2"]  # and the next read sees the new one


def test_verify_and_controls_share_the_fix(versions, monkeypatch):
    store, _old, new = versions
    done = _rename_when(monkeypatch, "pread", store.ledger_path, new)
    verification = store.verify()
    monkeypatch.undo()
    assert done and verification.ok and verification.line_count == 1


def test_bytes_changed_in_place_during_a_read_are_still_refused(versions, monkeypatch):
    """Positive control: a file whose bytes change under the reader (same size, new mtime) is not a whole version."""
    store, _old, _new = versions
    real_pread = os.pread
    changed: list[bool] = []

    def pread(fd, size, offset):
        data = real_pread(fd, size, offset)
        if not changed and os.readlink(f"/proc/self/fd/{fd}") == str(store.ledger_path):
            st = os.stat(store.ledger_path)
            with open(store.ledger_path, "r+b") as handle:  # written in place: same inode, same size
                handle.write(b"[")
            os.utime(store.ledger_path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            changed.append(True)
        return data

    monkeypatch.setattr(os, "pread", pread)
    with pytest.raises(StorageError) as info:
        store.read()
    monkeypatch.undo()
    assert info.value.code == "TRANSIENT_FILE_RACE" and info.value.retryable


def test_an_append_in_place_during_a_read_keeps_the_version_read(versions, monkeypatch):
    """Writers append in place: a reader keeps the bytes up to the size it opened; the append left them as they were."""
    store, _old, new = versions
    line = new.read_bytes()[len(_old) :]
    real_pread = os.pread
    grown: list[bool] = []

    def pread(fd, size, offset):
        data = real_pread(fd, size, offset)
        if not grown and os.readlink(f"/proc/self/fd/{fd}") == str(store.ledger_path):
            with open(store.ledger_path, "ab") as handle:
                handle.write(line)
            grown.append(True)
        return data

    monkeypatch.setattr(os, "pread", pread)
    view = store.read()
    monkeypatch.undo()
    assert grown and [e.request_id for e in view.events] == ["r-1"]
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2"]


def test_a_ledger_that_keeps_changing_at_every_open_is_a_retryable_race(versions, monkeypatch):
    store, _old, new = versions
    real_open = os.open
    swaps = [0]

    def open_(path, *args, **kwargs):
        if str(path) == str(store.ledger_path):  # between the reader's lstat and open, a new file is renamed in
            spare = new.with_name(f"spare-{swaps[0]}")
            spare.write_bytes(store.ledger_path.read_bytes())
            os.replace(spare, store.ledger_path)
            swaps[0] += 1
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    with pytest.raises(StorageError) as info:
        store.read()
    monkeypatch.undo()
    assert info.value.code == "TRANSIENT_FILE_RACE" and swaps[0] >= 2
    assert len(store.read()) == 1  # positive control: once it stops changing, it reads
