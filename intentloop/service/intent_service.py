"""The intent service under trio: one :class:`IntentService` per process answers the 15 tools.

The MCP adapter decodes the arguments strictly, resolves and canonicalizes the project root, computes the project id
and calls :meth:`run`; everything after that (the rules, the ledger transaction) happens here. :meth:`dispatch`
decodes and runs in one step, for callers that hold raw arguments. Results are plain
JSON-ready values in the exact shapes of docs/TOOLS.md; failures are :class:`IntentLoopError`. Which function answers a
tool is said by its row in :data:`~intentloop.service.args.TOOLS`; this module binds every row when it is imported.

A resident (long-running) service verifies a project's ledger off the event loop: when this process has not verified the
file as it now is, a call first waits for :meth:`IntentService.warm`, which reads and verifies it in a worker thread
from a supervised system task (a 100,000-event ledger takes seconds; meanwhile the loop keeps answering other
requests, and a call cancelled while it waits leaves the verification running for the next one). A failure there is
logged; the call then meets the same failure as a structured error from its own read.
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, Final

import trio

from intentloop.errors import IntentLoopError
from intentloop.service._evidence import mark_evidence_stale
from intentloop.service._share_auto import BackgroundSync
from intentloop.service._state import Ctx, Engine
from intentloop.service.args import TOOL_NAMES, TOOLS, Tool, decode_arguments
from intentloop.service.inline import HandlerMissingError, tool_function
from intentloop.store import ProjectStore, resolve_data_root

logger = logging.getLogger(__name__)

Handler = Callable[[Engine, Ctx, Any], Awaitable[Any]]


def _sync(function: Callable[[Engine, Ctx, Any], Any]) -> Handler:
    async def run(engine: Engine, ctx: Ctx, args: Any) -> Any:
        return function(engine, ctx, args)

    return run


def _with_evidence(handler: Handler) -> Handler:
    """``handler``'s snapshot or export result with ``evidence_stale`` on every claim bound to a file."""

    async def run(engine: Engine, ctx: Ctx, args: Any) -> Any:
        return await mark_evidence_stale(ctx.project_root, await handler(engine, ctx, args), ctx.store.paths)

    return run


def bind(tool: Tool) -> Handler:
    """The coroutine that runs ``tool``: the function its row names, awaited or run inline, marking evidence when the
    row says so.

    Raises:
        HandlerMissingError: the row names a module or function that does not exist.
    """
    function = tool_function(tool)
    handler: Handler = function if inspect.iscoroutinefunction(function) else _sync(function)
    return _with_evidence(handler) if tool.marks_evidence else handler


# Built from the rows when the module is imported: a row naming a missing handler stops the import.
_HANDLERS: Final[dict[str, Handler]] = {name: bind(tool) for name, tool in TOOLS.items()}
#: Tools that never read the whole ledger as a view: a resident service does not verify one for them first (deletion
#: streams the file itself; a view would be a third pass and memory that grows with the ledger).
_UNWARMED = frozenset({"intent_delete"})


class IntentService:
    """The operations behind the 15 tools, with this process's stores and private ledgers.

    Args:
        data_root_resolver: returns the storage root ``R`` (docs/STORAGE.md); called on every dispatch so a missing
            root is reported per call (``DATA_DIR_REQUIRED``) instead of at start-up.
        lock_deadline: a ``time.monotonic()`` value after which no ledger-lock wait continues (``LOCK_TIMEOUT``): a
            hook running a user's ``/intent`` command passes its own deadline; a server passes nothing.
        resident: a long-running process (a server) keeps each verified ledger (as offsets) and the folds of the tasks
            last asked for between calls, verifying a ledger off the event loop first; ``False`` for a process that
            answers one call and exits (the CLI, a hook's ``/intent`` command), which reads a task through the index.
    """

    def __init__(
        self,
        data_root_resolver: Callable[[], os.PathLike[str] | str] = resolve_data_root,
        *,
        lock_deadline: float | None = None,
        resident: bool = True,
    ) -> None:
        self._engine = Engine(data_root_resolver, lock_deadline=lock_deadline, resident=resident)
        self._resident = resident
        self._warming: dict[ProjectStore, trio.Event] = {}
        self._background = BackgroundSync(data_root_resolver)

    async def dispatch(self, tool: str, arguments: Any, *, project_root: str, project_id: str) -> Any:
        """Decode ``arguments`` strictly and run ``tool`` for the project.

        Args:
            tool: one of the 15 tool names.
            arguments: the call's JSON object (``None`` counts as ``{}``).
            project_root: the canonical project root (already resolved by the adapter; never stored).
            project_id: ``project_id_for(project_root)``.

        Returns:
            The tool's result: a Snapshot, Claim, Candidate, Candidate list, or the status/export/delete/set-mode
            object, as plain JSON-ready data.

        Raises:
            IntentLoopError: ``INVALID_ARGUMENTS`` (naming the field path) and every code the operation defines.
        """
        return await self.run(tool, decode_arguments(tool, arguments), project_root=project_root, project_id=project_id)

    async def run(self, tool: str, args: Any, *, project_root: str, project_id: str) -> Any:
        """Run ``tool`` with arguments already decoded by :func:`~intentloop.service.args.decode_arguments`.

        The MCP adapter decodes each call once (before it resolves the project root) and hands the struct here, so
        no call is decoded twice.

        Raises:
            IntentLoopError: every code the operation defines.
        """
        ctx = self._engine.context(project_root, project_id)
        if self._resident:
            self._background.note(project_root, project_id)
            if tool not in _UNWARMED:
                await self._warmed(ctx.store)
        return await _HANDLERS[tool](self._engine, ctx, args)

    async def sync_in_background(self) -> None:
        """Sync, in the background and for as long as the process lives, every shared project this service has
        served whose user turned auto-sync on (``intentloop share auto-sync``); never raises. A server runs it."""
        await self._background.run()

    async def warm(self, project_root: str, project_id: str) -> None:
        """Verify and index the project's ledger in the background, unless this process holds it as it is now; returns
        once that is done. Never raises for the project's state (a damaged ledger is reported by the calls that read
        it); ``DATA_DIR_REQUIRED`` and ``INVALID_PROJECT_ID`` are left to those calls too.

        A server may call it as soon as it knows its project, so that the first call finds the work done.
        """
        try:
            ctx = self._engine.context(project_root, project_id)
        except IntentLoopError:
            return
        self._background.note(project_root, project_id)
        if not ctx.store.ledger_path.exists():  # nothing to verify (and nothing is created for a guess)
            return
        await self._warmed(ctx.store)

    async def _warmed(self, store: ProjectStore) -> None:
        done = self._warming.get(store)
        if done is None:
            if store.is_cached():
                return
            done = self._warming[store] = trio.Event()
            trio.lowlevel.spawn_system_task(self._verify, store, done)
        await done.wait()

    async def _verify(self, store: ProjectStore, done: trio.Event) -> None:
        """The supervised background verification of one project's ledger (a system task: it outlives a cancelled
        call, is cancelled with the run, and never lets an exception escape)."""
        try:
            events = await trio.to_thread.run_sync(lambda: len(store.read()), abandon_on_cancel=True)
            logger.debug("verified the ledger of project %s (%d events)", store.project_id, events)
        except IntentLoopError as exc:  # the calls report it with its code
            logger.debug("the ledger of project %s did not verify: %s", store.project_id, exc.code)
        except Exception:
            logger.exception("verifying the ledger of project %s failed", store.project_id)
        finally:
            del self._warming[store]
            done.set()


__all__ = ["TOOL_NAMES", "HandlerMissingError", "IntentLoopError", "IntentService", "bind"]
