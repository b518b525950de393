"""Fixtures for the MCP adapter's unit tests: a recording fake service, a canonicalizer and in-memory connections."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
import trio

from intentloop.mcp.server import McpServer, build_server

from _support.mcp_memory import MemoryTransport, RawSession, fake_canonicalize, raw_session

TASK_ID = "6f1c1a51-8e7b-4b8f-9a3e-2f3c1d2e4b5a"


class FakeService:
    """Records every dispatch; answers with a canned result or raises what it was told to."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.result: Any = {"task_id": TASK_ID, "answer": 42}
        self.raises: BaseException | None = None

    async def run(self, tool: str, args: Any, *, project_root: str, project_id: str) -> Any:
        call = {"tool": tool, "arguments": args, "project_root": project_root, "project_id": project_id}
        self.calls.append(call)
        await trio.lowlevel.checkpoint()
        if self.raises is not None:
            raise self.raises
        return self.result


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
def make_server(service: FakeService) -> Callable[..., McpServer]:
    def make(**options: Any) -> McpServer:
        options.setdefault("canonicalize", fake_canonicalize)
        return build_server(service, **options)

    return make


@pytest.fixture
def server(make_server: Callable[..., McpServer]) -> McpServer:
    return make_server()


@pytest.fixture
def raw() -> Callable[..., AbstractAsyncContextManager[RawSession]]:
    """``raw(server)``: an async context manager yielding an initialized raw JSON-RPC session."""
    return raw_session


@pytest.fixture
def connect() -> Callable[[McpServer], MemoryTransport]:
    """``connect(server)``: the transport to hand ``mcp.Client`` to reach ``server`` in memory."""
    return MemoryTransport
