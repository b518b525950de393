"""Torn-tail repair: a whole event lacking only its newline is kept; a huge damaged tail is never held in memory."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from intentloop.errors import CorruptLedgerError
from intentloop.model import EventDraft, project_id_for
from intentloop.store import MAX_LINE_BYTES, ProjectStore

PID = project_id_for("/torn/tail")
TASK = str(uuid.uuid4())


def _append(store: ProjectStore, *request_ids: str) -> None:
    with store.locked() as ledger:
        ledger.append(
            [
                EventDraft(event_type="claim_added", task_id=TASK, actor="user", request_id=r, payload={"n": r})
                for r in request_ids
            ]
        )


def _quarantine(store: ProjectStore) -> list[dict[str, object]]:
    if not store.quarantine_dir.exists():
        return []
    return [json.loads(p.read_bytes()) for p in sorted(store.quarantine_dir.iterdir())]


@pytest.fixture
def store(data_root: Path) -> ProjectStore:
    store = ProjectStore(data_root, PID)
    _append(store, "r-1", "r-2")
    return store


def test_a_whole_event_lacking_only_its_newline_is_kept(store: ProjectStore) -> None:
    whole = store.ledger_path.read_bytes()
    store.ledger_path.write_bytes(whole[:-1])  # the last event without its newline
    with pytest.raises(CorruptLedgerError) as info:  # reads report it as before
        store.read()
    assert info.value.code == "CORRUPT_TRAILING_EVENT"
    _append(store, "r-3")  # the next writer restores just the newline
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "r-3"]
    assert store.ledger_path.read_bytes().startswith(whole)
    assert _quarantine(store) == []  # nothing was discarded, so nothing is summarised


@pytest.mark.parametrize("tail", ["partial", "not-chaining", "garbage"])
def test_anything_else_after_the_last_newline_is_summarised_and_dropped(store: ProjectStore, tail: str) -> None:
    """Positive control of the refusal: only a whole event that chains after the head is kept."""
    whole = store.ledger_path.read_bytes()
    lines = whole.splitlines(keepends=True)
    torn = {
        "partial": lines[1][: len(lines[1]) // 2],
        "not-chaining": lines[0][:-1],  # a whole, hash-valid event, but its prev_hash is not the head
        "garbage": b"\x00" * 100,
    }[tail]
    store.ledger_path.write_bytes(whole + torn)
    _append(store, "r-3")
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "r-3"]
    [record] = _quarantine(store)
    assert record["byte_length"] == len(torn) and record["sha256"] == hashlib.sha256(torn).hexdigest()


_CHILD = """
import json, sys, uuid
from pathlib import Path
from intentloop.model import EventDraft
from intentloop.store import ProjectStore
store = ProjectStore(sys.argv[2], sys.argv[3])
out = {}
if sys.argv[1] == "verify":  # what `intentloop verify` does
    from intentloop.recovery import verify_project
    report = verify_project(store)
    keys = ("status", "code", "events", "damaged_bytes", "damaged_sha256", "byte_length", "torn_tail", "first_bad_line")
    out = {k: report.to_dict()[k] for k in keys}
elif sys.argv[1] == "write":  # the next writer repairs the torn tail
    with store.locked() as ledger:
        ledger.append([EventDraft(event_type="mode_set", task_id=str(uuid.uuid4()), actor="user", request_id="w",
                                  payload={})])
elif sys.argv[1] == "keep":  # `intentloop recover quarantine --keep-bytes`
    from intentloop.recovery import quarantine_damaged_suffix
    result = quarantine_damaged_suffix(store, keep_bytes=True)
    out = {"kept": result.kept_bytes_file, "quarantined_bytes": result.quarantined_bytes, "sha256": result.sha256}
# VmHWM, not getrusage's ru_maxrss: Linux keeps ru_maxrss across fork + exec, so a child of a large pytest process
# would report its parent's size; VmHWM belongs to this process image alone.
with open("/proc/self/status") as status:
    out["peak_rss_mb"] = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps(out))
"""


def _child(mode: str, store: ProjectStore) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, str(store.data_root), store.project_id],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def _zeros_sha256(size: int) -> str:
    digest = hashlib.sha256()
    block = bytes(1 << 20)
    for _ in range(size >> 20):
        digest.update(block)
    return digest.hexdigest()


PEAK_MB = 300  # a defect holding the tail needs > 1,000 MB (it used to peak at 3,200 MB)


@pytest.mark.slow
def test_a_one_gigabyte_tail_of_zeros_is_streamed_by_verify_and_the_next_write(store: ProjectStore) -> None:
    size = 1 << 30
    prefix = store.ledger_path.stat().st_size
    with open(store.ledger_path, "r+b") as handle:
        handle.truncate(prefix + size)  # sparse: a crash that extended the file with zeros
    expected = _zeros_sha256(size)
    verified = _child("verify", store)
    print(f"\nverify peak RSS {verified['peak_rss_mb']:.0f} MB")
    assert verified["peak_rss_mb"] < PEAK_MB
    assert verified["status"] == "torn_tail" and verified["code"] == "CORRUPT_TRAILING_EVENT"
    assert (verified["events"], verified["first_bad_line"], verified["torn_tail"]) == (2, 3, True)
    assert (verified["damaged_bytes"], verified["damaged_sha256"]) == (size, expected)
    assert verified["byte_length"] == prefix + size
    written = _child("write", store)
    print(f"repairing write peak RSS {written['peak_rss_mb']:.0f} MB")
    assert written["peak_rss_mb"] < PEAK_MB
    [record] = _quarantine(store)
    assert (record["byte_length"], record["sha256"]) == (size, expected)
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2", "w"]


@pytest.mark.slow
def test_keep_bytes_copies_a_huge_damaged_tail_in_chunks(store: ProjectStore) -> None:
    size = MAX_LINE_BYTES * 3  # past the longest line the store holds, so it is streamed
    prefix = store.ledger_path.stat().st_size
    with open(store.ledger_path, "r+b") as handle:
        handle.truncate(prefix + size)
    kept = _child("keep", store)
    print(f"\nkeep-bytes peak RSS {kept['peak_rss_mb']:.0f} MB")
    assert kept["peak_rss_mb"] < PEAK_MB
    assert kept["quarantined_bytes"] == size and kept["sha256"] == _zeros_sha256(size)
    raw = Path(str(kept["kept"]))
    assert raw.stat().st_size == size and oct(raw.stat().st_mode & 0o777) == "0o600"
    assert [e.request_id for e in store.read().events] == ["r-1", "r-2"]
    os.unlink(raw)
