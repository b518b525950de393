"""One tool call from synchronous code: a fresh :class:`IntentService` under ``trio.run``.

For the prompt hook's ``/intent`` commands (``intentloop.service.hookcmds``), which must follow exactly the tools'
rules and write path but run in a short-lived synchronous process. Kept in a module of its own so that the hook path
imports trio only when a prompt really is a command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from intentloop.service.intent_service import IntentService


def call_tool_blocking(
    tool: str,
    arguments: dict[str, Any],
    *,
    data_root: Path,
    project_root: str,
    project_id: str,
    lock_deadline: float | None,
) -> Any:
    """Decode ``arguments`` strictly and run ``tool``, exactly as the MCP server would; returns its result.

    Args:
        lock_deadline: a ``time.monotonic()`` value after which no ledger-lock wait continues.

    Raises:
        IntentLoopError: every code the tool defines (``LOCK_TIMEOUT`` at the deadline).
    """
    service = IntentService(lambda: data_root, lock_deadline=lock_deadline, resident=False)

    async def main() -> Any:
        return await service.dispatch(tool, arguments, project_root=project_root, project_id=project_id)

    return trio.run(main)


__all__ = ["call_tool_blocking"]
