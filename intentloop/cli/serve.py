"""``intentloop serve``: the MCP stdio server that hosts start (JSON-RPC on stdin/stdout)."""

from __future__ import annotations

import os
import sys


def serve() -> int:
    """Run the intent-loop MCP server over stdio until the host closes stdin (or sends SIGINT/SIGTERM).

    Hosts start this command themselves (see `intentloop install`); it prints nothing else on stdout. Started by hand
    in a terminal, it says so on stderr first.
    """
    from intentloop._startup import import_msgspec_alone

    import_msgspec_alone()
    from intentloop.mcp import serve_stdio

    if _is_terminal(sys.stdin) and _is_terminal(sys.stderr):
        sys.stderr.write(
            "intentloop serve speaks MCP (JSON-RPC) on stdin/stdout: hosts start it themselves "
            "(see `intentloop install`).\nStop it with Ctrl-C, or Ctrl-D to close stdin.\n"
        )
        sys.stderr.flush()
    return serve_stdio()


def _is_terminal(stream: object) -> bool:
    try:
        return os.isatty(stream.fileno())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


__all__ = ["serve"]
