"""A real ``intentloop serve`` on a 40,000-event ledger: its peak memory does not hold the history, it answers the tools
from offsets, and a byte changed in the middle of the ledger afterwards is still ``CORRUPT_LEDGER``.

The bound is one only the defect crosses: the server that kept every decoded event and the fold of every claim peaked
at 216 MB on this test (40,000 claims over 20 tasks, 51 MB of ledger; measured on the 2-core development machine); the
one that keeps offsets peaks at 73 MB, most of it the interpreter and its imports. Peak is ``VmHWM`` of the server
process itself (``ru_maxrss`` would carry a large parent's figure across fork + exec).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import canonical_bytes, event_line, project_id_for, seal, sha256_hex
from intentloop.model.events import EventDraft

from _support import mcp_wire as W

EVENTS = 40_000
TASKS = 20
PEAK_BOUND_MB = 110
NOW = "2026-12-01T00:00:00.000Z"
FILLER = "callers outside the package rely on every exported name and its documented behaviour " * 3


def _seed(data_root: Path, project: Path) -> tuple[str, list[str]]:
    pid = project_id_for(os.path.realpath(project))
    tasks = [str(uuid.uuid4()) for _ in range(TASKS)]
    lines: list[bytes] = []
    prev: str | None = None

    def add(draft: EventDraft) -> None:
        nonlocal prev
        event = seal(draft, project_id=pid, prev_hash=prev)
        prev = event.event_hash
        lines.append(event_line(event))

    for i, task in enumerate(tasks):
        payload = {"mode": "on", "label": f"task {i}", "host_session_hash": None, "initial_claims": []}
        payload["request_fingerprint"] = sha256_hex(f"start-{i}")
        add(EventDraft(event_type="task_started", task_id=task, actor="user", request_id=f"start-{i}", payload=payload))
    k = 0
    while len(lines) < EVENTS:
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
        add(EventDraft(event_type="claim_added", task_id=task, actor="agent", request_id=f"s-{k}", payload=payload))
        k += 1
    directory = data_root / "projects" / pid
    directory.mkdir(parents=True, mode=0o700)
    (directory / "ledger.jsonl").write_bytes(b"".join(lines))
    os.chmod(directory / "ledger.jsonl", 0o600)
    return pid, tasks


def _peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def _call(wire: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    answer = wire.request("tools/call", {"name": tool, "arguments": arguments})
    envelope: dict[str, Any] = answer["result"]["structuredContent"]
    return envelope


@pytest.mark.slow
def test_the_server_keeps_offsets_not_the_history(tmp_path: Path) -> None:
    data_root, project = tmp_path / "data", tmp_path / "project"
    project.mkdir()
    data_root.mkdir(mode=0o700)
    pid, tasks = _seed(data_root, project)
    root = str(project)
    ledger = data_root / "projects" / pid / "ledger.jsonl"
    with W.Wire(W.server_env(data_root)) as wire:
        W.initialize(wire)
        assert len(wire.request("tools/list")["result"]["tools"]) == 15
        snap = _call(wire, "intent_get_snapshot", project_root=root, task_id=tasks[3], include_history=True)
        assert snap["ok"] and len(snap["result"]["active_claims"]) > 0
        added = _call(
            wire,
            "intent_add_inference",
            project_root=root,
            task_id=tasks[3],
            request_id="memory-1",
            statement="the user probably prefers small commits",
            source_ref={"kind": "agent_turn", "event_id": "turn-1"},
            facets=["soft_constraint"],
            confidence=0.6,
        )
        assert added["ok"], added
        status = _call(wire, "intent_status", project_root=root)
        assert status["ok"] and status["result"]["task_count"] == TASKS
        exported = _call(wire, "intent_export", project_root=root, task_id=tasks[5])
        assert exported["ok"] and len(exported["result"]["claims"]) == (EVENTS - TASKS) // TASKS
        peak = _peak_mb(wire.process.pid)
        assert peak < PEAK_BOUND_MB, f"server peak RSS {peak:.0f} MB with {EVENTS} events"

        data = bytearray(ledger.read_bytes())  # one byte in the middle, same size, in place
        middle = data.index(b"statement number", len(data) // 2)
        data[middle] = ord("S")
        with open(ledger, "r+b") as fh:
            fh.write(data)
        broken = _call(wire, "intent_get_snapshot", project_root=root, task_id=tasks[3])
        assert not broken["ok"] and broken["error"]["code"] == "CORRUPT_LEDGER", json.dumps(broken)[:500]
