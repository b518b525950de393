"""Many writers at once, and syncs killed at any moment (docs/SYNC.md, "Sync").

Eight installations write 50 claims each while all of them sync concurrently; after two more concurrent rounds every
installation sees exactly the other 350 claims, once each. Fifty ``kill -9``s of whole sync process groups (git
children included) during fetch and push leave no partial state: the next sync converges and ``git fsck`` passes.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

from _support.share_world import INTENTLOOP, Machine, explicit, paired


def _sync(machine: Machine) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*INTENTLOOP, "sync", "--json"],
        cwd=machine.clone,
        env=machine.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _all_sync(machines: list[Machine]) -> None:
    running = [_sync(m) for m in machines]
    for proc in running:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (out, err)


def _peer_statements(machine: Machine) -> list[str]:
    task = machine.start()
    snap = machine.tools(("intent_get_snapshot", {"task_id": task, "include_peers": True}))[0]
    return [c["statement"] for c in snap["peer_claims"]]


def test_eight_installations_writing_and_syncing_concurrently_converge(tmp_path: Path) -> None:
    _remote, machines, _shared = paired(tmp_path, [f"m{i}" for i in range(8)])
    tasks = [m.start() for m in machines]
    batches = []
    for index, (machine, task) in enumerate(zip(machines, tasks, strict=True)):
        batches.append((machine, [explicit(task, f"claim {n} of writer {index}") for n in range(50)]))
    syncing = [_sync(m) for m in machines]  # the first round runs while the claims are written
    for machine, calls in batches:
        machine.tools(*calls)
    for proc in syncing:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (out, err)
    _all_sync(machines)
    _all_sync(machines)
    every = {f"claim {n} of writer {i}" for i in range(8) for n in range(50)}
    for index, machine in enumerate(machines):
        seen = _peer_statements(machine)
        assert len(seen) == len(set(seen)) == 350
        assert set(seen) == every - {f"claim {n} of writer {index}" for n in range(50)}


def test_fifty_kills_during_fetch_and_push_leave_no_partial_state(tmp_path: Path) -> None:
    remote, (a, b), _shared = paired(tmp_path, ["m0", "m1"])
    task = a.start()
    rng = random.Random(23)
    written = 0
    for kill in range(50):
        if kill % 5 == 0:
            a.tools(*(explicit(task, f"rule {written + n}") for n in range(3)))
            written += 3
        proc = _sync(a if kill % 2 == 0 else b)
        time.sleep(rng.uniform(0.05, 0.6))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    for machine in (a, b, a, b):
        done = machine.cli("sync")
        assert all(w["status"] in ("accepted", "unchanged") for w in done["writers"]), done
    assert sorted(_peer_statements(b)) == sorted(f"rule {n}" for n in range(written))
    for repo in (a.root / "share" / "mirror.git", b.root / "share" / "mirror.git", remote):
        subprocess.run(["git", "fsck", "--no-progress"], env={**os.environ, "GIT_DIR": str(repo)}, check=True)
    for machine in (a, b):  # every state file whole: plain JSON, or a seal line and JSON (the view's files)
        for state in (machine.root / "share" / "projects").rglob("*.json"):
            text = state.read_text()
            if state.name in ("settings.json", "peers.json"):
                json.loads(text)
            else:
                seal, _, body = text.partition("\n")
                assert len(seal) == 64 and json.loads(body)


def test_ref_locks_left_by_a_killed_sync_do_not_stop_the_next_one(tmp_path: Path) -> None:
    """A sync killed inside ``git update-ref`` or a fetch leaves ``*.lock`` files in the mirror; the next sync (which
    holds the installation's sync lock, so no other git process of ours is in the mirror) clears them and goes on."""
    _remote, (a, b), shared = paired(tmp_path, ["m0", "m1"])
    task = a.start()
    a.tools(explicit(task, "rule one"))
    a.cli("sync")
    b.cli("sync")
    key_a = a.cli("share", "keys")["key_id"]
    planted = []
    for machine in (a, b):
        mirror = machine.root / "share" / "mirror.git"
        for name in (f"refs/fetched/{shared}/{key_a}.lock", f"refs/accepted/{shared}/{key_a}.lock", "packed-refs.lock"):
            (mirror / name).parent.mkdir(parents=True, exist_ok=True)
            (mirror / name).write_text("")
            planted.append(mirror / name)
    a.tools(explicit(task, "rule two"))
    pushed = a.cli("sync")
    assert pushed["own"]["pushed"] is True, pushed
    pulled = b.cli("sync")
    assert {w["writer"]: w["status"] for w in pulled["writers"]}[key_a] == "accepted", pulled
    assert sorted(_peer_statements(b)) == ["rule one", "rule two"]
    assert not [p for p in planted if p.exists()]
