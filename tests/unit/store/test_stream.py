"""The stream format (``intentloop/store/_stream.py``): every check a reader makes, each with its positive control.

A stream is built here exactly as a writer builds it (records, salted payloads, the signed checkpoint); each test then
changes one thing a program without the key could change and expects ``parse_stream`` to name the problem and the
sequence number.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest

from intentloop.model.canonical import canonical_bytes
from intentloop.store._signing import SigningKey
from intentloop.store._stream import (
    StreamProblem,
    check_checkpoint,
    key_id_of,
    make_record,
    openssh_public_key,
    parse_openssh_public_key,
    parse_stream,
    payload_blob,
    records_bytes,
    sign_checkpoint,
    ssh_fingerprint,
    witnessed,
    witnesses_bytes,
)

SHARED = "3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b"
OTHER = "7d1e2f3a-4b5c-4d6e-9f8a-0b1c2d3e4f5a"


def _body(n: int) -> dict[str, Any]:
    return {"type": "claim", "task": None, "claim": {"claim_id": f"c{n}", "statement": f"statement {n}"}}


def _build(key: SigningKey, *, erase: bool = False) -> dict[str, Any]:
    records = []
    payloads: dict[str, bytes] = {}
    for n in (1, 2):
        digest, blob = payload_blob(_body(n))
        payloads[digest] = blob
        records.append(make_record(n, records[-1].hash if records else None, "put", item=f"claim:c{n}", digest=digest))
    if erase:
        payloads.pop(records[0].digest or "")
        records.append(make_record(3, records[-1].hash, "erase", target=1))
    point = sign_checkpoint(
        key.sign, shared=SHARED, writer=key.key_id, public_hex=key.public_hex, principal="me@x", records=records
    )
    return {
        "shared": SHARED,
        "writer": key.key_id,
        "checkpoint": msgspec.json.encode(point),
        "records": records_bytes(records),
        "payloads": payloads,
    }


@pytest.fixture
def key() -> SigningKey:
    return SigningKey(b"\x07" * 32)


def _problem(parts: dict[str, Any]) -> StreamProblem:
    with pytest.raises(StreamProblem) as caught:
        parse_stream(**parts)
    return caught.value


def test_a_writers_stream_verifies_and_shows_its_live_items(key: SigningKey) -> None:
    stream = parse_stream(**_build(key))
    assert stream.checkpoint.seq == 2
    assert {item: stream.bodies[seq]["claim"]["statement"] for item, seq in stream.live().items()} == {
        "claim:c1": "statement 1",
        "claim:c2": "statement 2",
    }
    erased = parse_stream(**_build(key, erase=True))
    assert erased.live() == {"claim:c2": 2} and erased.erased() == {1}


def test_a_checkpoint_signed_by_another_key_or_for_another_project_is_refused(key: SigningKey) -> None:
    parts = _build(key)
    other = SigningKey(b"\x08" * 32)
    forged = _build(other)
    assert _problem({**parts, "checkpoint": forged["checkpoint"]}).reason.startswith("the checkpoint names another")
    assert "another shared project" in _problem({**parts, "shared": OTHER}).reason
    point = msgspec.json.decode(parts["checkpoint"])
    point["seq"] = 1  # a replayed or edited checkpoint: the signature no longer covers it
    assert "signature" in _problem({**parts, "checkpoint": msgspec.json.encode(point)}).reason
    assert _problem({**parts, "writer": other.key_id}).reason.startswith("the checkpoint names another")


def test_edited_records_are_refused_with_their_sequence_number(key: SigningKey) -> None:
    parts = _build(key)
    lines = parts["records"].splitlines()
    second = msgspec.json.decode(lines[1])
    second["item"] = "claim:c9"
    edited = b"\n".join([lines[0], canonical_bytes(second)]) + b"\n"
    problem = _problem({**parts, "records": edited})
    assert (problem.reason, problem.seq) == ("a record does not chain", 2)
    spaced = lines[0].replace(b'","', b'", "', 1)
    assert _problem({**parts, "records": b"\n".join([spaced, lines[1]]) + b"\n"}).seq == 1
    truncated = _problem({**parts, "records": lines[0] + b"\n"})
    assert truncated.reason == "the records do not end at the checkpoint's head"


def test_payloads_are_checked_against_their_digests(key: SigningKey) -> None:
    parts = _build(key)
    digest = next(iter(parts["payloads"]))
    changed = {**parts["payloads"], digest: parts["payloads"][digest].replace(b"statement 1", b"statement X")}
    problem = _problem({**parts, "payloads": changed})
    assert (problem.reason, problem.seq) == ("a payload does not match its digest", 1)
    missing = {k: v for k, v in parts["payloads"].items() if k != digest}
    assert _problem({**parts, "payloads": missing}).reason == "a payload is missing"


def test_an_erased_payload_carried_again_is_refused(key: SigningKey) -> None:
    erased = _build(key, erase=True)
    erased_digest = msgspec.json.decode(erased["records"].splitlines()[0])["digest"]
    assert erased_digest not in erased["payloads"]
    carried = {**erased["payloads"], erased_digest: b"anything"}
    problem = _problem({**erased, "payloads": carried})
    assert (problem.reason, problem.seq) == ("an erased payload is still carried", 1)


def test_an_erase_must_name_an_earlier_put(key: SigningKey) -> None:
    first = make_record(1, None, "erase", target=1)
    point = sign_checkpoint(
        key.sign, shared=SHARED, writer=key.key_id, public_hex=key.public_hex, principal=None, records=[first]
    )
    parts = {
        "shared": SHARED,
        "writer": key.key_id,
        "checkpoint": msgspec.json.encode(point),
        "records": records_bytes([first]),
        "payloads": {},
    }
    assert _problem(parts).reason == "an erase record names no earlier put"


def test_the_openssh_form_is_what_ssh_keygen_reads(tmp_path: Path, key: SigningKey) -> None:
    line = openssh_public_key(key.public_hex)
    assert line.startswith("ssh-ed25519 AAAA")
    assert parse_openssh_public_key(line + " me@example.org") == key.public_hex
    assert key_id_of(key.public_hex) == key.key_id
    (tmp_path / "key.pub").write_text(line + "\n")
    listed = subprocess.run(
        ["ssh-keygen", "-lf", str(tmp_path / "key.pub")], capture_output=True, text=True, check=True
    )
    assert listed.stdout.split()[1] == ssh_fingerprint(key.public_hex)
    for bad in ("ssh-rsa AAAAB3NzaC1yc2E", "ssh-ed25519 !!!", "ssh-ed25519", line[:-8]):
        assert parse_openssh_public_key(bad) is None


def test_a_witnesses_file_holds_other_writers_checkpoints_and_only_signed_ones_check(key: SigningKey) -> None:
    other = SigningKey(b"\x09" * 32)
    points = [_build(key)["checkpoint"], _build(other)["checkpoint"]]
    data = witnesses_bytes([points[1], b"not json", points[0]])
    assert data == witnesses_bytes(points) and data.count(b"\n") == 2  # canonical, sorted, the unreadable left out
    held = witnessed(data + b"{broken\n" + b"x" * 5000 + b"\n")
    assert sorted(p.writer for p in held) == sorted([key.key_id, other.key_id])
    for point in held:  # the control: as published, each verifies under its own writer's key
        check_checkpoint(point, shared=SHARED, writer=point.writer)
    edited = msgspec.structs.replace(held[0], head="0" * 64)
    with pytest.raises(StreamProblem, match="signature"):
        check_checkpoint(edited, shared=SHARED, writer=edited.writer)
    with pytest.raises(StreamProblem, match="another shared project"):
        check_checkpoint(held[0], shared=OTHER, writer=held[0].writer)
