"""Per-writer quotas (docs/SYNC.md, "Teams: quotas and erases"), three members on one machine.

Alice and Bob are real installations; Carol's installation key signs a stream of 100,000 records written with the
stream library (what a member's runaway or hostile tool could push), one of whose payloads is over the size limit.
Every honest claim reaches every member, Carol's records are admitted a prefix of ``records_per_sync`` per sync, the
refusals are reported with the limit, the count and the first sequence number, and the next sync goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from intentloop.store._share import QUOTAS
from intentloop.store._signing import load_or_create_signing_key
from intentloop.store._stream import make_record, payload_blob, records_bytes, sign_checkpoint
from intentloop.store._stream_git import Mirror

from _support.share_world import Machine, explicit, paired, travelling_claim

SPAM = 100_000
OVERSIZED_SEQ = 2


def _claim_body(text: str) -> dict[str, Any]:
    return {"type": "claim", "task": None, "claim": travelling_claim(text)}


def _push_spam(carol: Machine, remote: Path, shared: str, scratch: Path) -> None:
    """Carol's key signs SPAM records: a genuine first claim, an oversized payload, then spam claims."""
    key = load_or_create_signing_key(carol.root)
    records = []
    payloads: dict[str, bytes] = {}
    for seq in range(1, SPAM + 1):
        if seq == 1:
            body = _claim_body("Carol's genuine rule")
        elif seq == OVERSIZED_SEQ:
            body = _claim_body("x" * (QUOTAS.payload_bytes + 1024))
        else:
            body = _claim_body(f"spam {seq}")
        digest, blob = payload_blob(body)
        payloads[digest] = blob
        item = f"claim:{body['claim']['claim_id']}"
        records.append(make_record(seq, records[-1].hash if records else None, "put", item=item, digest=digest))
    point = sign_checkpoint(
        key.sign,
        shared=shared,
        writer=key.key_id,
        public_hex=key.public_hex,
        principal="carol@example.org",
        records=records,
    )
    mirror = Mirror(scratch)
    mirror.ensure()
    commit = mirror.write_stream(msgspec.json.encode(point), records_bytes(records), payloads)
    mirror.git(["push", "-q", "--force", str(remote), f"{commit}:refs/intentloop/{shared}/{key.key_id}"])


def _statements(machine: Machine) -> list[str]:
    task = machine.start()
    answer = machine.tools(("intent_get_snapshot", {"task_id": task, "include_peers": True}))[0]
    return [c["statement"] for c in answer["peer_claims"]]


def test_a_spamming_writer_is_admitted_a_prefix_per_sync_and_honest_members_lose_nothing(tmp_path: Path) -> None:
    remote, (alice, bob, carol), shared = paired(
        tmp_path, ["a", "b", "c"], ["alice@example.org", "bob@example.org", "carol@example.org"]
    )
    for machine in (alice, bob):
        task = machine.start()
        machine.tools(*(explicit(task, f"{machine.name} rule {n}") for n in range(3)))
        machine.cli("sync")
    _push_spam(carol, remote, shared, tmp_path / "scratch")
    carol_key = carol.cli("share", "keys")["key_id"]
    per_sync = QUOTAS.records_per_sync

    first = alice.cli("sync")
    entry = next(w for w in first["writers"] if w["writer"] == carol_key)
    assert (entry["status"], entry["seq"], entry["admitted"], entry["admitted_now"]) == (
        "accepted",
        SPAM,
        per_sync,
        per_sync,
    )
    assert entry["quota"] == [
        {
            "limit": "payload_bytes",
            "max": QUOTAS.payload_bytes,
            "refused": 1,
            "from_seq": OVERSIZED_SEQ,
            "seqs": [OVERSIZED_SEQ],
        },
        {"limit": "records_per_sync", "max": per_sync, "refused": SPAM - per_sync, "from_seq": per_sync + 1},
    ]
    bob_entry = next(w for w in first["writers"] if w["writer"] != carol_key)
    assert (bob_entry["status"], "quota" in bob_entry) == ("accepted", False)  # the positive control
    shown = _statements(alice)
    assert {f"b rule {n}" for n in range(3)} <= set(shown)
    assert "Carol's genuine rule" in shown
    assert not any(s.startswith("xxx") for s in shown)  # the oversized payload is never shown
    assert sum(s.startswith("spam ") for s in shown) == per_sync - 2

    second = alice.cli("sync")
    entry = next(w for w in second["writers"] if w["writer"] == carol_key)
    assert (entry["status"], entry["admitted"], entry["admitted_now"]) == ("accepted", 2 * per_sync, per_sync)
    assert entry["quota"] == [
        {"limit": "records_per_sync", "max": per_sync, "refused": SPAM - 2 * per_sync, "from_seq": 2 * per_sync + 1}
    ]
    assert sum(s.startswith("spam ") for s in _statements(alice)) == 2 * per_sync - 2

    usage = alice.cli("share", "quotas")
    assert usage["limits"] == {
        "records_per_sync": QUOTAS.records_per_sync,
        "payload_bytes": QUOTAS.payload_bytes,
        "live_items": QUOTAS.live_items,
    }
    rows = {row["writer"]: row for row in usage["writers"]}
    assert (rows[carol_key]["seq"], rows[carol_key]["admitted"], rows[carol_key]["waiting"]) == (
        SPAM,
        2 * per_sync,
        SPAM - 2 * per_sync,
    )
    assert rows[carol_key]["shown_items"] == 2 * per_sync - 1
    assert rows[carol_key]["principal"] == "carol@example.org"

    # Bob, synced after the spam, gets Alice's words whole and the same first prefix of Carol's
    done = bob.cli("sync")
    assert next(w for w in done["writers"] if w["writer"] == carol_key)["admitted"] == per_sync
    assert {f"a rule {n}" for n in range(3)} <= set(_statements(bob))
    # an honest member's new words still arrive while Carol's backlog waits
    task = bob.start()
    bob.tools(explicit(task, "Bob's later rule"))
    bob.cli("sync")
    third = alice.cli("sync")
    assert next(w for w in third["writers"] if w["writer"] == carol_key)["admitted"] == 3 * per_sync
    assert "Bob's later rule" in _statements(alice)
