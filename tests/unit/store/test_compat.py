"""Byte compatibility with the original implementation, and the explicit v1 → v1 migration step (fixtures)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid

from intentloop.model import EventDraft, event_line
from intentloop.store import MIGRATIONS, LockConfig, ProjectStore, migrate, migrate_v1, verify_ledger_bytes
from intentloop.store._checkpoint import CHECKPOINT_NAME

CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=1, ceiling_s=2)


def independent_verify(data: bytes, project_id: str) -> int:
    """The format description as code, sharing nothing with intentloop: returns the number of valid lines."""
    assert data.endswith(b"\n")
    prev = None
    lines = data.split(b"\n")[:-1]
    for line in lines:
        event = json.loads(line)
        assert json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() == line
        assert event["schema_version"] == 1 and event["project_id"] == project_id and event["prev_hash"] == prev
        body = {k: v for k, v in event.items() if k != "event_hash"}
        body_bytes = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        assert hashlib.sha256(body_bytes).hexdigest() == event["event_hash"]
        prev = event["event_hash"]
    return len(lines)


def test_committed_fixture_is_built_from_the_format_description(ledger_kit):
    assert ledger_kit.FIXTURE_FILE.read_bytes() == ledger_kit.fixture_bytes()
    pid = ledger_kit.project_id_for(ledger_kit.FIXTURE_ROOT)
    assert independent_verify(ledger_kit.FIXTURE_FILE.read_bytes(), pid) == 6


def test_fixture_verifies_and_migrates_v1_to_v1_as_identity(ledger_kit):
    data = ledger_kit.FIXTURE_FILE.read_bytes()
    pid = ledger_kit.project_id_for(ledger_kit.FIXTURE_ROOT)
    result = verify_ledger_bytes(data, project_id=pid)
    assert result.ok and result.line_count == 6 and result.byte_length == len(data)
    assert set(MIGRATIONS) == {1} and MIGRATIONS[1] is migrate_v1
    migrated = [migrate(event) for event in result.events]
    assert all(after is before for after, before in zip(migrated, result.events, strict=True))
    assert b"".join(event_line(event) for event in migrated) == data  # identity, byte for byte
    assert {e.event_type for e in result.events} >= {"task_started", "claim_added", "mode_set", "claim_invalidated"}


def test_original_ledger_with_original_lock_remnants_is_extended(data_root, ledger_kit):
    pid = ledger_kit.project_id_for("/original/project")
    store = ProjectStore(data_root, pid, config=CONFIG)
    data, events = ledger_kit.build_ledger(pid, 20)
    store.project_dir.mkdir(parents=True, mode=0o700)
    store.ledger_path.write_bytes(data)
    store.ledger_path.chmod(0o600)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    ledger_kit.plant_lock(store.project_dir, ledger_kit.legacy_owner(gone.pid))  # the original died holding it
    (store.project_dir / f"ledger-append-{uuid.uuid4()}.tmp").write_bytes(data[:100])
    assert len(store.read()) == 20
    task = events[0]["task_id"]
    with store.locked() as ledger:
        assert ledger.view.find_request(task, "req-7") is not None
        written = ledger.append(
            [
                EventDraft(
                    event_type="claim_added",
                    task_id=task,
                    actor="agent",
                    request_id="ours-1",
                    payload={"claim": {"confidence": 0.7, "statement": "Grüße"}},
                )
            ]
        )
    after = store.ledger_path.read_bytes()
    assert after.startswith(data)
    assert independent_verify(after, pid) == 21  # what the original's reader checks, our line passes
    expected = ledger_kit.make_event(
        pid,
        events[-1]["event_hash"],
        task_id=task,
        request_id="ours-1",
        actor="agent",
        payload={"claim": {"confidence": 0.7, "statement": "Grüße"}},
        occurred_at=written[0].occurred_at,
        event_id=written[0].event_id,
    )
    assert after[len(data) :] == ledger_kit.line(expected)  # byte-identical with the original's writer
    assert sorted(p.name for p in store.project_dir.iterdir() if not p.name.startswith("index-")) == [
        "head.sig",
        CHECKPOINT_NAME,
        "ledger.jsonl",
    ]


def test_ledger_written_by_us_is_read_by_the_format_description(data_root, ledger_kit):
    pid = ledger_kit.project_id_for("/ours")
    store = ProjectStore(data_root, pid, config=CONFIG)
    task = str(uuid.uuid4())
    for index in range(5):
        with store.locked() as ledger:
            ledger.append(
                [
                    EventDraft(
                        event_type="claim_added",
                        task_id=task,
                        actor="user",
                        request_id=f"r-{index}",
                        payload={"n": index, "text": "naïve ✓", "nested": {"z": [1, None, True], "a": "x"}},
                    )
                ]
            )
    assert independent_verify(store.ledger_path.read_bytes(), pid) == 5
