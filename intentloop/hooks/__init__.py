"""``intentloop hook``: the host-facing hook handlers (Codex, Claude Code, Gemini CLI).

Fail-open by construction: every payload, every failure and every timeout ends in exactly one JSON line on stdout
and exit status 0 before the hook's own deadline. The package imports only the standard library, msgspec and
intentloop's light modules (never trio, mcp, typer, rich or pydantic), so the process starts in tens of milliseconds.
"""

from intentloop.hooks._run import run_hook

__all__ = ["run_hook"]
