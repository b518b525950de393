"""Sharing through git (docs/SYNC.md): how long a push, a cold and an incremental pull, a snapshot with peers and
SessionStart with peers take, on one machine with a bare ``file://`` repository; and the same two reads once a
teammate (another principal) holds 1,000 claims, 100 of them disputing the reader's own.

Writers other than the measured installation are made in this process with the stream library (their own random
keys, trusted by the reader), so 100 writers cost no 100 installations; the reader and the pushing writer are real
installations driven through the CLI and the hook process.

    python tools/bench/share.py [--writers 100] [--cold-writers 10] [--cold-events 10000] [--claims 1000]
                                [--spam 100000]

``--spam N`` adds one trusted writer of N records (a member's runaway tool) and measures the reader's first and
second sync of it, each admitting one quota prefix (docs/SYNC.md, "Teams: quotas and erases"); 0 skips it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec

from intentloop.store._share import TrustedKey, trust_key
from intentloop.store._signing import SigningKey
from intentloop.store._stream import (
    key_id_of,
    make_record,
    openssh_public_key,
    payload_blob,
    records_bytes,
    sign_checkpoint,
)
from intentloop.store._stream_git import Mirror

INTENTLOOP = str(Path(sys.executable).with_name("intentloop"))


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _cli(root: Path, cwd: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(root)}
    done = subprocess.run([INTENTLOOP, *args, "--json"], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


#: Runs ``intentloop sync`` and reports on stderr the peak RSS in MB of the largest process of it (intentloop's or
#: git's). A small launcher of its own, because a process's peak counts what it inherited at ``fork``: a child of this
#: bench, which holds the fake writers, would start at the bench's size.
_PEAK = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, file=sys.stderr)\n"
)


def _sync_peak(root: Path, cwd: Path) -> float:
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(root)}
    argv = [sys.executable, "-c", _PEAK, INTENTLOOP, "sync", "--json"]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout)["ok"] is True
    return float(done.stderr.strip().splitlines()[-1])


def _timed(fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _tools(root: Path, cwd: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    script = (
        "import json, sys, trio\nfrom pathlib import Path\nfrom intentloop.service import IntentService\n"
        "from intentloop.store import locate_project\nroot, cwd = Path(sys.argv[1]), sys.argv[2]\n"
        "where = locate_project(cwd, root)\nservice = IntentService(lambda: root, resident=False)\n"
        "async def main():\n    return [await service.dispatch(n, a, project_root=where.root, "
        "project_id=where.project_id) for n, a in json.loads(sys.stdin.read())]\nprint(json.dumps(trio.run(main)))\n"
    )
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), str(cwd)],
        input=json.dumps(calls),
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    answers: list[Any] = json.loads(done.stdout)
    return answers


def _claim(task: str, text: str) -> tuple[str, dict[str, Any]]:
    return (
        "intent_add_explicit",
        {
            "task_id": task,
            "request_id": uuid.uuid4().hex,
            "statement": text,
            "source_ref": {"kind": "user_event", "event_id": "t"},
            "facets": ["hard_constraint"],
            "confirmation_reason": "direct_statement",
            "scope": "project",
        },
    )


class FakeWriter:
    """A writer made with the stream library: its key, records and live payloads."""

    def __init__(self, shared: str, principal: str = "peer@example.org") -> None:
        self.key = SigningKey(os.urandom(32))
        self.shared = shared
        self.principal = principal
        self.records: list[Any] = []
        self.payloads: dict[str, bytes] = {}

    def add(self, count: int, supersedes: list[str] | None = None) -> None:
        """``count`` explicit claims; the first ones each supersede one id of ``supersedes``."""
        for index in range(count):
            claim_id = str(uuid.uuid4())
            body = {
                "type": "claim",
                "task": None,
                "claim": {
                    "claim_id": claim_id,
                    "statement": f"peer rule {claim_id[:8]}",
                    "role": "user",
                    "epistemic_status": "explicit",
                    "source_ref": {"kind": "user_event"},
                    "scope": "project",
                    "valid_from": "2026-01-01T00:00:00.000Z",
                    "last_confirmed": None,
                    "supersedes": [supersedes[index]] if supersedes and index < len(supersedes) else [],
                    "facets": ["hard_constraint"],
                    "related_claim_ids": [],
                },
            }
            digest, blob = payload_blob(body)
            self.payloads[digest] = blob
            prev = self.records[-1].hash if self.records else None
            self.records.append(
                make_record(len(self.records) + 1, prev, "put", item=f"claim:{claim_id}", digest=digest)
            )

    def commit(self, mirror: Mirror) -> str:
        point = sign_checkpoint(
            self.key.sign,
            shared=self.shared,
            writer=self.key.key_id,
            public_hex=self.key.public_hex,
            principal=self.principal,
            records=self.records,
        )
        return mirror.write_stream(msgspec.json.encode(point), records_bytes(self.records), self.payloads)


def _publish(writers: list[FakeWriter], scratch: Path, remote: Path, shared: str) -> None:
    mirror = Mirror(scratch)
    mirror.ensure()
    specs = [f"{w.commit(mirror)}:refs/intentloop/{shared}/{w.key.key_id}" for w in writers]
    mirror.git(["push", "-q", "--force", str(remote), *specs])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--writers", type=int, default=100)
    parser.add_argument("--cold-writers", type=int, default=10)
    parser.add_argument("--cold-events", type=int, default=10000)
    parser.add_argument("--claims", type=int, default=1000)
    parser.add_argument("--spam", type=int, default=100_000)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="intentloop-share-bench-"))
    figures: dict[str, Any] = {}
    origin, remote = base / "origin", base / "streams.git"
    _git("init", "-q", str(origin))
    _git("-c", "user.email=o@x", "-c", "user.name=o", "commit", "-q", "--allow-empty", "-m", "i", cwd=origin)
    _git("init", "-q", "--bare", str(remote))
    roots, clones = [base / "data-a", base / "data-b"], [base / "a" / "p", base / "b" / "p"]
    for clone in clones:
        _git("clone", "-q", str(origin), str(clone))
        _git("config", "user.email", "me@example.org", cwd=clone)
    shared = _cli(roots[0], clones[0], "share", "init")["shared_id"]
    _cli(roots[1], clones[1], "share", "join", shared)
    keys = [_cli(r, c, "share", "keys") for r, c in zip(roots, clones, strict=True)]
    for (root, clone), other in zip(zip(roots, clones, strict=True), reversed(keys), strict=True):
        _cli(root, clone, "share", "remote", f"file://{remote}")
        _cli(root, clone, "share", "trust", other["public_key"], "--principal", other["principal"])
    task = _tools(roots[0], clones[0], [("intent_start_task", {"request_id": "s", "mode": "on"})])[0]["task_id"]
    _tools(roots[0], clones[0], [_claim(task, f"rule {n}") for n in range(args.claims)])
    figures["first_push_s"], _ = _timed(lambda: _cli(roots[0], clones[0], "sync"))
    _tools(roots[0], clones[0], [_claim(task, "one more rule")])
    figures["push_one_event_s"], _ = _timed(lambda: _cli(roots[0], clones[0], "sync"))
    figures["reader_first_pull_s"], _ = _timed(lambda: _cli(roots[1], clones[1], "sync"))
    # SessionStart on the reader, with the writer's claims as its own peers, and without a view
    session = uuid.uuid4().hex
    own = str(uuid.uuid4())
    _tools(
        roots[1], clones[1], [("intent_start_task", {"task_id": own, "request_id": "b", "host_session_id": session})]
    )
    payload = json.dumps({"session_id": session, "cwd": str(clones[1]), "hook_event_name": "SessionStart"})
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(roots[1])}

    def hook() -> float:
        took, done = _timed(
            lambda: subprocess.run([INTENTLOOP, "hook"], input=payload, env=env, capture_output=True, text=True)
        )
        assert '"continue": true' in done.stdout or '"continue":true' in done.stdout
        return took

    figures["session_start_with_peers_ms"] = statistics.median(hook() for _ in range(15)) * 1000
    extract = next((roots[1] / "share" / "projects").rglob("own-claims.json"))  # the one file the hook reads
    saved = extract.read_bytes()
    extract.unlink()
    figures["session_start_without_view_ms"] = statistics.median(hook() for _ in range(15)) * 1000
    extract.write_bytes(saved)
    probe = (
        "import sys, time\nfrom pathlib import Path\nfrom intentloop.service._share import snapshot_peers\n"
        "from intentloop.store import locate_project\n"
        "root = Path(sys.argv[1]); where = locate_project(sys.argv[2], root)\n"
        "snapshot_peers(root, where.root, where.project_id)\nruns = []\nfor _ in range(20):\n"
        "    t = time.perf_counter(); snapshot_peers(root, where.root, where.project_id)\n"
        "    runs.append(time.perf_counter() - t)\nprint(sorted(runs)[10] * 1000)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(roots[1]), str(clones[1])], env=env, capture_output=True)
    figures["snapshot_peers_warm_ms"] = float(done.stdout)
    # a teammate: 1,000 claims of another principal, 100 of them superseding the reader's own (disputes)
    mine = _tools(roots[1], clones[1], [("intent_get_snapshot", {"task_id": own, "include_peers": True})])[0]
    mate = FakeWriter(shared, "mate@example.org")
    mate.add(args.claims, supersedes=[c["claim_id"] for c in mine["peer_claims"][:100]])
    trust_key(
        roots[1],
        TrustedKey(
            key_id=mate.key.key_id, public_key=openssh_public_key(mate.key.public_hex), principal="mate@example.org"
        ),
    )
    _publish([mate], base / "scratch", remote, shared)
    _cli(roots[1], clones[1], "sync")
    figures["session_start_with_teammate_ms"] = statistics.median(hook() for _ in range(15)) * 1000
    done = subprocess.run([sys.executable, "-c", probe, str(roots[1]), str(clones[1])], env=env, capture_output=True)
    figures["snapshot_peers_with_teammate_warm_ms"] = float(done.stdout)
    teams = _tools(roots[1], clones[1], [("intent_get_snapshot", {"task_id": own, "include_peers": True})])[0]
    figures["teammate_disputes"] = sum(1 for d in teams["disagreements"] if d.get("kind") == "peer_dispute")
    # many writers: a cold pull of cold_writers x cold_events, then one new event from each of `writers`
    writers = [FakeWriter(shared) for _ in range(args.cold_writers)]
    for writer in writers:
        writer.add(args.cold_events)
        trust_key(
            roots[1],
            TrustedKey(
                key_id=writer.key.key_id,
                public_key=openssh_public_key(writer.key.public_hex),
                principal="peer@example.org",
            ),
        )
    _publish(writers, base / "scratch", remote, shared)
    figures["cold_pull_s"], figures["cold_pull_peak_rss_mb"] = _timed(lambda: _sync_peak(roots[1], clones[1]))
    more = [FakeWriter(shared) for _ in range(args.writers)]
    for writer in more:
        writer.add(1)
        trust_key(
            roots[1],
            TrustedKey(
                key_id=key_id_of(writer.key.public_hex),
                public_key=openssh_public_key(writer.key.public_hex),
                principal="peer@example.org",
            ),
        )
    _publish(more, base / "scratch", remote, shared)
    _cli(roots[1], clones[1], "sync")
    for writer in more:
        writer.add(1)
    _publish(more, base / "scratch", remote, shared)
    figures["incremental_pull_one_event_each_s"], report = _timed(lambda: _cli(roots[1], clones[1], "sync"))
    figures["writers_accepted"] = sum(1 for w in report["writers"] if w["status"] == "accepted")
    if args.spam:
        spammer = FakeWriter(shared)
        spammer.add(args.spam)
        trust_key(
            roots[1],
            TrustedKey(
                key_id=spammer.key.key_id,
                public_key=openssh_public_key(spammer.key.public_hex),
                principal="spam@example.org",
            ),
        )
        _publish([spammer], base / "scratch", remote, shared)
        del spammer
        figures["spam_first_sync_s"], figures["spam_first_sync_peak_rss_mb"] = _timed(
            lambda: _sync_peak(roots[1], clones[1])
        )
        figures["spam_second_sync_s"], report = _timed(lambda: _cli(roots[1], clones[1], "sync"))
        figures["spam_admitted_after_two_syncs"] = max(w.get("admitted", 0) for w in report["writers"])
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
