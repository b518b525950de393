"""Run one service operation for the CLI: the same :class:`~intentloop.service.IntentService` the MCP server uses,
under ``trio.run``, so a CLI read or deletion is exactly the tool's (same checks, same lock, same write path).

The service is not resident: a process that answers one call reads a task through the store's task query instead of
verifying the whole ledger up front as a long-running server warms (``intentloop show`` at 100,000 events: see
docs/BENCHMARK.md, "CLI reads")."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from intentloop.cli._target import Target


def call_tool(target: Target, tool: str, arguments: dict[str, Any], *, reads_off: bool = False) -> Any:
    """Dispatch ``tool`` with ``arguments`` for ``target``'s project and return its result.

    The project root is never stored; a project named by id alone passes an empty root (the service does not read it).
    ``reads_off``: a read answers for a task that is off (``show`` and ``export``: a person's own view of the memory).

    Raises:
        IntentLoopError: every code the tool defines.
    """
    import trio

    from intentloop.service import IntentService

    service = IntentService(lambda: target.data_root, resident=False, reads_off=reads_off)
    run = partial(
        service.dispatch, tool, arguments, project_root=target.project_root or "", project_id=target.project_id
    )
    return trio.run(run)


__all__ = ["call_tool"]
