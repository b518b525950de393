"""The intent-loop MCP server: JSON-RPC 2.0 over newline-delimited JSON, both protocol eras, on trio and msgspec.

Why not the official SDK's ``Server``: importing ``mcp`` costs ~0.45 s here (both eras' pydantic models), which put the
server's first ``tools/list`` past Codex's 1 s start-up grace on a loaded machine; this module plus trio and msgspec
answers ``initialize`` about 1.1 × a bare ``import trio, msgspec`` later (``docs/MCP.md`` has the measurements). The
SDK stays the conformance oracle: the tests drive this server with the official client of each era and compare its
answers byte for byte with the ones the SDK-based server gave.

One :class:`Connection` per stdio session. The first request decides the era: ``initialize`` opens the handshake era,
a request whose ``params._meta`` carries the 2026-07-28 envelope opens the modern one. Requests run as concurrent
tasks (``initialize`` inline, so pipelined requests see the negotiated revision); ``notifications/cancelled`` cancels
one and suppresses its answer. The service is imported in a worker thread right after the era is known, so neither
``initialize`` nor ``tools/list`` waits for it, and a first ``tools/call`` seldom does.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio

from intentloop.errors import IntentLoopError, InvalidInputError
from intentloop.mcp import answers, envelope as env
from intentloop.mcp.answers import (
    EXPERIMENTAL_CAPABILITIES,
    INSTRUCTIONS,
    RequestId,
    discover_result,
    encode_message,
    error_message,
    id_of,
    initialize_result,
    listing,
    ordered,
    result_message,
    valid_id,
)
from intentloop.mcp.catalog import Catalog, load_catalog
from intentloop.mcp.protocol import (
    HANDSHAKE_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN_METHODS,
    MODERN_VERSIONS,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    ProtocolError,
    Revision,
    check_modern_envelope,
    has_modern_envelope,
    negotiate,
)
from intentloop.mcp.roots import (
    Canonicalize,
    ResolvedRoot,
    canonical,
    default_canonicalize,
    resolve_declared,
    root_required,
    single_local_root,
)
from intentloop.mcp.skill import (
    SKILL_MIME_TYPE,
    SKILL_URI,
    read_skill,
)
from intentloop.model import project_id_for

if TYPE_CHECKING:
    from intentloop.mcp.handshake import Opening

logger = logging.getLogger(__name__)

ROOTS_TIMEOUT_S = 2.0  # how long a handshake-era client may take to answer roots/list
# The key under which the 2026-07-28 roots input request travels; the client echoes it in ``inputResponses``.
ROOTS_INPUT_KEY = "intent_loop_roots"

_decoder = msgspec.json.Decoder()

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
    """The server's state shared by every connection: the catalog, the service and how roots are canonicalized.

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
        self.catalog: Catalog = load_catalog()
        self._service = service
        self._decode = decode
        self.canonicalize = canonicalize
        self.skill_paths = skill_paths
        self.roots_timeout = roots_timeout
        self.warm_root = warm_root
        self._loading: trio.Event | None = None
        self._load_error: BaseException | None = None

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
        if self._service is not None and self.warm_root is not None:
            await self._warm(self._service, self.warm_root)

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
        if self._service is None or self._decode is None:
            raise IntentLoopError(env.INTERNAL_MESSAGE) from self._load_error
        return self._service, self._decode


