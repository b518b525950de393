"""The demo's MCP client: the official ``mcp`` client over stdio, talking to a real ``intentloop serve`` process.

This is the only module of ``cli/`` that imports ``mcp`` (import-linter allows exactly this edge); importing it costs
about half a second, so ``cli/demo.py`` imports it only when the demo runs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import TextContent

from intentloop.errors import IntentLoopError


@dataclass(frozen=True)
class ServerFacts:
    """What the client learned while connecting."""

    name: str
    version: str
    protocol_version: str
    tools: tuple[str, ...]


class DemoSession:
    """One connected MCP client session; :meth:`call` returns the intentloop envelope of a tool call."""

    def __init__(self, client: Client, facts: ServerFacts) -> None:
        self._client = client
        self.facts = facts

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool`` and return its envelope (``{"ok": ..., "result"|"error": ...}``).

        Raises:
            IntentLoopError: the answer carried no envelope (the server broke the contract).
        """
        answer = await self._client.call_tool(tool, arguments)
        envelope = answer.structured_content
        if not isinstance(envelope, dict):
            texts = [block.text for block in answer.content if isinstance(block, TextContent)]
            try:
                envelope = json.loads(texts[0]) if texts else None
            except ValueError:
                envelope = None
        if not isinstance(envelope, dict) or "ok" not in envelope:
            raise IntentLoopError(f"{tool} answered without an intentloop envelope")
        return envelope


@asynccontextmanager
async def open_demo_session(command: Sequence[str], env: dict[str, str]) -> AsyncIterator[DemoSession]:
    """Start ``command`` (``intentloop serve``) as a subprocess and connect the official MCP client to it.

    Args:
        command: the server's argv; ``command[0]`` is the executable.
        env: extra environment for the server (the demo's ``INTENT_LOOP_DATA_DIR``).

    Raises:
        IntentLoopError: the server could not be started or did not list its tools.
    """
    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env)
    async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
        listed = await client.list_tools()
        info = client.server_info
        facts = ServerFacts(
            name=info.name if info else "?",
            version=info.version if info else "?",
            protocol_version=client.protocol_version,
            tools=tuple(sorted(tool.name for tool in listed.tools)),
        )
        yield DemoSession(client, facts)


__all__ = ["DemoSession", "ServerFacts", "open_demo_session"]
