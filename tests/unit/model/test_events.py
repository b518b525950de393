"""The event envelope: sealing, hashing and re-chaining."""

from __future__ import annotations

import hashlib
import json

from intentloop.model import EventDraft, event_line, rechain, seal


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
