"""Quarantine: under the lock, a summary of the damaged suffix goes to quarantine/ and the verified prefix becomes the
ledger; raw bytes only when asked; idempotent; refused while a live process holds the lock."""

from __future__ import annotations

import hashlib
import json
import stat
import time

import pytest

from intentloop.errors import CorruptLedgerError, StorageError
from intentloop.model import EventDraft, canonical_bytes
from intentloop.recovery import RECORD_PREFIX, quarantine_damaged_suffix, verify_project


def _records(project) -> list[dict]:
    quarantine = project.dir / "quarantine"
    return [json.loads(p.read_bytes()) for p in sorted(quarantine.glob(f"{RECORD_PREFIX}*.json"))]


def _append_works(project) -> None:
    with project.store.locked() as ledger:
        task = ledger.view.events[0].task_id
        ledger.append([EventDraft(event_type="mode_set", task_id=task, actor="user", request_id="after", payload={})])
    assert verify_project(project.store).intact


def test_tampered_middle_is_set_aside_and_the_prefix_becomes_the_ledger(project) -> None:
    lines = project.write_lines(5)
    lines[2] = project.tamper(lines[2])
    project.write(b"".join(lines))
    suffix = b"".join(lines[2:])
    with pytest.raises(CorruptLedgerError):  # control: the store refuses to write to this ledger
        _append_works(project)
    result = quarantine_damaged_suffix(project.store)
    assert result.action == "quarantined"
    assert project.ledger.read_bytes() == b"".join(lines[:2])
    assert verify_project(project.store).intact
    assert result.quarantined_bytes == len(suffix) and result.sha256 == hashlib.sha256(suffix).hexdigest()
    [record] = _records(project)
    assert record["byte_length"] == len(suffix)
    assert record["sha256"] == hashlib.sha256(suffix).hexdigest()
    assert record["first_bad_line"] == 3 and "event_hash" in record["reason"]
    assert record["observed_at"].endswith("Z")
    _append_works(project)


def test_no_raw_bytes_are_kept_by_default(project) -> None:
    lines = project.write_lines(3)
    secret_looking = b'{"not":"an event, maybe someone\'s data"}\n'
    project.write(b"".join(lines) + secret_looking)
    result = quarantine_damaged_suffix(project.store)
    assert result.kept_bytes_file is None
    quarantine = project.dir / "quarantine"
    for path in quarantine.iterdir():
        assert secret_looking not in path.read_bytes()
        assert not path.name.endswith(".bytes")


def test_keep_bytes_keeps_the_raw_suffix_0600_inside_quarantine(project) -> None:
    lines = project.write_lines(3)
    damaged = b"garbage line\n" + lines[2]
    project.write(b"".join(lines[:2]) + damaged)
    result = quarantine_damaged_suffix(project.store, keep_bytes=True)
    assert result.kept_bytes_file is not None
    kept = project.dir / "quarantine" / result.kept_bytes_file.rsplit("/", 1)[-1]
    assert kept.parent == project.dir / "quarantine"
    assert kept.read_bytes() == damaged
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    [record] = _records(project)
    assert record["raw_bytes_file"] == kept.name


def test_torn_tail_is_quarantined_too(project) -> None:
    lines = project.write_lines(2)
    project.write(b"".join(lines) + lines[1][:30])
    result = quarantine_damaged_suffix(project.store)
    assert result.code == "CORRUPT_TRAILING_EVENT" and result.quarantined_bytes == 30
    assert project.ledger.read_bytes() == b"".join(lines)


def test_quarantine_is_idempotent(project) -> None:
    lines = project.write_lines(3)
    project.write(b"".join(lines) + b"junk\n")
    first = quarantine_damaged_suffix(project.store)
    second = quarantine_damaged_suffix(project.store)
    assert first.action == "quarantined" and second.action == "none"
    assert len(_records(project)) == 1
    assert project.ledger.read_bytes() == b"".join(lines)


def test_an_interrupted_run_reuses_its_record(project) -> None:
    lines = project.write_lines(3)
    damaged = b"junk\n"
    project.write(b"".join(lines) + damaged)
    quarantine = project.dir / "quarantine"
    quarantine.mkdir(mode=0o700)
    left_behind = {
        "byte_length": len(damaged),
        "sha256": hashlib.sha256(damaged).hexdigest(),
        "first_bad_line": 4,
        "raw_bytes_file": None,
    }
    (quarantine / f"{RECORD_PREFIX}1-x.json").write_bytes(canonical_bytes(left_behind))
    result = quarantine_damaged_suffix(project.store)
    assert result.reused_record and result.record is not None and result.record.endswith(f"{RECORD_PREFIX}1-x.json")
    assert len(_records(project)) == 1
    assert project.ledger.read_bytes() == b"".join(lines)


def test_an_intact_ledger_is_left_alone(project) -> None:
    lines = project.write_lines(3)
    before = project.ledger.stat()
    result = quarantine_damaged_suffix(project.store)
    assert result.action == "none"
    assert project.ledger.read_bytes() == b"".join(lines)
    assert project.ledger.stat().st_ino == before.st_ino
    assert not (project.dir / "quarantine").exists()


def test_records_of_a_newer_schema_are_not_quarantined(project) -> None:
    lines = project.write_lines(2)
    live = project.write(b"".join(lines) + canonical_bytes({"schema_version": 2}) + b"\n")
    with pytest.raises(CorruptLedgerError) as caught:
        quarantine_damaged_suffix(project.store)
    assert caught.value.code == "FUTURE_SCHEMA"
    assert project.ledger.read_bytes() == live


def test_damage_other_than_confirmed_changes_nothing(project) -> None:
    lines = project.write_lines(2)
    live = project.write(b"".join(lines) + b"junk\n")
    with pytest.raises(StorageError) as caught:
        quarantine_damaged_suffix(project.store, expected_sha256="0" * 64)
    assert caught.value.code == "TRANSIENT_FILE_RACE"
    assert project.ledger.read_bytes() == live
    confirmed = hashlib.sha256(b"junk\n").hexdigest()
    assert quarantine_damaged_suffix(project.store, expected_sha256=confirmed).action == "quarantined"


def test_refused_while_a_live_process_holds_the_lock(project, hold_lock) -> None:
    lines = project.write_lines(3)
    live = project.write(b"".join(lines) + b"junk\n")
    holder = hold_lock(project)
    started = time.monotonic()
    with pytest.raises(StorageError) as caught:
        quarantine_damaged_suffix(project.store, deadline=time.monotonic() + 0.5)
    assert caught.value.code == "LOCK_TIMEOUT" and caught.value.retryable
    assert time.monotonic() - started < 5
    assert project.ledger.read_bytes() == live
    assert holder.poll() is None  # the live owner was not disturbed
    assert holder.stdin is not None
    holder.stdin.close()
    holder.wait(timeout=10)
    assert quarantine_damaged_suffix(project.store, deadline=time.monotonic() + 5).action == "quarantined"
