"""The MCP stdio adapter of intentloop: 15 strict tools, the envelope, project-root resolution, the skill resource.

This face imports neither trio nor the service: they load only when a server is built or served, so importing
``intentloop.mcp`` (for :data:`TOOL_NAMES`, say) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from intentloop.mcp.catalog import TOOL_NAMES

if TYPE_CHECKING:
    from intentloop.mcp.server import McpServer, ToolService


def serve_stdio() -> int:
    """Run the MCP server on stdin/stdout until EOF, SIGINT or SIGTERM; returns the exit code (0).

    See :func:`intentloop.mcp.handshake.serve_stdio`.
    """
    from intentloop.mcp.handshake import serve_stdio as _serve_stdio

    return _serve_stdio()


def build_server(service: ToolService | None = None, **options: Any) -> McpServer:
    """The intent-loop MCP server over ``service``; see :func:`intentloop.mcp.server.build_server`."""
    from intentloop.mcp.server import build_server as _build_server

    return _build_server(service, **options)


__all__ = ["TOOL_NAMES", "build_server", "serve_stdio"]
