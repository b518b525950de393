"""The intent-loop MCP server: JSON-RPC 2.0 over newline-delimited JSON, both protocol eras, on trio and msgspec.

Why not the official SDK's ``Server``: importing ``mcp`` costs ~0.45 s here (both eras' pydantic models), which put the
server's first ``tools/list`` past Codex's 1 s start-up grace on a loaded machine; this module plus trio and msgspec
answers ``initialize`` about 1.1 × a bare ``import trio, msgspec`` later (``docs/MCP.md`` has the measurements). The
SDK stays the conformance oracle: the tests drive this server with the official client of each era and compare its
answers byte for byte with the ones the SDK-based server gave.

One :class:`Connection` per stdio session carries out what its :class:`~intentloop.mcp.session.Session` decides (the
era, the revision, every validity rule and every answer that needs neither the service nor a file live there, shared
with the front loop). Requests run as concurrent tasks (``initialize`` inline, so pipelined requests see the
negotiated revision); ``notifications/cancelled`` cancels one and suppresses its answer. The service is imported in a
worker thread right after the era is known, so neither ``initialize`` nor ``tools/list`` waits for it, and a first
``tools/call`` seldom does.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import trio

from intentloop.errors import IntentLoopError
from intentloop.mcp import answers, envelope as env
from intentloop.mcp.answers import EXPERIMENTAL_CAPABILITIES, INSTRUCTIONS, RequestId, encode_message
from intentloop.mcp.protocol import INTERNAL_ERROR, ProtocolError, Revision
from intentloop.mcp.roots import (
    Canonicalize,
    ResolvedRoot,
    canonical,
    default_canonicalize,
    resolve_declared,
    root_required,
    single_local_root,
)
from intentloop.mcp.session import Batch, Call, Cancel, Decision, Ready, Reply, Response, Session
from intentloop.mcp.skill import SKILL_MIME_TYPE, SKILL_URI, read_skill
from intentloop.model import project_id_for

logger = logging.getLogger(__name__)

ROOTS_TIMEOUT_S = 2.0  # how long a handshake-era client may take to answer roots/list
# The key under which the 2026-07-28 roots input request travels; the client echoes it in ``inputResponses``.
ROOTS_INPUT_KEY = "intent_loop_roots"

Decode = Callable[[str, Any], object]
Send = Callable[[Any], Awaitable[None]]


class ToolService(Protocol):
    """What the server needs from the service layer (``intentloop.service.IntentService`` provides it)."""

    async def run(self, tool: str, args: Any, *, project_root: str, project_id: str) -> Any:
        """Run ``tool`` with arguments already decoded by the server's ``decode``.

        Raises:
            IntentLoopError: any refusal, with its stable code.
        """
        ...


def _default_decode() -> Decode:
    from intentloop.service import decode_arguments

    return decode_arguments


def _default_service() -> ToolService:
    from intentloop.service import IntentService

    return IntentService()


class McpServer:
    """The server's state shared by every connection: the service and how roots are canonicalized.

    Args:
        service: runs the tools; by default ``intentloop.service.IntentService()``, imported on first need.
        decode: strict argument decoder, run before the root is resolved; raises ``INVALID_ARGUMENTS`` naming the
            field (default: ``intentloop.service.decode_arguments``, the decoder the service itself uses).
        canonicalize: turns a raw root into a canonical one (``intentloop.store.canonicalize_project_root``).
        skill_paths: where to look for ``SKILL.md`` (default: next to the package, then the install's share dir).
        roots_timeout: seconds to wait for a handshake-era client to answer ``roots/list``.
        warm_root: a directory that is likely the project (``intentloop serve`` passes its working directory): once
            the service is loaded, its ledger, if it has one, is verified in the background, so the first call finds
            the work done. It decides nothing: every call still resolves its own root.
    """

    def __init__(
        self,
        service: ToolService | None = None,
        *,
        decode: Decode | None = None,
        canonicalize: Canonicalize = default_canonicalize,
        skill_paths: Sequence[Path] | None = None,
        roots_timeout: float = ROOTS_TIMEOUT_S,
        warm_root: str | None = None,
    ) -> None:
        self._service = service
        self._decode = decode
        self.canonicalize = canonicalize
        self.skill_paths = skill_paths
        self.roots_timeout = roots_timeout
        self.warm_root = warm_root
        self._loading: trio.Event | None = None
        self._load_error: BaseException | None = None
        self._catalog: trio.Event | None = None

    @staticmethod
    def server_info(revision: Revision) -> dict[str, str]:
        """The server's ``Implementation`` object as ``revision`` defines it."""
        return answers.server_info(revision)

    def tools(self, revision: Revision) -> list[dict[str, Any]]:
        """The 15 tool objects as ``revision`` defines them (built once per shape)."""
        return answers.tools(revision)

    def start_loading(self) -> None:
        """Begin importing the service and the argument decoder in a worker thread, then warm ``warm_root``'s project
        (idempotent, never blocks)."""
        if self._loading is not None:
            return
        self._loading = trio.Event()
        trio.lowlevel.spawn_system_task(self._load)
        self._catalog = trio.Event()
        trio.lowlevel.spawn_system_task(self._load_catalog, self._loading, self._catalog)

    @staticmethod
    async def _load_catalog(after: trio.Event, done: trio.Event) -> None:
        """The rule catalog, when it is on, in its own worker thread (a cold cache compiles for seconds): every tool
        call waits for it, so no text is stored before both layers are in place (intentloop/store/catalog.py). It
        starts once the service is imported, so the two loads' passing peaks of memory do not add up."""
        await after.wait()

        def load() -> None:
            # imported here, in the worker: an import in the event loop's thread can wait on the import lock the
            # service's loading thread holds, and a signal is then not handled until it is released
            import os

            from intentloop.store.catalog import load_catalog

            load_catalog(dict(os.environ), cold_ok=True, lean=True)  # the pages only loading needs go back

        try:
            await trio.to_thread.run_sync(load, abandon_on_cancel=True)
        except Exception:  # load_catalog never raises; an import failure leaves the own rules, loudly
            logger.exception("loading the rule catalog failed: redacting with the own rules")
        finally:
            done.set()

    async def _load(self) -> None:
        assert self._loading is not None
        if self._service is not None and self._decode is not None:  # given, not imported
            self._loading.set()
            if self.warm_root is not None:
                await self._warm(self._service, self.warm_root)
            return
        try:
            await trio.to_thread.run_sync(
                importlib.import_module, "intentloop.service.intent_service", abandon_on_cancel=True
            )
            if self._decode is None:
                self._decode = _default_decode()
            if self._service is None:
                self._service = _default_service()
        except Exception as exc:  # reported to each call as INTERNAL_ERROR; serving goes on
            logger.exception("loading the service failed")
            self._load_error = exc
        finally:
            self._loading.set()
        if self._service is not None:
            self._start_background_sync(self._service)
            if self.warm_root is not None:
                await self._warm(self._service, self.warm_root)

    @staticmethod
    def _start_background_sync(service: ToolService) -> None:
        """The service's background sync of shared projects (intentloop/service/_share_auto.py), when it has one."""
        background = getattr(service, "sync_in_background", None)
        if background is not None:
            trio.lowlevel.spawn_system_task(background)

    async def _warm(self, service: ToolService, raw_root: str) -> None:
        warm = getattr(service, "warm", None)
        if warm is None:
            return
        try:
            root = self.canonicalize(raw_root)
            await warm(root, project_id_for(root))
        except (IntentLoopError, OSError, ValueError):
            return  # not a project directory: the calls resolve their own roots anyway
        except Exception:  # a system task must not end the server
            logger.exception("warming the project at %s failed", raw_root)

    async def ready(self) -> tuple[ToolService, Decode]:
        """The service and the decoder, waiting for the background import when it is still running.

        Raises:
            IntentLoopError: ``INTERNAL_ERROR`` when the service could not be loaded.
        """
        if self._service is None or self._decode is None:
            self.start_loading()
            assert self._loading is not None
            await self._loading.wait()
        if self._catalog is not None:
            await self._catalog.wait()
        if self._service is None or self._decode is None:
            raise IntentLoopError(env.INTERNAL_MESSAGE) from self._load_error
        return self._service, self._decode


class _Pending:
    """A server-to-client request waiting for its answer."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.answer: dict[str, Any] | None = None


class Connection:
    """One client session on trio: its :class:`~intentloop.mcp.session.Session` decides, this carries the decisions
    out (requests as concurrent tasks, cancellation, tool calls, the roots back-channel).

    Args:
        server: the shared server state.
        send: writes one JSON-RPC message (a dict or a batch list) to the client.
        session: the session to go on with (the front loop's, :mod:`intentloop.mcp.handshake`); a new one by default.
    """

    def __init__(self, server: McpServer, send: Send, session: Session | None = None) -> None:
        self.server = server
        self.send = send
        self.session = session if session is not None else Session()
        self._scopes: dict[RequestId, trio.CancelScope] = {}
        self._pending: dict[RequestId, _Pending] = {}
        if self.session.opened:
            self.server.start_loading()

    # -- inbound ---------------------------------------------------------------------------------------------------

    async def receive(self, line: bytes, nursery: trio.Nursery) -> None:
        """Handle one line from the client: a message, a batch, or something that is neither."""
        await self.carry_out(self.session.receive_line(line), nursery)

    async def carry_out(self, decision: Decision, nursery: trio.Nursery) -> None:
        """Carry out the session's decision about one line (also the one the front loop handed over)."""
        if self.session.opened:
            self.server.start_loading()  # once the era is known, so neither initialize nor tools/list waits for it
        if isinstance(decision, Batch):
            replies: list[dict[str, Any]] = []
            async with trio.open_nursery() as batch_nursery:
                for member in decision.members:
                    immediate = self._start(member, batch_nursery, batch=replies)
                    if immediate is not None:
                        replies.append(immediate)
            if replies:
                await self.send(replies)
            return
        immediate = self._start(decision, nursery, batch=None)
        if immediate is not None:
            await self.send(immediate)

    def _start(
        self,
        decision: Reply | Ready | Call | Cancel | Response | None,
        nursery: trio.Nursery,
        *,
        batch: list[dict[str, Any]] | None,
    ) -> Any:
        """Start what ``decision`` asks for; returns an answer to send at once, or ``None``."""
        if isinstance(decision, Reply):
            return decision.message
        if isinstance(decision, Ready | Call):
            scope = trio.CancelScope()
            self._scopes[decision.request_id] = scope
            nursery.start_soon(self._answer, decision, scope, batch)
        elif isinstance(decision, Cancel):
            cancelled = self._scopes.get(decision.request_id)
            if cancelled is not None:
                cancelled.cancel()
        elif isinstance(decision, Response):
            pending = self._pending.pop(decision.request_id, None)
            if pending is not None:
                pending.answer = decision.message
                pending.done.set()
        return None

    # -- requests --------------------------------------------------------------------------------------------------

    async def _answer(self, request: Ready | Call, scope: trio.CancelScope, batch: list[dict[str, Any]] | None) -> None:
        answer: dict[str, Any] | None = None
        try:
            with scope:
                answer = await self._answer_of(request)
        finally:
            del self._scopes[request.request_id]
            self.session.finished(request.request_id)
        if answer is None or scope.cancel_called:
            return  # cancelled: the specification asks for no response
        if batch is not None:
            batch.append(answer)
        else:
            await self.send(answer)

    async def _answer_of(self, request: Ready | Call) -> dict[str, Any]:
        if isinstance(request, Ready):
            if request.failure is not None:
                logger.error("%s failed unexpectedly", request.method, exc_info=request.failure)
            return request.message
        try:
            if request.method == "tools/call":
                return request.result(await self._call_tool(request))
            return request.result(self._read_resource(request))
        except ProtocolError as error:
            return request.error(error.code, error.message, error.data)
        except Exception:
            logger.exception("%s failed unexpectedly", request.method)
            return request.error(INTERNAL_ERROR, "Internal error")

    def _read_resource(self, call: Call) -> dict[str, Any]:
        try:
            text = read_skill(self.server.skill_paths)
        except IntentLoopError as error:
            raise ProtocolError(
                call.revision.resource_not_found, f"{error.code}: {error.message}", error.to_dict()
            ) from error
        return {"contents": [{"mimeType": SKILL_MIME_TYPE, "text": text, "uri": SKILL_URI}]}

    async def _call_tool(self, call: Call) -> dict[str, Any]:
        name, params, revision = call.target, call.params, call.revision
        arguments: dict[str, Any] = params.get("arguments") or {}  # the session checked the name and the shape
        try:
            service, decode = await self.server.ready()
            args = decode(name, arguments)
            resolved = await self._resolve_root(params, arguments, revision, call.capabilities)
        except IntentLoopError as error:
            return _tool_result(env.failure(name, None, arguments, error), revision)
        if resolved is None:  # a 2026-07-28 client with roots: ask for them and let it retry
            return {"inputRequests": {ROOTS_INPUT_KEY: {"method": "roots/list"}}, "resultType": "input_required"}
        try:
            result = await service.run(name, args, project_root=resolved.root, project_id=resolved.project_id)
        except IntentLoopError as error:
            envelope = env.failure(name, resolved.project_id, arguments, error)
        except Exception:
            logger.exception("%s failed unexpectedly", name)
            envelope = env.internal_failure(name, resolved.project_id, arguments)
        else:
            envelope = env.success(name, resolved.project_id, arguments, result)
        return _tool_result(envelope, revision)

    async def _resolve_root(
        self, params: dict[str, Any], arguments: Mapping[str, Any], revision: Revision, capabilities: Mapping[str, Any]
    ) -> ResolvedRoot | None:
        """The project root of a call; ``None`` when a 2026-07-28 client must first send its roots."""
        meta = params.get("_meta")
        declared = resolve_declared(meta if isinstance(meta, Mapping) else None, arguments, self.server.canonicalize)
        if declared is not None:
            return declared
        declares_roots = isinstance(capabilities.get("roots"), dict)
        if revision.modern:
            uris = _roots_from_responses(params)
            if uris is None:
                if not declares_roots:
                    raise root_required()
                return None
        else:
            uris = await self._list_roots() if declares_roots else []
        path = single_local_root(uris)
        if path is None:
            raise root_required()
        return canonical(path, self.server.canonicalize, "client_roots")

    async def _list_roots(self) -> list[str]:
        """Root URIs from a handshake-era ``roots/list`` request; ``[]`` when the client cannot or does not answer."""
        request_id, request = self.session.roots_request()
        pending = _Pending()
        self._pending[request_id] = pending
        try:
            await self.send(request)
            with trio.move_on_after(self.server.roots_timeout):
                await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        answer = pending.answer
        result = answer.get("result") if answer is not None else None
        roots = result.get("roots") if isinstance(result, dict) else None
        if not isinstance(roots, list):
            logger.debug("roots/list gave no usable answer")
            return []
        return [root["uri"] for root in roots if isinstance(root, dict) and isinstance(root.get("uri"), str)]

    def cancel_all(self) -> None:
        """Cancel every request in flight (their answers are not sent)."""
        for scope in self._scopes.values():
            scope.cancel()

    async def wait_idle(self) -> None:
        """Return once no request is being answered (polled: it runs only while the client is going away)."""
        while self._scopes:
            await trio.sleep(0.005)


def _roots_from_responses(params: Mapping[str, Any]) -> list[str] | None:
    """Root URIs a 2026-07-28 client attached to its retry, or ``None`` when it attached none."""
    responses = params.get("inputResponses")
    answer = responses.get(ROOTS_INPUT_KEY) if isinstance(responses, dict) else None
    roots = answer.get("roots") if isinstance(answer, dict) else None
    if not isinstance(roots, list):
        return None
    return [root["uri"] for root in roots if isinstance(root, dict) and isinstance(root.get("uri"), str)]


def _tool_result(envelope: env.Envelope, revision: Revision) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"text": env.envelope_text(envelope), "type": "text"}],
        "isError": not envelope["ok"],
    }
    if revision.structured:
        result["structuredContent"] = envelope
    return result


def build_server(service: ToolService | None = None, **options: Any) -> McpServer:
    """The intent-loop MCP server over ``service`` (see :class:`McpServer` for the options)."""
    return McpServer(service, **options)


__all__ = [
    "EXPERIMENTAL_CAPABILITIES",
    "INSTRUCTIONS",
    "ROOTS_INPUT_KEY",
    "ROOTS_TIMEOUT_S",
    "Connection",
    "McpServer",
    "ToolService",
    "build_server",
    "encode_message",
]
