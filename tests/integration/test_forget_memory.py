"""``intentloop forget claim`` as a real process on ledgers of N and 4N events: its peak memory does not grow with the
ledger, and the ledger, its checkpoint and its task index afterwards describe the file without the claim.

The bound is one only the defect crosses: a deletion that held every decoded event (and the new file's bytes) peaked
at 8 KB an event (840–850 MB at 100,000 events, docs/BENCHMARK.md), so 3N more events would add ~100 MB here; the
streamed deletion holds a chunk and one task's fold, the same at both sizes. Peak is the child's ``ru_maxrss``, taken
by a small wrapper process (a large parent's figure would be carried across fork + exec). Memory, not time: robust on
a loaded machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from intentloop.model import canonical_bytes, event_line, project_id_for, seal, sha256_hex
from intentloop.model.events import EventDraft
from intentloop.store import ProjectStore, task_events
from intentloop.store._checkpoint import read_checkpoint

N = 3_000
TASKS = 10
GROWTH_BOUND_MB = 30  # 3N more events held decoded: ~100 MB; streamed: a few MB of noise
NOW = "2026-12-01T00:00:00.000Z"
FILLER = "callers outside the package rely on every exported name and its documented behaviour " * 6
_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]
# Runs the command given as arguments and prints the peak RSS (KiB) of that child alone.
_WRAPPER = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
    "sys.stdout.buffer.write(done.stdout)\n"
    "sys.stderr.buffer.write(done.stderr)\n"
    "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _seed(data_root: Path, project: Path, events: int) -> tuple[str, str, str]:
    """A valid ledger of ``events`` claims over ``TASKS`` tasks; returns (project id, a claim id from the middle, its
    task)."""
    pid = project_id_for(os.path.realpath(project))
    tasks = [str(uuid.uuid4()) for _ in range(TASKS)]
    lines: list[bytes] = []
    prev: str | None = None
    middle: tuple[str, str] = ("", "")
    for i, task in enumerate(tasks):
        payload = {"mode": "on", "label": f"task {i}", "host_session_hash": None, "initial_claims": []}
        payload["request_fingerprint"] = sha256_hex(f"start-{i}")
        event = seal(
            EventDraft(event_type="task_started", task_id=task, actor="user", request_id=f"start-{i}", payload=payload),
            project_id=pid,
            prev_hash=prev,
        )
        prev = event.event_hash
        lines.append(event_line(event))
    for k in range(events - TASKS):
        statement = f"statement number {k} about keeping the public API stable; {FILLER}"
        claim = {
            "claim_id": str(uuid.uuid4()),
            "statement": statement,
            "role": "agent",
            "epistemic_status": "inferred",
            "source_ref": {"kind": "agent_turn", "sha256": sha256_hex(statement)},
            "scope": "task",
            "valid_from": NOW,
            "last_confirmed": None,
            "supersedes": [],
            "facets": ["outcome"],
            "related_claim_ids": [],
            "confidence": 0.5,
        }
        payload = {"claim": claim, "request_fingerprint": sha256_hex(canonical_bytes(claim))}
        task = tasks[k % TASKS]
        draft = EventDraft(event_type="claim_added", task_id=task, actor="agent", request_id=f"s-{k}", payload=payload)
        event = seal(draft, project_id=pid, prev_hash=prev)
        prev = event.event_hash
        lines.append(event_line(event))
        if k == (events - TASKS) // 2:
            middle = (claim["claim_id"], task)
    directory = data_root / "projects" / pid
    directory.mkdir(parents=True, mode=0o700)
    (directory / "ledger.jsonl").write_bytes(b"".join(lines))
    os.chmod(directory / "ledger.jsonl", 0o600)
    return pid, *middle


def _forget(data_root: Path, pid: str, claim: str) -> tuple[float, dict[str, object]]:
    """Run ``intentloop forget claim`` in a wrapper; (its peak RSS in MB, its JSON answer)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENT_LOOP_")} | {"INTENT_LOOP_CATALOG": "off"}
    env["INTENT_LOOP_DATA_DIR"] = str(data_root)
    command = [*INTENTLOOP, "forget", "claim", claim, "--project-id", pid, "--yes", "--json"]
    done = subprocess.run([sys.executable, "-c", _WRAPPER, *command], capture_output=True, env=env, timeout=600)
    answer, last = done.stdout.rstrip(b"\n").rsplit(b"\n", 1)
    code, peak_kib = last.split()
    assert int(code) == 0, done.stderr.decode()
    return int(peak_kib) / 1024, json.loads(answer)


def test_forget_claim_memory_does_not_grow_with_the_ledger(tmp_path: Path) -> None:
    peaks = []
    for size in (N, 4 * N):
        data_root, project = tmp_path / f"data-{size}", tmp_path / f"project-{size}"
        data_root.mkdir(mode=0o700)
        project.mkdir()
        pid, claim, task = _seed(data_root, project, size)
        peak, answer = _forget(data_root, pid, claim)
        peaks.append(peak)
        assert (answer["action"], answer["claim_id"], answer["persistent_files_scanned"]) == (
            "deleted",
            claim,
            2,
        )  # the ledger and the tombstones
        store = ProjectStore(data_root, pid)
        ledger = store.ledger_path.read_bytes()
        assert claim.encode() not in ledger
        assert len(store.read().events) == size - 1
        # The checkpoint and the task index describe the new file: a cold reader gets the task through them.
        checkpoint = read_checkpoint(store.paths)
        assert checkpoint is not None and checkpoint.matches(store.ledger_path.stat())
        assert checkpoint.covering_index() is not None
        indexed = store.indexed()
        assert indexed is not None
        try:
            events = indexed.task_events(task)
        finally:
            indexed.close()
        assert events is not None and events == task_events(store.paths, task) and len(events) == size // TASKS - 1
    assert peaks[1] - peaks[0] < GROWTH_BOUND_MB, peaks
