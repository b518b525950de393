"""``deleted-requests.json``: request tombstones written under the lock, read back, garbage refused."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from intentloop.errors import InvalidInputError, StorageError
from intentloop.model import project_id_for
from intentloop.store import LockConfig, ProjectStore

FAST = LockConfig(heartbeat_s=0.5, stale_s=1.0, wait_s=0.3, ceiling_s=2.0)


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    return ProjectStore(data_root, project_id_for("/tombstone/tests"), config=FAST)


def _digest(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def test_tombstones_accumulate_privately(store: ProjectStore) -> None:
    assert store.read_tombstones() == frozenset()  # no project yet: nothing, nothing created
    assert not store.project_dir.exists()
    with store.locked() as ledger:
        ledger.add_tombstones([_digest(1)])
    with store.locked() as ledger:
        ledger.add_tombstones([_digest(2), _digest(1)])
        ledger.add_tombstones([])
    assert store.read_tombstones() == {_digest(1), _digest(2)}
    path = store.project_dir / "deleted-requests.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(store.project_dir)) == ["deleted-requests.json"]  # no temp file left


def test_a_malformed_tombstone_is_refused(store: ProjectStore) -> None:
    with store.locked() as ledger, pytest.raises(InvalidInputError) as info:
        ledger.add_tombstones(["not-a-digest"])
    assert info.value.code == "INVALID_ARGUMENTS"
    assert store.read_tombstones() == frozenset()


@pytest.mark.parametrize("garbage", [b"", b"{", b'{"digests": "x"}', b'{"digests": ["abc"]}', b"[]"])
def test_a_garbled_file_stops_the_check_rather_than_resurrect(store: ProjectStore, garbage: bytes) -> None:
    with store.locked() as ledger:
        ledger.add_tombstones([_digest(1)])  # positive control: a good file reads
    assert store.read_tombstones() == {_digest(1)}
    (store.project_dir / "deleted-requests.json").write_bytes(garbage)
    with pytest.raises(StorageError) as info:
        store.read_tombstones()
    assert info.value.code == "STORAGE_READ_FAILED"
