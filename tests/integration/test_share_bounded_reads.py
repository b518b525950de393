"""A reader holds a bounded number of payloads and heads at once, however long a writer's stream (docs/SYNC.md,
"The combined view").

The reader's ``intentloop sync`` runs in a real process over real git with its batch sizes lowered (5 payloads, and
heads groups of one records file), and logs how many blobs each git read asked for and how many writers each heads
read covered: a reader that read one writer's payloads as one batch, or every writer's head at once, fails here. A
payload edited in a later batch is still reported with its sequence number.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _support.share_world import Machine, explicit, git, world

_READER = """
import json, sys
import intentloop.service._share_sync as sync
from intentloop.cli.entry import main
from intentloop.store._stream_git import Mirror
log = open(sys.argv[1], "a")
sync._BLOB_BATCH, sync._HEADS_BYTES = 5, 1
read_blobs, read_heads = Mirror.read_blobs, Mirror.read_heads
def logged_blobs(self, shas):
    log.write(json.dumps({"blobs": len(shas)}) + "\\n")
    return read_blobs(self, shas)
def logged_heads(self, commits):
    log.write(json.dumps({"heads": len(commits)}) + "\\n")
    return read_heads(self, commits)
Mirror.read_blobs, Mirror.read_heads = logged_blobs, logged_heads
sys.argv = ["intentloop", "sync", "--json"]
main()
"""

RULES = 12


def _bounded_sync(reader: Machine, log: Path) -> tuple[dict[str, Any], list[dict[str, int]]]:
    log.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(log)],
        cwd=reader.clone,
        env=reader.env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reads = [json.loads(line) for line in log.read_text().splitlines()]
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer, reads


def test_a_reader_holds_a_bounded_batch_of_payloads_and_heads(tmp_path: Path) -> None:
    _origin, remote, (a, b, c) = world(tmp_path, ["a", "b", "c"])
    shared = a.cli("share", "init")["shared_id"]
    keys = {}
    for machine in (a, b, c):
        if machine is not a:
            machine.cli("share", "join", shared)
        machine.cli("share", "remote", f"file://{remote}")
        keys[machine] = machine.cli("share", "keys")
    for writer, name in ((a, "a"), (c, "c")):
        b.cli("share", "trust", keys[writer]["public_key"], "--principal", keys[writer]["principal"])
        task = writer.start()
        writer.tools(*(explicit(task, f"rule {n} from {name}") for n in range(RULES)))
        writer.cli("sync")
    # the last payload of a's stream (in the third batch of 5) edited on the remote
    ref = f"refs/intentloop/{shared}/{keys[a]['key_id']}"
    good = git("rev-parse", ref, cwd=remote).strip()
    last = json.loads(git("cat-file", "blob", f"{good}:records.jsonl", cwd=remote).splitlines()[-1])
    git("update-ref", ref, _replace_payload(remote, good, last["digest"], b'{"body":{},"salt":"00"}'), cwd=remote)
    log = tmp_path / "reads.jsonl"
    report, reads = _bounded_sync(b, log)
    statuses = {w["writer"]: (w["status"], w.get("problem_seq")) for w in report["writers"]}
    assert statuses == {keys[a]["key_id"]: ("tampered", RULES), keys[c]["key_id"]: ("accepted", None)}
    blobs = [r["blobs"] for r in reads if "blobs" in r]
    assert sum(blobs) == 2 * RULES and max(blobs) <= 5, blobs  # every payload read, never more than 5 at once
    assert [r["heads"] for r in reads if "heads" in r] == [1, 1]  # one writer's head at a time
    git("update-ref", ref, good, cwd=remote)  # the positive control: the real stream is accepted
    report, reads = _bounded_sync(b, log)
    found = next(w for w in report["writers"] if w["writer"] == keys[a]["key_id"])
    assert (found["status"], found["seq"]) == ("accepted", RULES), found
    blobs = [r["blobs"] for r in reads if "blobs" in r]
    assert sum(blobs) == RULES and max(blobs) <= 5, blobs
    task = b.start()
    snap = b.tools(("intent_get_snapshot", {"task_id": task, "include_peers": True}))[0]
    assert {p["statement"] for p in snap["peer_claims"]} == {
        f"rule {n} from {name}" for n in range(RULES) for name in ("a", "c")
    }


def _replace_payload(repo: Path, commit: str, digest: str, data: bytes) -> str:
    """A new root commit: ``commit``'s tree with the payload ``digest`` replaced by ``data``."""
    index = repo / "forge.index"
    env = {"GIT_DIR": str(repo), "GIT_INDEX_FILE": str(index), "PATH": "/usr/bin:/bin"}

    def run(*args: str, stdin: bytes | None = None) -> str:
        return subprocess.run(["git", *args], input=stdin, env=env, capture_output=True, check=True).stdout.decode()

    run("read-tree", commit)
    blob = run("hash-object", "-w", "--stdin", stdin=data).strip()
    run("update-index", "--cacheinfo", f"100644,{blob},payloads/{digest}")
    tree = run("write-tree").strip()
    index.unlink()
    return run("-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-m", "forged").strip()
