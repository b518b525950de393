"""Identifiers, timestamps and the event envelope."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest

from intentloop.errors import IntentLoopError
from intentloop.model import (
    EventDraft,
    deterministic_task_id,
    event_line,
    format_time,
    is_uuid,
    parse_time,
    project_id_for,
    rechain,
    require_uuid,
    seal,
    session_hash,
)


def test_project_id_and_session_hash_follow_the_contract() -> None:
    assert project_id_for("/work/p") == hashlib.sha256(b"intent-loop-project-v1\0/work/p").hexdigest()
    assert session_hash("s-1") == hashlib.sha256(b"intent-loop-session-v1\0s-1").hexdigest()


def test_deterministic_task_id_is_a_stable_uuid_per_project_and_request() -> None:
    a = deterministic_task_id("a" * 64, "req-1")
    assert a == deterministic_task_id("a" * 64, "req-1")
    assert is_uuid(a) and a[14] == "5" and a[19] in "89ab"
    assert a != deterministic_task_id("a" * 64, "req-2")
    assert a != deterministic_task_id("b" * 64, "req-1")


def test_require_uuid_rejects_non_uuids_with_invalid_id() -> None:
    good = "123e4567-e89b-42d3-a456-426614174000"
    assert require_uuid(good.upper()) == good
    with pytest.raises(IntentLoopError) as err:
        require_uuid("not-a-uuid", "task_id")
    assert err.value.code == "INVALID_ID"


def test_times_are_rfc3339_utc_with_milliseconds() -> None:
    moment = datetime(2026, 11, 30, 1, 2, 3, 456789, tzinfo=UTC)
    assert format_time(moment) == "2026-11-30T01:02:03.456Z"
    assert parse_time("2026-11-30T01:02:03.456Z") == moment.replace(microsecond=456000)
    for bad in ("2026-11-30T01:02:03+00:00", "2026-11-30 01:02:03Z", "yesterday"):
        with pytest.raises(ValueError):
            parse_time(bad)


def test_seal_chains_and_hashes_the_canonical_event() -> None:
    pid = "c" * 64
    first = seal(
        EventDraft(event_type="mode_set", task_id="t", actor="user", request_id="r1", payload={"mode": "on"}),
        project_id=pid,
        prev_hash=None,
    )
    second = seal(
        EventDraft(event_type="mode_set", task_id="t", actor="user", request_id="r2", payload={"mode": "off"}),
        project_id=pid,
        prev_hash=first.event_hash,
    )
    line = event_line(first)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    body = json.loads(line)
    claimed = body.pop("event_hash")
    recomputed = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
    assert claimed == recomputed.hexdigest()
    assert second.prev_hash == first.event_hash and first.prev_hash is None
    assert list(json.loads(line)) == sorted(json.loads(line))


def test_rechain_rebuilds_links_after_a_removal() -> None:
    pid = "d" * 64
    evs = []
    prev = None
    for i in range(3):
        ev = seal(
            EventDraft(event_type="mode_set", task_id="t", actor="user", request_id=f"r{i}", payload={}),
            project_id=pid,
            prev_hash=prev,
        )
        evs.append(ev)
        prev = ev.event_hash
    kept = rechain([evs[0], evs[2]], project_id=pid)
    assert kept[0] == evs[0]
    assert kept[1].prev_hash == evs[0].event_hash and kept[1].event_id == evs[2].event_id
    assert kept[1].event_hash != evs[2].event_hash


@pytest.mark.parametrize(
    ("pattern", "good"),
    [
        ("UUID_RE", "123e4567-e89b-42d3-a456-426614174000"),
        ("HEX64_RE", "a" * 64),
        ("OPAQUE_ID_RE", "turn-1:abc@x"),
        ("RFC3339_UTC_RE", "2026-11-30T01:02:03.456Z"),
    ],
)
def test_id_patterns_refuse_a_trailing_newline(pattern: str, good: str) -> None:
    from intentloop.model import ids

    regex = getattr(ids, pattern)
    assert regex.match(good)
    assert not regex.match(good + "\n")
