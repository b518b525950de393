"""Streams under attack and deletion that travels (docs/SYNC.md, "Reading" and "Erasure"), with real git.

A stale force-push of a writer's ref is a rollback (reported, the last good state kept, healed by the writer's next
push; in a team of three, on every reader, while a reader pushes only its own ref); an edited payload or record is
reported with the writer and the sequence number and changes nothing; a writer's stream copied under another
writer's ref is refused; a second history signed by the same key freezes the writer; a private or off task, hook
observations and session data leave zero bytes in the bare repository; an erased claim leaves no byte of its
statement in the streams or the mirrors after ``git gc --prune=now``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from _support.share_world import HOOK, Machine, explicit, git, paired


def _ref(remote: Path, shared: str, writer: str) -> str:
    return f"refs/intentloop/{shared}/{writer}"


def _peers(machine: Machine) -> set[str]:
    task = machine.start()
    snap = machine.tools(("intent_get_snapshot", {"task_id": task, "include_peers": True}))[0]
    return {c["statement"] for c in snap["peer_claims"]}


def _writer(report: dict[str, Any], writer: str) -> dict[str, Any]:
    found: dict[str, Any] = next(w for w in report["writers"] if w["writer"] == writer)
    return found


def _replace_in_tree(repo: Path, commit: str, path: str, data: bytes) -> str:
    """A new root commit: ``commit``'s tree with ``path`` holding ``data`` (what a program without the key can do)."""
    index = repo / f"forge-{uuid.uuid4().hex}.index"
    env = {**os.environ, "GIT_DIR": str(repo), "GIT_INDEX_FILE": str(index)}

    def run(*args: str, stdin: bytes | None = None) -> str:
        return subprocess.run(["git", *args], input=stdin, env=env, capture_output=True, check=True).stdout.decode()

    run("read-tree", commit)
    blob = run("hash-object", "-w", "--stdin", stdin=data).strip()
    run("update-index", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree").strip()
    index.unlink()
    return run("-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-m", "forged").strip()


def test_a_stale_force_push_is_a_rollback_reported_and_healed_by_the_writer(tmp_path: Path) -> None:
    remote, (a, b), shared = paired(tmp_path, ["a", "b"])
    writer = a.cli("share", "keys")["key_id"]
    task = a.start()
    a.tools(explicit(task, "First rule"))
    a.cli("sync")
    stale = git("rev-parse", _ref(remote, shared, writer), cwd=remote).strip()
    a.tools(explicit(task, "Second rule"))
    assert a.cli("sync")["own"]["seq"] == 2
    assert _writer(b.cli("sync"), writer)["status"] == "accepted"
    git("update-ref", _ref(remote, shared, writer), stale, cwd=remote)  # the host rewinds the ref
    report = _writer(b.cli("sync"), writer)
    assert (report["status"], report["problem_seq"]) == ("rollback", 1)
    assert _peers(b) == {"First rule", "Second rule"}  # the last good state is kept
    healed = a.cli("sync")["own"]
    assert healed["pushed"] is True and healed["healed"] is True
    assert _writer(b.cli("sync"), writer)["status"] == "unchanged"


def test_in_a_team_a_rewound_ref_keeps_the_last_good_state_on_every_reader_until_its_writer_heals_it(
    tmp_path: Path,
) -> None:
    remote, (alice, bob, carol), shared = paired(
        tmp_path, ["a", "b", "c"], ["alice@example.org", "bob@example.org", "carol@example.org"]
    )
    writer = alice.cli("share", "keys")["key_id"]
    task = alice.start()
    alice.tools(explicit(task, "Alice's first rule"))
    alice.cli("sync")
    stale = git("rev-parse", _ref(remote, shared, writer), cwd=remote).strip()
    alice.tools(explicit(task, "Alice's second rule"))
    alice.cli("sync")
    for reader in (bob, carol):
        reader.tools(explicit(reader.start(), f"{reader.name}'s own rule"))
        assert _writer(reader.cli("sync"), writer)["status"] == "accepted"
    git("update-ref", _ref(remote, shared, writer), stale, cwd=remote)  # the host rewinds Alice's ref
    for reader in (bob, carol):
        report = reader.cli("sync")
        entry = _writer(report, writer)
        assert (entry["status"], entry["problem_seq"], entry["seq"]) == ("rollback", 1, 2)
        assert {"Alice's first rule", "Alice's second rule"} <= _peers(reader)  # the last good state is kept
        # a reader pushes only its own ref: Alice's stays as the host left it
        assert git("rev-parse", _ref(remote, shared, writer), cwd=remote).strip() == stale
    assert _peers(carol) >= {"b's own rule"} and _peers(bob) >= {"c's own rule"}  # the others' words flow meanwhile
    healed = alice.cli("sync")["own"]
    assert healed["pushed"] is True and healed["healed"] is True
    assert git("rev-parse", _ref(remote, shared, writer), cwd=remote).strip() != stale
    for reader in (bob, carol):
        assert _writer(reader.cli("sync"), writer)["status"] == "unchanged"
        assert {"Alice's first rule", "Alice's second rule"} <= _peers(reader)


def test_tampered_payloads_and_records_are_reported_with_writer_and_sequence(tmp_path: Path) -> None:
    remote, (a, b), shared = paired(tmp_path, ["a", "b"])
    writer = a.cli("share", "keys")["key_id"]
    task = a.start()
    a.tools(explicit(task, "Keep the public API"), explicit(task, "Run the linters"))
    a.cli("sync")
    assert _writer(b.cli("sync"), writer)["status"] == "accepted"
    a.tools(explicit(task, "Third rule"))
    a.cli("sync")
    good = git("rev-parse", _ref(remote, shared, writer), cwd=remote).strip()
    records = git("cat-file", "blob", f"{good}:records.jsonl", cwd=remote).splitlines()
    third = json.loads(records[2])
    payload = git("cat-file", "blob", f"{good}:payloads/{third['digest']}", cwd=remote)
    forged_payload = payload.replace("Third rule", "Drop the tests").encode()
    forged = _replace_in_tree(remote, good, f"payloads/{third['digest']}", forged_payload)
    git("update-ref", _ref(remote, shared, writer), forged, cwd=remote)
    report = _writer(b.cli("sync"), writer)
    assert (report["status"], report["problem_seq"]) == ("tampered", 3)
    assert "digest" in report["problem"]
    assert _peers(b) == {"Keep the public API", "Run the linters"}
    second = json.loads(records[1])
    second["item"] = "claim:" + str(uuid.uuid4())
    edited = "\n".join([records[0], json.dumps(second, separators=(",", ":"), sort_keys=True), records[2]]) + "\n"
    forged = _replace_in_tree(remote, good, "records.jsonl", edited.encode())
    git("update-ref", _ref(remote, shared, writer), forged, cwd=remote)
    report = _writer(b.cli("sync"), writer)
    assert (report["status"], report["problem_seq"]) == ("tampered", 2)
    assert "Drop the tests" not in json.dumps(b.cli("share", "preview"))
    git("update-ref", _ref(remote, shared, writer), good, cwd=remote)  # the positive control: the real stream
    assert _writer(b.cli("sync"), writer)["status"] == "accepted"
    assert _peers(b) == {"Keep the public API", "Run the linters", "Third rule"}


def test_a_stream_replayed_under_another_writers_ref_is_refused(tmp_path: Path) -> None:
    remote, (a, b, c), shared = paired(tmp_path, ["a", "b", "c"])
    writer_a, writer_c = (m.cli("share", "keys")["key_id"] for m in (a, c))
    task = a.start()
    a.tools(explicit(task, "Said on a"))
    a.cli("sync")
    commit = git("rev-parse", _ref(remote, shared, writer_a), cwd=remote).strip()
    git("update-ref", _ref(remote, shared, writer_c), commit, cwd=remote)
    report = b.cli("sync")
    assert _writer(report, writer_a)["status"] == "accepted"
    refused = _writer(report, writer_c)
    assert refused["status"] == "tampered" and "another writer" in refused["problem"]
    assert _peers(b) == {"Said on a"}


_EQUIVOCATE = """
import sys
from pathlib import Path
import msgspec
from intentloop.store._signing import load_signing_key
from intentloop.store._stream import make_record, payload_blob, records_bytes, sign_checkpoint
from intentloop.store._stream_git import Mirror
key_root, scratch, shared, statement = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
key = load_signing_key(key_root)
claim_id = "0b8f4f36-5d0e-4c55-9a8e-1b2f3c4d5e6f"
body = {"type": "claim", "task": "6f1f7f8e-53a4-4a2b-9d0c-2f4bb1e4c0a1", "claim": {"claim_id": claim_id,
        "statement": statement, "role": "user", "epistemic_status": "explicit", "source_ref": {"kind": "user_event"},
        "scope": "project", "valid_from": "2026-01-01T00:00:00.000Z", "last_confirmed": None, "supersedes": [],
        "facets": ["hard_constraint"], "related_claim_ids": []}}
digest, blob = payload_blob(body)
records = [make_record(1, None, "put", item="claim:" + body["claim"]["claim_id"], digest=digest)]
point = sign_checkpoint(key.sign, shared=shared, writer=key.key_id, public_hex=key.public_hex, principal=None,
                        records=records)
mirror = Mirror(scratch)
mirror.ensure()
print(mirror.write_stream(msgspec.json.encode(point), records_bytes(records), {digest: blob}))
"""


def _force_fork(tmp_path: Path, a: Machine, remote: Path, shared: str, writer: str) -> str:
    """Sign with ``a``'s key a first record other than the one it published, and force-push that history over
    ``a``'s ref (what a writer showing a second history does); returns the forked commit."""
    scratch = tmp_path / "scratch"
    made = subprocess.run(
        [sys.executable, "-c", _EQUIVOCATE, str(a.root), str(scratch), shared, "A forked first record"],
        capture_output=True,
        text=True,
        check=True,
        env=a.env(),
    )
    forked = made.stdout.strip()
    git(
        "push",
        "-q",
        "--force",
        str(remote),
        f"{forked}:{_ref(remote, shared, writer)}",
        cwd=scratch / "share" / "mirror.git",
    )
    return forked


def test_a_second_history_signed_by_the_same_key_freezes_the_writer(tmp_path: Path) -> None:
    remote, (a, b), shared = paired(tmp_path, ["a", "b"])
    writer = a.cli("share", "keys")["key_id"]
    task = a.start()
    a.tools(explicit(task, "The honest first record"))
    a.cli("sync")
    assert _writer(b.cli("sync"), writer)["status"] == "accepted"
    _force_fork(tmp_path, a, remote, shared, writer)
    report = _writer(b.cli("sync"), writer)
    assert (report["status"], report["problem_seq"]) == ("frozen", 1)
    assert "equivocation" in report["problem"]
    assert _peers(b) == {"The honest first record"}
    a.tools(explicit(task, "Later honest record"))
    a.cli("sync")  # the writer's next push does not unfreeze it for b: b keeps the last good state
    assert _writer(b.cli("sync"), writer)["status"] == "frozen"
    assert _peers(b) == {"The honest first record"}


def _all_bytes(repo: Path) -> bytes:
    """Every object of a repository, decompressed, and every file's raw bytes."""
    dump = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch", "--unordered"],
        env={**os.environ, "GIT_DIR": str(repo)},
        capture_output=True,
        check=True,
    ).stdout
    raw = b"".join(p.read_bytes() for p in repo.rglob("*") if p.is_file())
    return dump + raw


