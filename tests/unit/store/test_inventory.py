"""The store's list of a project's persistent files: what deletion searches, without rules of its own."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from intentloop.errors import StorageError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import CHECKPOINT_NAME, LockConfig, ProjectStore

PID = project_id_for("/inventory")
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID, config=CONFIG)
    task = str(uuid.uuid4())
    with store.locked() as ledger:  # a non-resident writer: the checkpoint and a task index are written too
        ledger.append([EventDraft(event_type="task_started", task_id=task, actor="user", request_id="r", payload={})])
    return store


def test_every_persistent_file_is_listed_and_the_caches_are_marked(store: ProjectStore) -> None:
    extra = store.project_dir / "spool" / "later-added.json"  # a file the store might add one day
    extra.parent.mkdir(mode=0o700, exist_ok=True)
    extra.write_bytes(b"{}")
    (store.project_dir / "head.sig").write_bytes(b"{}")  # the signed head: hashes only, rewritten after each commit
    entries = {entry.name: entry for entry in store.persistent_entries()}
    assert "ledger.jsonl" in entries and not entries["ledger.jsonl"].derived
    assert "spool/later-added.json" in entries and entries["spool"].directory
    assert entries[CHECKPOINT_NAME].derived
    index_files = [e for name, e in entries.items() if name.startswith("index-") and not e.directory]
    assert index_files and all(e.derived for e in index_files)
    assert "head.sig" not in entries
    assert not any(name.startswith("ledger.lock") for name in entries)  # the lock: owner records only
    skipped = {entry.name for entry in store.persistent_entries(skip=store.rewritten_by_deletion())}
    assert "ledger.jsonl" not in skipped and CHECKPOINT_NAME not in skipped and "spool/later-added.json" in skipped
    assert not any(name.startswith("index-") for name in skipped)  # rebuilt with the ledger


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_a_link_under_the_project_is_refused(store: ProjectStore, tmp_path: Path, kind: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not ours")
    assert any(e.name == "ledger.jsonl" for e in store.persistent_entries())  # control: the plain tree lists
    planted = store.project_dir / "planted.txt"
    if kind == "symlink":
        planted.symlink_to(outside)
    else:
        os.link(outside, planted)
    with pytest.raises(StorageError) as caught:
        list(store.persistent_entries())
    assert caught.value.code == ("PATH_ESCAPE" if kind == "symlink" else "UNSAFE_DATA_FILE")


def test_a_project_without_a_directory_has_no_entries(data_root: Path) -> None:
    assert list(ProjectStore(data_root, project_id_for("/nothing/here"), config=CONFIG).persistent_entries()) == []
