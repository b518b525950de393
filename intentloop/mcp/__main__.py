"""``python -m intentloop.mcp``: the stdio MCP server, same as ``intentloop serve``."""

from intentloop.mcp import serve_stdio

raise SystemExit(serve_stdio())
