"""Run one service operation for the CLI: the tool's own row and function, so a CLI read or deletion is exactly the
tool's (same checks, same lock, same write path). A read-only tool is answered inline
(:func:`~intentloop.service.inline.read_inline`); any other runs in the same
:class:`~intentloop.service.IntentService` the MCP server uses, under ``trio.run``.

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
    from intentloop.service.inline import answers_inline, read_inline

    root = target.project_root or ""
    if answers_inline(tool):  # a read needs neither trio nor the trio service (docs/BENCHMARK.md, "CLI reads")
        return read_inline(
            lambda: target.data_root,
            tool,
            arguments,
            project_root=root,
            project_id=target.project_id,
            reads_off=reads_off,
        )
    import os

    import trio

    from intentloop.service import IntentService
    from intentloop.store.catalog import load_catalog

    load_catalog(os.environ, cold_ok=True)  # a tool that may store text: both layers (the CLI may compile the cache)

    service = IntentService(lambda: target.data_root, resident=False)
    run = partial(service.dispatch, tool, arguments, project_root=root, project_id=target.project_id)
    return trio.run(run)


def adopt_claim(target: Target, arguments: dict[str, Any], adopted: dict[str, str]) -> Any:
    """``intent_import`` of one teammate's claim (``intentloop share adopt``): the tool's arguments and path, the
    record naming its source (:meth:`~intentloop.service.intent_service.IntentService.adopt`).

    Raises:
        IntentLoopError: every code ``intent_import`` defines.
    """
    import os

    import trio

    from intentloop.service import IntentService
    from intentloop.service.args import ImportArgs, decode_arguments
    from intentloop.store.catalog import load_catalog

    load_catalog(os.environ, cold_ok=True)
    args = decode_arguments("intent_import", arguments)
    assert isinstance(args, ImportArgs)
    service = IntentService(lambda: target.data_root, resident=False)
    run = partial(service.adopt, args, adopted, project_root=target.project_root or "", project_id=target.project_id)
    return trio.run(run)


__all__ = ["adopt_claim", "call_tool"]