def test_private_and_off_tasks_hook_observations_and_session_data_leave_zero_bytes(tmp_path: Path) -> None:
    remote, (a,), _shared = paired(tmp_path, ["a"])
    marker = uuid.uuid4().hex
    session = f"session-{marker}"
    on = str(uuid.uuid4())
    off, private = a.start(), str(uuid.uuid4())
    a.tools(
        (
            "intent_start_task",
            {"task_id": on, "request_id": f"req-start-{marker}", "mode": "on", "host_session_id": session},
        ),
        explicit(on, f"Visible project rule {marker}", request_id=f"req-visible-{marker}"),
        explicit(off, f"Off task rule {marker}"),
        ("intent_set_mode", {"task_id": off, "request_id": "set-off", "mode": "off"}),
        (
            "intent_start_task",
            {"task_id": private, "request_id": "start-p", "mode": "on", "host_session_id": f"other-{marker}"},
        ),
        explicit(private, f"Durable rule before private {marker}"),
        ("intent_set_mode", {"task_id": private, "request_id": "set-private", "mode": "private"}),
        explicit(private, f"Private rule {marker}"),
    )
    prompt = f"Prompt text {marker} that a hook observes"
    payload = {"session_id": session, "cwd": str(a.clone), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    hooked = subprocess.run(HOOK, input=json.dumps(payload).encode(), capture_output=True, env=a.env(), timeout=30)
    assert hooked.returncode == 0
    ledger = b"".join(p.read_bytes() for p in (a.root / "projects").rglob("ledger.jsonl"))
    events = [json.loads(line) for line in ledger.splitlines()]
    assert any(e["event_type"] == "source_observed" for e in events)  # the hook did record its observation
    secrets = {
        f"Off task rule {marker}",
        f"Durable rule before private {marker}",
        f"Private rule {marker}",
        prompt,
        session,
    }
    secrets |= {e["request_id"] for e in events} | {e["event_id"] for e in events}
    for event in events:
        payload_text = event["payload"]
        secrets |= {
            v for k, v in _walk(payload_text) if k in ("request_fingerprint", "host_session_hash", "sha256", "event_id")
        }
    secrets.discard(None)
    a.cli("sync")
    found = _all_bytes(remote)
    assert f"Visible project rule {marker}".encode() in found  # the positive control: what travels is there
    leaked = sorted(s for s in secrets if isinstance(s, str) and s.encode() in found)
    assert leaked == []


def _walk(value: Any) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((key, item))
            found.extend(_walk(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_walk(item))
    return found


def test_an_erased_claim_leaves_no_byte_in_streams_or_mirrors_after_gc(tmp_path: Path) -> None:
    remote, (a, b), shared = paired(tmp_path, ["a", "b"])
    task = a.start()
    marker = uuid.uuid4().hex
    _kept, erased = a.tools(explicit(task, f"Kept rule {marker}"), explicit(task, f"Erased rule {marker}"))
    a.cli("sync")
    b.cli("sync")
    mirrors = [a.root / "share" / "mirror.git", b.root / "share" / "mirror.git", remote]
    assert all(f"Erased rule {marker}".encode() in _all_bytes(m) for m in mirrors)  # the positive control
    assert _peers(b) == {f"Kept rule {marker}", f"Erased rule {marker}"}
    a.cli("forget", "claim", erased["claim_id"], "--yes")
    assert a.cli("sync")["own"]["erased"] == 1
    b.cli("sync")
    assert _peers(b) == {f"Kept rule {marker}"}
    for repo in mirrors:
        subprocess.run(["git", "gc", "-q", "--prune=now"], env={**os.environ, "GIT_DIR": str(repo)}, check=True)
    for repo in mirrors:
        everything = _all_bytes(repo)
        assert f"Erased rule {marker}".encode() not in everything
        assert f"Kept rule {marker}".encode() in everything
    share_files = b"".join(p.read_bytes() for p in (b.root / "share").rglob("*") if p.is_file())
    assert f"Erased rule {marker}".encode() not in share_files
    stream = git(
        "cat-file", "blob", f"{_ref(remote, shared, a.cli('share', 'keys')['key_id'])}:records.jsonl", cwd=remote
    )
    erase = json.loads(stream.splitlines()[-1])
    assert erase["kind"] == "erase" and set(erase) == {"seq", "prev", "kind", "hash", "target"}


def test_a_writer_that_lost_its_mirror_extends_its_published_stream(tmp_path: Path) -> None:
    import shutil

    _remote, (a, b), shared = paired(tmp_path, ["a", "b"])
    writer = a.cli("share", "keys")["key_id"]
    task = a.start()
    a.tools(explicit(task, "Before the loss"), explicit(task, "Also before"))
    a.cli("sync")
    assert _writer(b.cli("sync"), writer)["seq"] == 2
    mirror = a.root / "share" / "mirror.git"
    shutil.rmtree(mirror)  # e.g. a data root restored without it
    assert a.cli("sync")["own"] == {"added": 0, "erased": 0, "seq": 2, "pushed": False, "healed": False}
    adopted = git("for-each-ref", "--format=%(refname)", "refs/intentloop", cwd=mirror).split()
    assert adopted == [f"refs/intentloop/{shared}/{writer}"]  # the published stream is its own again
    a.tools(explicit(task, "After the loss"))
    assert a.cli("sync")["own"] == {"added": 1, "erased": 0, "seq": 3, "pushed": True, "healed": False}
    report = _writer(b.cli("sync"), writer)
    assert (report["status"], report["seq"]) == ("accepted", 3)
    assert _peers(b) == {"Before the loss", "Also before", "After the loss"}


def test_two_histories_shown_to_two_readers_are_caught_by_both_through_witnesses(tmp_path: Path) -> None:
    """a shows b one history and c another (each consistent alone); b's stream witnesses the checkpoint b accepted,
    signed by a, so c freezes a too. A witness line nobody signed proves nothing, and nothing of b or c is lost."""
    remote, (a, b, c), shared = paired(tmp_path, ["a", "b", "c"])
    writer, key_b = a.cli("share", "keys")["key_id"], b.cli("share", "keys")["key_id"]
    task = a.start()
    a.tools(explicit(task, "The honest first record"))
    a.cli("sync")
    assert _writer(b.cli("sync"), writer)["status"] == "accepted"
    b.cli("sync")  # b's stream now witnesses a's checkpoint
    forked = _force_fork(tmp_path, a, remote, shared, writer)
    # a witness line whose signature does not verify (its head edited) is ignored: c takes the fork it was shown
    point = json.loads(git("--git-dir", str(remote), "cat-file", "blob", f"{forked}:checkpoint"))
    point["head"] = "0" * 64
    held = git("--git-dir", str(remote), "rev-parse", _ref(remote, shared, key_b)).strip()
    forged = _replace_in_tree(remote, held, "witnesses", json.dumps(point, sort_keys=True).encode() + b"\n")
    git("--git-dir", str(remote), "update-ref", _ref(remote, shared, key_b), forged, held)
    first = c.cli("sync")
    assert _writer(first, writer)["status"] == "accepted", first
    assert _peers(c) == {"A forked first record"}
    # b meets the fork itself (frozen) and publishes the checkpoint it accepted; c then holds a's signed word for
    # both histories and freezes a at the state it had
    assert _writer(b.cli("sync"), writer)["status"] == "frozen"
    caught = _writer(c.cli("sync"), writer)
    assert (caught["status"], caught["problem_seq"]) == ("frozen", 1), caught
    assert "equivocation" in caught["problem"] and key_b[:12] in caught["problem"]
    assert _peers(c) == {"A forked first record"}
    assert _writer(c.cli("sync"), writer)["status"] == "frozen"  # it stays frozen
    # nothing of the honest members is lost: their own words still cross both ways
    b.tools(explicit(b.start(), "Said by b"))
    c.tools(explicit(c.start(), "Said by c"))
    for machine in (b, c, b):
        machine.cli("sync")
    assert _peers(b) == {"The honest first record", "Said by c"}
    assert _peers(c) == {"A forked first record", "Said by b"}
