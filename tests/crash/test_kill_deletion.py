"""kill -9 of ``intentloop forget claim`` at random moments of its streamed rewrite: the ledger is always the old file
or the new one, byte for byte, never a mix; the next writer cleans up and writes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from intentloop.model import EventDraft, canonical_bytes, event_line, project_id_for, rechain, sha256_hex
from intentloop.store import LockConfig, ProjectStore
from intentloop.store._checkpoint import CHECKPOINT_NAME

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]
TASKS = [str(uuid.uuid4()) for _ in range(5)]
CONFIG = LockConfig(heartbeat_s=10, stale_s=30, wait_s=10, ceiling_s=30)


def _claim(k: int) -> dict[str, object]:
    statement = f"statement {k} " + "padding of the line " * 40
    return {
        "claim_id": str(uuid.uuid4()),
        "statement": statement,
        "role": "user",
        "epistemic_status": "explicit",
        "source_ref": {"kind": "user_event", "sha256": sha256_hex(statement)},
        "scope": "task",
        "valid_from": "2026-12-01T00:00:00.000Z",
        "last_confirmed": "2026-12-01T00:00:00.000Z",
        "supersedes": [],
        "facets": ["hard_constraint"],
        "related_claim_ids": [],
    }


@pytest.mark.slow
def test_kill_9_during_forget_leaves_the_old_or_the_new_ledger(tmp_path: Path) -> None:
    rng = random.Random(20261202)
    root = tmp_path / "project"
    root.mkdir()
    data_root = tmp_path / "data"
    pid = project_id_for(os.path.realpath(root))
    store = ProjectStore(data_root, pid, CONFIG)
    drafts = [
        EventDraft(event_type="task_started", task_id=t, actor="user", request_id=f"s-{t}", payload={"mode": "on"})
        for t in TASKS
    ]
    claims = [_claim(k) for k in range(6000)]
    drafts += [
        EventDraft(
            event_type="claim_added",
            task_id=TASKS[k % 5],
            actor="user",
            request_id=f"c-{k}",
            payload={"claim": c, "request_fingerprint": sha256_hex(canonical_bytes(c))},
        )
        for k, c in enumerate(claims)
    ]
    with store.locked() as ledger:
        ledger.append(drafts)
    events = list(store.read().events)
    old = store.ledger_path.read_bytes()
    doomed = claims[1000]["claim_id"]
    new = b"".join(
        event_line(e) for e in rechain([e for e in events if doomed not in event_line(e).decode()], project_id=pid)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENT_LOOP_")} | {"INTENT_LOOP_CATALOG": "off"}
    env["INTENT_LOOP_DATA_DIR"] = str(data_root)
    command = [*INTENTLOOP, "forget", "claim", str(doomed), "--project-id", pid, "--yes", "--json"]
    kills = 0
    for attempt in range(12):
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if attempt % 3 == 2:  # a kill at any moment (before the lock, while reading, after the rename)
            time.sleep(rng.uniform(0.05, 2.0))
        else:  # a kill while the new ledger is being written: once its temp file exists
            deadline = time.monotonic() + 60
            while process.poll() is None and time.monotonic() < deadline:
                if any(n.startswith("ledger-rewrite-") for n in os.listdir(store.project_dir)):
                    break
                time.sleep(0.001)
            time.sleep(rng.uniform(0, 0.05))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
        now = store.ledger_path.read_bytes()
        assert now in (old, new)  # never a mix
        if now == new and attempt >= 6:
            break
        if now == new:  # deleted before the kill: start again from the old ledger
            with store.locked() as ledger:
                ledger.rewrite(events)
    else:
        process = subprocess.run(command, env=env, capture_output=True, timeout=300)
        assert process.returncode == 0, process.stderr
    assert kills >= 1
    assert store.ledger_path.read_bytes() == new
    with store.locked() as ledger:  # the next writer reclaims the lock and removes the killed run's temp file
        ledger.append(
            [EventDraft(event_type="mode_set", task_id=TASKS[0], actor="user", request_id="after", payload={})]
        )
    names = sorted(n for n in os.listdir(store.project_dir) if not n.startswith("index-"))
    assert names == ["deleted-requests.json", "head.sig", CHECKPOINT_NAME, "ledger.jsonl"]
    assert len(store.read().events) == len(events)  # one claim gone, one mode_set added
