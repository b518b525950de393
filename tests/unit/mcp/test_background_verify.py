"""The server over the real service while a project's ledger is being verified (held at a gate): the handshake, the
tool list and ping are answered meanwhile, and the held call answers once the verification is done."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import trio

from intentloop.mcp.server import build_server
from intentloop.service.intent_service import IntentService
from intentloop.store import _lines, _project


async def test_requests_are_answered_while_a_ledger_is_verified(
    tmp_path: Path, project: Path, raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_root = tmp_path / "data"
    service = IntentService(lambda: data_root)
    server = build_server(service)
    root = str(project.resolve())
    entered, gate = threading.Event(), threading.Event()
    real = _lines.stream_verify

    def held(*args: Any) -> Any:
        if gate.is_set():
            return real(*args)
        entered.set()
        if not gate.wait(60):
            raise AssertionError("the gate was never opened: the event loop was blocked")
        return real(*args)

    async with raw(server) as session:
        started = await session.request(
            "tools/call", {"name": "intent_start_task", "arguments": {"project_root": root, "request_id": "r"}}
        )
        task = started["result"]["structuredContent"]["result"]["task_id"]
        for store in list(service._engine._stores.values()):
            _project._cache.drop(str(store.ledger_path))  # the next call must verify the ledger again
        monkeypatch.setattr(_project, "stream_verify", held)
        await session.send(
            {
                "jsonrpc": "2.0",
                "id": "held",
                "method": "tools/call",
                "params": {"name": "intent_get_snapshot", "arguments": {"project_root": root, "task_id": task}},
            }
        )
        await trio.to_thread.run_sync(entered.wait, 60)
        assert entered.is_set()
        await session.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
        listed = await session.read()  # the next answer: the list, while the verification is still held
        assert listed["id"] == "list" and len(listed["result"]["tools"]) == 15
        await session.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        assert await session.read() == {"jsonrpc": "2.0", "id": "ping", "result": {}}
        assert not gate.is_set()
        gate.set()
        answer = await session.read()
        assert answer["id"] == "held" and answer["result"]["structuredContent"]["ok"] is True