class _Pending:
    """A server-to-client request waiting for its answer."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.answer: dict[str, Any] | None = None


class Connection:
    """One client session: its era and revision, its requests in flight, and requests it owes the server an answer.

    Args:
        server: the shared server state.
        send: writes one JSON-RPC message (a dict or a batch list) to the client.
    """

    def __init__(self, server: McpServer, send: Send) -> None:
        self.server = server
        self.send = send
        self.revision: Revision | None = None  # the handshake era's negotiated revision
        self.modern = False  # the first request carried the 2026-07-28 envelope
        self.client_capabilities: dict[str, Any] = {}
        self._in_flight: dict[RequestId, trio.CancelScope] = {}
        self._pending: dict[RequestId, _Pending] = {}
        self._next_server_id = 0

    def adopt(self, opening: Opening) -> None:
        """Go on from where the front loop (:mod:`intentloop.mcp.handshake`) left the connection."""
        self.revision = opening.revision
        self.modern = opening.modern
        self.client_capabilities = opening.client_capabilities
        if self.revision is not None or self.modern:
            self.server.start_loading()

    # -- inbound ---------------------------------------------------------------------------------------------------

    async def receive(self, line: bytes, nursery: trio.Nursery) -> None:
        """Handle one line from the client: a message, a batch, or something that is neither."""
        try:
            message = _decoder.decode(line)
        except msgspec.DecodeError:
            await self.send(error_message(None, PARSE_ERROR, "Parse error: the line is not valid JSON"))
            return
        if isinstance(message, list):
            await self._receive_batch(message, nursery)
            return
        answer_now = await self._receive_one(message, nursery, batch=None)
        if answer_now is not None:
            await self.send(answer_now)

    async def _receive_batch(self, batch: list[Any], nursery: trio.Nursery) -> None:
        if self.modern or self.revision is None or not self.revision.batches or not batch:
            reason = "an empty batch" if not batch else "JSON-RPC batches are not part of the negotiated revision"
            await self.send(error_message(None, INVALID_REQUEST, f"Invalid Request: {reason}"))
            return
        replies: list[dict[str, Any]] = []
        async with trio.open_nursery() as batch_nursery:
            for message in batch:
                if isinstance(message, dict) and message.get("method") == "initialize":
                    replies.append(
                        error_message(id_of(message), INVALID_REQUEST, "initialize cannot be part of a batch")
                    )
                    continue
                immediate = await self._receive_one(message, batch_nursery, batch=replies)
                if immediate is not None:
                    replies.append(immediate)
        if replies:
            await self.send(replies)

    async def _receive_one(
        self, message: Any, nursery: trio.Nursery, *, batch: list[dict[str, Any]] | None
    ) -> dict[str, Any] | None:
        """Route one message; returns an answer to send at once, or ``None`` (answered later, or nothing owed)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return error_message(id_of(message), INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
        if "method" not in message:
            if "id" in message and ("result" in message or "error" in message):
                self._answer_pending(message)
                return None
            return error_message(id_of(message), INVALID_REQUEST, "Invalid Request: no method")
        method = message["method"]
        params = message.get("params")
        if not isinstance(method, str):
            return error_message(id_of(message), INVALID_REQUEST, "Invalid Request: method must be a string")
        if "id" not in message:
            self._notification(method, params)
            return None
        request_id = message["id"]
        if not valid_id(request_id):
            return error_message(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
        if params is not None and not isinstance(params, dict):
            return error_message(request_id, INVALID_PARAMS, "Invalid params: params must be an object")
        if request_id in self._in_flight:
            return error_message(request_id, INVALID_REQUEST, "Invalid Request: this id is already in use by a request")
        if method == "initialize" or (self.revision is None and not self.modern and not has_modern_envelope(params)):
            return self._before_or_at_initialize(request_id, method, params)
        if self.revision is None and not self.modern:
            self.modern = True
            self.server.start_loading()
        scope = trio.CancelScope()
        self._in_flight[request_id] = scope
        nursery.start_soon(self._answer, request_id, method, params or {}, scope, batch)
        return None

    def _before_or_at_initialize(self, request_id: RequestId, method: str, params: Any) -> dict[str, Any]:
        if method == "initialize":
            if self.modern:
                requested = params.get("protocolVersion") if isinstance(params, dict) else None
                return error_message(
                    request_id,
                    UNSUPPORTED_PROTOCOL_VERSION,
                    "this connection serves the 2026-07-28 protocol; the initialize handshake is not accepted",
                    {"supported": list(MODERN_VERSIONS), "requested": requested},
                )
            if self.revision is not None:
                return error_message(
                    request_id, INVALID_REQUEST, "Invalid Request: the connection is already initialized"
                )
            return self._initialize(request_id, params)
        if method == "ping":
            return result_message(request_id, {})
        return error_message(
            request_id,
            INVALID_REQUEST,
            "Invalid Request: the server is not initialized; send initialize first (or a request carrying the "
            "2026-07-28 _meta envelope)",
        )

    def _initialize(self, request_id: RequestId, params: Any) -> dict[str, Any]:
        if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
            return error_message(request_id, INVALID_PARAMS, "Invalid params: initialize needs params.protocolVersion")
        capabilities = params.get("capabilities")
        self.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        revision = negotiate(params["protocolVersion"])
        self.revision = revision
        self.server.start_loading()
        return result_message(request_id, initialize_result(revision))

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled" and isinstance(params, dict):
            scope = self._in_flight.get(params.get("requestId"))  # type: ignore[arg-type]
            if scope is not None:
                scope.cancel()
        # notifications/initialized, notifications/roots/list_changed and unknown notifications need nothing.

    def _answer_pending(self, message: dict[str, Any]) -> None:
        pending = self._pending.pop(message["id"], None) if valid_id(message["id"]) else None
        if pending is not None:
            pending.answer = message
            pending.done.set()

    # -- requests --------------------------------------------------------------------------------------------------

    async def _answer(
        self,
        request_id: RequestId,
        method: str,
        params: dict[str, Any],
        scope: trio.CancelScope,
        batch: list[dict[str, Any]] | None,
    ) -> None:
        answer: dict[str, Any] | None = None
        try:
            with scope:
                answer = await self._request(request_id, method, params)
        finally:
            del self._in_flight[request_id]
        if answer is None or scope.cancel_called:
            return  # cancelled: the specification asks for no response
        if batch is not None:
            batch.append(answer)
        else:
            await self.send(answer)

    async def _request(self, request_id: RequestId, method: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            if self.modern:
                revision, capabilities = check_modern_envelope(params)
                if method not in MODERN_METHODS:
                    raise ProtocolError(METHOD_NOT_FOUND, "Method not found", method)
            else:
                assert self.revision is not None
                revision, capabilities = self.revision, self.client_capabilities
                if has_modern_envelope(params):
                    raise ProtocolError(
                        INVALID_REQUEST,
                        "this connection serves the handshake protocol era; requests carrying the 2026-07-28 "
                        "envelope are not accepted on it",
                    )
                if method not in HANDSHAKE_METHODS:
                    raise ProtocolError(METHOD_NOT_FOUND, "Method not found", method)
            result = await self._method(method, params, revision, capabilities)
        except ProtocolError as error:
            return error_message(request_id, error.code, error.message, error.data)
        except Exception:
            logger.exception("%s failed unexpectedly", method)
            return error_message(request_id, INTERNAL_ERROR, "Internal error")
        return result_message(request_id, ordered(result, revision, method))

    async def _method(
        self, method: str, params: dict[str, Any], revision: Revision, capabilities: Mapping[str, Any]
    ) -> dict[str, Any]:
        if method == "tools/call":
            return await self._call_tool(params, revision, capabilities)
        listed = listing(method, revision)
        if listed is not None:
            return listed
        if method == "resources/read":
            return self._read_resource(params, revision)
        if method == "server/discover":
            return discover_result()
        return {}  # ping

    def _read_resource(self, params: dict[str, Any], revision: Revision) -> dict[str, Any]:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: resources/read needs params.uri (a string)")
        if uri != SKILL_URI:
            raise ProtocolError(revision.resource_not_found, "Resource not found", {"uri": uri[:200]})
        try:
            text = read_skill(self.server.skill_paths)
        except IntentLoopError as error:
            raise ProtocolError(
                revision.resource_not_found, f"{error.code}: {error.message}", error.to_dict()
            ) from error
        return {"contents": [{"mimeType": SKILL_MIME_TYPE, "text": text, "uri": SKILL_URI}]}

    async def _call_tool(
        self, params: dict[str, Any], revision: Revision, capabilities: Mapping[str, Any]
    ) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: tools/call needs params.name (a string)")
        raw_arguments = params.get("arguments")
        if self.server.catalog.get(name) is None:
            envelope = env.failure(name, None, {}, InvalidInputError(f"Unknown tool `{name[:200]}`"))
            return _tool_result(envelope, revision)
        if raw_arguments is not None and not isinstance(raw_arguments, dict):
            error = InvalidInputError(f"Expected `object`, got `{env.json_type(raw_arguments)}`")
            return _tool_result(env.failure(name, None, {}, error), revision)
        arguments: dict[str, Any] = raw_arguments or {}
        try:
            service, decode = await self.server.ready()
            args = decode(name, arguments)
            resolved = await self._resolve_root(params, arguments, revision, capabilities)
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
        self._next_server_id += 1
        request_id = self._next_server_id
        pending = _Pending()
        self._pending[request_id] = pending
        try:
            await self.send({"jsonrpc": "2.0", "id": request_id, "method": "roots/list"})
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
        for scope in self._in_flight.values():
            scope.cancel()

    async def wait_idle(self) -> None:
        """Return once no request is being answered (polled: it runs only while the client is going away)."""
        while self._in_flight:
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
