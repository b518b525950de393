"""``intentloop serve``: the MCP stdio server that hosts start (JSON-RPC on stdin/stdout)."""

from __future__ import annotations


def serve() -> int:
    """Run the intent-loop MCP server over stdio until the host closes stdin (or sends SIGINT/SIGTERM).

    Hosts start this command themselves (see `intentloop install`); it prints nothing else on stdout.
    """
    from intentloop.mcp import serve_stdio

    return serve_stdio()


__all__ = ["serve"]
