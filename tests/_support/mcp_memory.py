"""In-memory connections to :class:`~intentloop.mcp.server.McpServer` over its real line framing.

Used by the unit tests of the MCP adapter (``tests/unit/mcp``). Two ways in: the official SDK client through
:class:`MemoryTransport`, and raw JSON-RPC dicts through :class:`RawSession` for payloads the SDK refuses to send;
:func:`fake_canonicalize` stands in for the store's canonicalizer so no test needs storage.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import trio
import trio.testing
from mcp.shared.message import SessionMessage

from intentloop.errors import IntentLoopError
from intentloop.mcp.server import McpServer
from intentloop.mcp.stdio import serve_streams


def fake_canonicalize(raw: str) -> str:
    """What the store's canonicalizer promises: absolute, existing directory, realpath; else PROJECT_ROOT_INVALID."""
    if not os.path.isabs(raw) or not os.path.isdir(raw):
        raise IntentLoopError("project root must be an absolute existing directory", code="PROJECT_ROOT_INVALID")
    return os.path.realpath(raw)


@asynccontextmanager
async def wire(server: McpServer) -> AsyncIterator[tuple[trio.abc.SendStream, trio.abc.ReceiveStream]]:
    """Serve one connection in memory; yields the client's ends (bytes to the server, bytes from it)."""
    to_server_send, to_server_receive = trio.testing.memory_stream_one_way_pair()
    from_server_send, from_server_receive = trio.testing.memory_stream_one_way_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: serve_streams(server, to_server_receive, from_server_send, watch_signals=False))
        yield to_server_send, from_server_receive
        await to_server_send.aclose()


class _Lines:
    """Split a byte stream into lines."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.pending = b""

    async def next(self) -> bytes | None:
        while b"\n" not in self.pending:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line


class MemoryTransport:
    """An ``mcp.Client`` transport to :class:`McpServer` in this process: the SDK's messages cross as JSON lines."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self._exit: Any = None

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](math.inf)
        async with wire(self.server) as (to_server, from_server), trio.open_nursery() as nursery:

            async def outbound() -> None:
                async with write_receive:
                    async for message in write_receive:
                        text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await to_server.send_all(text.encode() + b"\n")

            async def inbound() -> None:
                lines = _Lines(from_server)
                async with read_send:
                    while (line := await lines.next()) is not None:
                        await read_send.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line)))

            nursery.start_soon(outbound)
            nursery.start_soon(inbound)
            yield read_receive, write_send
            nursery.cancel_scope.cancel()

    async def __aenter__(self) -> Any:
        self._exit = self._connect()
        return await self._exit.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._exit.__aexit__(*exc)


def connect(server: McpServer) -> MemoryTransport:
    """What to hand ``mcp.Client`` to reach ``server`` in memory."""
    return MemoryTransport(server)


class RawSession:
    """A connection driven with raw JSON-RPC dicts, for payloads the SDK client refuses to send."""

    def __init__(self, send: trio.abc.SendStream, receive: trio.abc.ReceiveStream) -> None:
        self._send = send
        self.lines = _Lines(receive)
        self._next_id = 0

    async def send(self, message: Any) -> None:
        await self._send.send_all(json.dumps(message).encode() + b"\n")

    async def read(self) -> dict[str, Any]:
        with trio.fail_after(5):
            line = await self.lines.next()
        assert line is not None, "the server closed its output"
        return dict(json.loads(line))

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            answer = await self.read()
            if answer.get("id") == self._next_id:
                return answer

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)


@asynccontextmanager
async def raw_session(server: McpServer, *, initialize: bool = True) -> AsyncIterator[RawSession]:
    """Run ``server`` in memory and yield a :class:`RawSession` (initialized in the 2025-06-18 era by default)."""
    async with wire(server) as (to_server, from_server):
        session = RawSession(to_server, from_server)
        if initialize:
            init = await session.request(
                "initialize",
                {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
            )
            assert "result" in init, init
            await session.notify("notifications/initialized")
        yield session
