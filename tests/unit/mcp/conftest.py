"""Fixtures for the MCP adapter's unit tests: a recording fake service, a canonicalizer and raw JSON-RPC access."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import trio
from mcp.shared.message import SessionMessage

from intentloop.errors import IntentLoopError
from intentloop.mcp.server import IntentLoopServer, build_server

TASK_ID = "6f1c1a51-8e7b-4b8f-9a3e-2f3c1d2e4b5a"


def fake_canonicalize(raw: str) -> str:
    """What the store's canonicalizer promises: absolute, existing directory, realpath; else PROJECT_ROOT_INVALID."""
    if not os.path.isabs(raw) or not os.path.isdir(raw):
        raise IntentLoopError("project root must be an absolute existing directory", code="PROJECT_ROOT_INVALID")
    return os.path.realpath(raw)


class FakeService:
    """Records every dispatch; answers with a canned result or raises what it was told to."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.result: Any = {"task_id": TASK_ID, "answer": 42}
        self.raises: BaseException | None = None

    async def dispatch(self, tool: str, arguments: dict[str, Any], *, project_root: str, project_id: str) -> Any:
        call = {"tool": tool, "arguments": arguments, "project_root": project_root, "project_id": project_id}
        self.calls.append(call)
        await trio.lowlevel.checkpoint()
        if self.raises is not None:
            raise self.raises
        return self.result


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
def make_server(service: FakeService) -> Callable[..., IntentLoopServer]:
    def make(**options: Any) -> IntentLoopServer:
        options.setdefault("canonicalize", fake_canonicalize)
        return build_server(service, **options)

    return make


@pytest.fixture
def server(make_server: Callable[..., IntentLoopServer]) -> IntentLoopServer:
    return make_server()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def other_project(tmp_path: Path) -> Path:
    root = tmp_path / "other"
    root.mkdir()
    return root


class RawSession:
    """A handshake-era connection driven with raw JSON-RPC dicts, for payloads the SDK client refuses to send."""

    def __init__(self, send: Any, receive: Any) -> None:
        self._send = send
        self._receive = receive
        self._next_id = 0

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self._send.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(message)))
        with trio.fail_after(5):
            while True:
                item = await self._receive.receive()
                answer = item.message.model_dump(by_alias=True, mode="json", exclude_none=True)
                if answer.get("id") == self._next_id:
                    return answer

    async def notify(self, method: str) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        await self._send.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(message)))


@asynccontextmanager
async def raw_session(server: IntentLoopServer) -> AsyncIterator[RawSession]:
    """Run ``server`` over memory streams and yield an initialized :class:`RawSession`."""
    to_server_send, to_server_receive = anyio.create_memory_object_stream[Any](16)
    from_server_send, from_server_receive = anyio.create_memory_object_stream[Any](16)
    async with to_server_send, from_server_receive, trio.open_nursery() as nursery:
        nursery.start_soon(server.run, to_server_receive, from_server_send, server.create_initialization_options())
        session = RawSession(to_server_send, from_server_receive)
        init = await session.request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        assert "result" in init, init
        await session.notify("notifications/initialized")
        yield session
        await to_server_send.aclose()


@pytest.fixture
def raw() -> Callable[[IntentLoopServer], Any]:
    return raw_session
