"""A read-only tool answered in the calling thread, without trio: for a process that answers one call and exits.

Why: ``intentloop show`` and ``export`` ran their tool through the service under ``trio.run``, and importing trio and
the trio service alone cost 2.4–2.7 × ``intentloop --version`` (docs/BENCHMARK.md, "CLI reads"). The read tools'
functions are plain functions over the store; only their evidence marking ran in a worker thread. Here the same row
and the same function answer, with the evidence hashed inline; a tool that writes still goes through
:class:`~intentloop.service.intent_service.IntentService` (the lock and the write path are trio's).
"""

from __future__ import annotations

import importlib
import inspect
import os
from collections.abc import Callable
from typing import Any

from intentloop.service.args import TOOLS, Tool, decode_arguments


class HandlerMissingError(LookupError):
    """A tool row names a handler that does not exist (raised when the trio service module is imported)."""


def tool_function(tool: Tool) -> Callable[..., Any]:
    """The function a tool row names (a plain function or a coroutine function).

    Raises:
        HandlerMissingError: the row names a module or function that does not exist.
    """
    module_name, _, attribute = tool.handler.partition(":")
    try:
        function: Callable[..., Any] = getattr(importlib.import_module(f"intentloop.service.{module_name}"), attribute)
    except (ImportError, AttributeError) as exc:
        raise HandlerMissingError(f"{tool.name}: no handler {tool.handler!r} in intentloop.service") from exc
    return function


def answers_inline(tool: str) -> bool:
    """``tool`` is read-only and its function is plain, so :func:`read_inline` can answer it."""
    row = TOOLS.get(tool)
    return row is not None and row.read_only and not inspect.iscoroutinefunction(tool_function(row))


def read_inline(
    data_root_resolver: Callable[[], os.PathLike[str] | str],
    tool: str,
    arguments: Any,
    *,
    project_root: str,
    project_id: str,
    reads_off: bool = False,
) -> Any:
    """Decode ``arguments`` strictly and answer the read-only ``tool`` as the non-resident service would.

    ``reads_off``: answer for a task that is ``off`` instead of refusing it with ``MODE_OFF`` — the admin CLI's
    ``show`` and ``export`` are a person looking at their own memory, not an agent's semantic use, which ``off`` is
    there to stop. Writes to an off task stay refused either way (they never come here).

    Raises:
        ValueError: ``tool`` is not one :func:`answers_inline` accepts (a programming error).
        IntentLoopError: ``INVALID_ARGUMENTS`` and every code the tool defines.
    """
    from intentloop.service._evidence import mark_evidence_stale_inline
    from intentloop.service._state import Engine

    if not answers_inline(tool):
        raise ValueError(f"{tool} is not a read-only tool with a plain function")
    row = TOOLS[tool]
    args = decode_arguments(tool, arguments)
    engine = Engine(data_root_resolver, resident=False, reads_off=reads_off)
    ctx = engine.context(project_root, project_id)
    result = tool_function(row)(engine, ctx, args)
    return mark_evidence_stale_inline(ctx.project_root, result, ctx.store.paths) if row.marks_evidence else result


__all__ = ["HandlerMissingError", "answers_inline", "read_inline", "tool_function"]
