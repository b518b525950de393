"""The trio stdio transport over real pipes (no subprocess): framing, malformed lines, EOF, a closed stdout."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from intentloop.mcp import stdio
from intentloop.mcp.server import McpServer

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


class Wire:
    """The client's ends of the two pipes."""

    def __init__(self, to_server: trio.lowlevel.FdStream, from_server: trio.lowlevel.FdStream) -> None:
        self.to_server = to_server
        self.from_server = from_server
        self.pending = bytearray()
        self.received: list[bytes] = []

    async def send(self, data: bytes) -> None:
        await self.to_server.send_all(data)

    async def message(self) -> dict[str, Any]:
        with trio.fail_after(5):
            while b"\n" not in self.pending:
                chunk = await self.from_server.receive_some(65536)
                assert chunk, "server closed stdout"
                self.pending += chunk
        line, _, rest = bytes(self.pending).partition(b"\n")
        self.pending = bytearray(rest)
        self.received.append(line)
        return dict(json.loads(line))


@asynccontextmanager
async def served(server: McpServer) -> AsyncIterator[tuple[Wire, list[Any]]]:
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    outcome: list[Any] = []

    async def run() -> None:
        outcome.append(await stdio.serve_fds(server, stdio.WireFds(read_fd=in_read, write_fd=out_write)))

    async with (
        trio.lowlevel.FdStream(in_write) as to_server,
        trio.lowlevel.FdStream(out_read) as from_server,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(run)
        yield Wire(to_server, from_server), outcome


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def test_messages_split_across_chunks_and_crlf_are_framed(server: McpServer) -> None:
    async with served(server) as (wire, outcome):
        data = _line(INIT)[:-1] + b"\r\n"
        for index in range(0, len(data), 7):
            await wire.send(data[index : index + 7])
            await trio.sleep(0)
        answer = await wire.message()
        assert answer["id"] == 1 and answer["result"]["capabilities"]["experimental"] == {
            "codex/sandbox-state-meta": {}
        }
        await wire.send(b"\n   \n" + _line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        await wire.send(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        assert len((await wire.message())["result"]["tools"]) == 15
        await wire.to_server.aclose()
        with trio.fail_after(2):
            while not outcome:
                await trio.sleep(0.01)
    assert outcome[0] == "eof"


async def test_a_malformed_line_is_answered_and_serving_goes_on(
    server: McpServer, caplog: pytest.LogCaptureFixture
) -> None:
    async with served(server) as (wire, _):
        await wire.send(b"{not json\n" + b'{"jsonrpc": "2.0", "id": "x", "method": 5}\n' + _line(INIT))
        parse_error = await wire.message()
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
        invalid = await wire.message()
        assert invalid["id"] == "x" and invalid["error"]["code"] == -32600
        assert (await wire.message())["id"] == 1  # positive control: serving went on
        await wire.to_server.aclose()
    assert "not json" not in caplog.text  # the content itself is never logged


async def test_an_oversized_message_is_skipped(
    server: McpServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(stdio, "MAX_MESSAGE_BYTES", 4096)
    async with served(server) as (wire, _):
        huge = _line({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"_meta": {"pad": "x" * 20000}}})
        await wire.send(huge + _line(INIT))
        too_long = await wire.message()
        assert too_long["id"] is None and too_long["error"]["code"] == -32700
        answer = await wire.message()
        assert answer["id"] == 1  # id 9 was never answered
        await wire.to_server.aclose()
    assert "longer than 4096 bytes" in caplog.text


async def test_a_last_line_without_newline_is_still_served(server: McpServer) -> None:
    async with served(server) as (wire, outcome):
        await wire.send(_line(INIT)[:-1])
        await wire.to_server.aclose()
        assert (await wire.message())["id"] == 1
        with trio.fail_after(2):
            while not outcome:
                await trio.sleep(0.01)


async def test_a_closed_stdout_stops_the_server(server: McpServer) -> None:
    async with served(server) as (wire, outcome):
        await wire.from_server.aclose()
        await wire.send(_line(INIT))
        with trio.fail_after(2):
            while not outcome:
                await trio.sleep(0.01)
        await wire.to_server.aclose()
    assert outcome[0] == "stdout closed"
