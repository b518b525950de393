"""The service across real OS processes: racing retries, racing request-id reuse, private state held by another process.

Each worker is a separate Python process running its own ``IntentService`` over the same data root; workers wait for
a shared start instant so their calls really overlap at the ledger lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from intentloop.errors import IntentLoopError
from intentloop.model import project_id_for
from intentloop.service.intent_service import IntentService

WORKER = textwrap.dedent(
    """
    import json, sys, time
    import trio
    from intentloop.errors import IntentLoopError
    from intentloop.service.intent_service import IntentService

    spec = json.loads(sys.argv[1])
    service = IntentService(lambda: spec["data_root"])

    async def main():
        out = []
        for call in spec["calls"]:
            if "at" in call:
                await trio.sleep(max(0.0, call["at"] - time.time()))
            try:
                result = await service.dispatch(call["tool"], call["arguments"], project_root=spec["project_root"],
                                                project_id=spec["project_id"])
                out.append({"ok": True, "result": result})
            except IntentLoopError as exc:
                out.append({"ok": False, "code": exc.code})
        print(json.dumps(out), flush=True)
        if spec.get("hold"):
            sys.stdin.readline()

    trio.run(main)
    """
)


class Project:
    def __init__(self, tmp_path: Path) -> None:
        self.data_root = tmp_path / "data"
        root = tmp_path / "project"
        root.mkdir()
        self.root = str(root.resolve())
        self.id = project_id_for(self.root)
        self.service = IntentService(lambda: self.data_root)

    def spec(self, calls: list[dict[str, Any]], *, hold: bool = False) -> str:
        return json.dumps(
            {
                "data_root": str(self.data_root),
                "project_root": self.root,
                "project_id": self.id,
                "calls": calls,
                "hold": hold,
            }
        )

    def spawn(self, calls: list[dict[str, Any]], *, hold: bool = False) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        return subprocess.Popen(
            [sys.executable, "-c", WORKER, self.spec(calls, hold=hold)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    async def call(self, tool: str, **arguments: Any) -> Any:
        return await self.service.dispatch(tool, arguments, project_root=self.root, project_id=self.id)

    def ledger_events(self) -> list[dict[str, Any]]:
        path = self.data_root / "projects" / self.id / "ledger.jsonl"
        return [json.loads(line) for line in path.read_bytes().splitlines()]


def _results(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    results: list[dict[str, Any]] = json.loads(out)
    return results


def _inference(task: str, request_id: str, statement: str, at: float) -> dict[str, Any]:
    return {
        "at": at,
        "tool": "intent_add_inference",
        "arguments": {
            "task_id": task,
            "request_id": request_id,
            "statement": statement,
            "source_ref": {"kind": "agent_turn", "event_id": "turn"},
            "facets": ["outcome"],
            "confidence": 0.5,
        },
    }


async def test_identical_retries_racing_from_processes_append_once(tmp_path: Path) -> None:
    project = Project(tmp_path)
    task = (await project.call("intent_start_task", request_id="start"))["task_id"]
    at = time.time() + 2.0
    rounds = [f"retry-{i}" for i in range(4)]
    calls = [_inference(task, rid, f"statement {rid}", at + n * 0.05) for n, rid in enumerate(rounds)]
    workers = [project.spawn(calls) for _ in range(3)]
    outcomes = [_results(w) for w in workers]
    for index, request_id in enumerate(rounds):
        answers = [outcome[index] for outcome in outcomes]
        assert all(a["ok"] for a in answers), answers
        assert len({a["result"]["claim_id"] for a in answers}) == 1
        assert sum(1 for e in project.ledger_events() if e["request_id"] == request_id) == 1
    snap = await project.call("intent_get_snapshot", task_id=task)
    assert len(snap["active_claims"]) == len(rounds)


async def test_request_id_reuse_racing_from_processes_has_one_winner(tmp_path: Path) -> None:
    project = Project(tmp_path)
    task = (await project.call("intent_start_task", request_id="start"))["task_id"]
    at = time.time() + 2.0
    rounds = [f"contested-{i}" for i in range(4)]
    workers = [
        project.spawn([_inference(task, rid, f"worker {w} says {rid}", at + n * 0.05) for n, rid in enumerate(rounds)])
        for w in range(3)
    ]
    outcomes = [_results(w) for w in workers]
    for index, request_id in enumerate(rounds):
        answers = [outcome[index] for outcome in outcomes]
        winners = [a for a in answers if a["ok"]]
        assert len(winners) == 1, answers
        assert sorted(a.get("code") for a in answers if not a["ok"]) == ["REQUEST_ID_REUSED", "REQUEST_ID_REUSED"]
        stored = [e for e in project.ledger_events() if e["request_id"] == request_id]
        assert len(stored) == 1
        assert stored[0]["payload"]["claim"]["claim_id"] == winners[0]["result"]["claim_id"]


async def test_private_state_held_by_another_process_never_touches_disk(tmp_path: Path) -> None:
    project = Project(tmp_path)
    durable = (await project.call("intent_start_task", request_id="d", initial_explicit=["durable words"]))["task_id"]
    start = {
        "tool": "intent_start_task",
        "arguments": {
            "request_id": "p",
            "mode": "private",
            "host_session_id": "sess-remote",
            "initial_explicit": ["remote secret words OTTER"],
        },
    }
    holder = project.spawn([start], hold=True)
    assert holder.stdout is not None
    line = await trio.to_thread.run_sync(holder.stdout.readline)
    (answer,) = json.loads(line)
    assert answer["ok"], answer
    task = answer["result"]["task_id"]
    try:
        everything = b"".join(p.read_bytes() for p in project.data_root.rglob("*") if p.is_file())
        assert b"OTTER" not in everything
        assert b"durable words" in everything  # positive control
        status = await project.call("intent_status", task_id=task)
        assert status["semantic_state_available"] is False
        for tool in ("intent_get_snapshot", "intent_export"):
            with pytest.raises(IntentLoopError) as info:
                await project.call(tool, task_id=task)
            assert info.value.code == "PRIVATE_SESSION_ACTIVE"
        assert (await project.call("intent_get_snapshot", task_id=durable))["active_claims"]
    finally:
        _out, _err = holder.communicate("\n", timeout=30)
    assert holder.returncode == 0
    everything = b"".join(p.read_bytes() for p in project.data_root.rglob("*") if p.is_file())
    assert b"OTTER" not in everything
