"""One MCP session's rules, with no I/O: its era, its negotiated revision, and what each incoming message asks for.

Why sans-IO: ``intentloop serve`` answers the handshake in a blocking loop before trio is imported, then hands the
connection to a trio loop (docs/MCP.md, start-up); both drive this one object (as any I/O drives h11), so one set of
rules decides every answer, and the hand-over passes the session itself rather than a copy of its state.

:meth:`Session.receive_line` turns one line into a :data:`Decision`: a :class:`Reply` to send now, a :class:`Ready`
request whose answer is computed (send it unless the request is cancelled first), a :class:`Call` the session cannot
answer alone (a tool call, a resource read), a :class:`Cancel`, the client's :class:`Response` to a request of ours
(``roots/list``), a :class:`Batch` of those, or ``None`` when nothing is owed. A :class:`Ready` or :class:`Call` is in
flight until the driver calls :meth:`Session.finished`: its id cannot be reused meanwhile.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import msgspec

from intentloop.mcp.answers import (
    RequestId,
    discover_result,
    error_message,
    id_of,
    initialize_result,
    listing,
    ordered,
    result_message,
    valid_id,
)
from intentloop.mcp.catalog import load_catalog
from intentloop.mcp.protocol import (
    HANDSHAKE_METHODS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MODERN_METHODS,
    MODERN_VERSIONS,
    PAGINATED_METHODS,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    ProtocolError,
    Revision,
    check_modern_envelope,
    has_modern_envelope,
    negotiate,
)
from intentloop.mcp.skill import SKILL_URI

_decoder = msgspec.json.Decoder()

#: The methods whose answer needs more than the session: the service (a tool call) or a file (the skill).
CALL_METHODS: Final = frozenset({"tools/call", "resources/read"})


class Reply(msgspec.Struct, frozen=True):
    """An answer to send now (an error found on arrival, the ``initialize`` result): a message or a batch of them."""

    message: dict[str, Any] | list[dict[str, Any]]


class Ready(msgspec.Struct, frozen=True, kw_only=True):
    """An accepted request and its answer; in flight until :meth:`Session.finished`.

    Attributes:
        failure: the unexpected exception behind an ``INTERNAL_ERROR`` answer (for the driver's log), else ``None``.
    """

    request_id: RequestId
    method: str
    message: dict[str, Any]
    failure: BaseException | None = None


class Call(msgspec.Struct, frozen=True, kw_only=True):
    """An accepted request the driver answers (``tools/call``: the service; ``resources/read``: the skill file), with
    the revision and client capabilities it was sent under; in flight until :meth:`Session.finished`.

    Attributes:
        target: the tool name of ``tools/call``, the URI of ``resources/read`` (both checked to be strings; the URI is
            the skill's).
    """

    request_id: RequestId
    method: str
    params: dict[str, Any]
    revision: Revision
    capabilities: dict[str, Any]
    target: str

    def result(self, result: dict[str, Any]) -> dict[str, Any]:
        """The answer carrying ``result``, with the fields the revision adds."""
        return result_message(self.request_id, ordered(result, self.revision, self.method))

    def error(self, code: int, message: str, data: Any = None) -> dict[str, Any]:
        """The JSON-RPC error answer."""
        return error_message(self.request_id, code, message, data)


class Cancel(msgspec.Struct, frozen=True):
    """``notifications/cancelled``: cancel this request if it is in flight, and send no answer to it."""

    request_id: RequestId


class Response(msgspec.Struct, frozen=True):
    """The client's answer (``result`` or ``error``) to the request of ours with this id."""

    request_id: RequestId
    message: dict[str, Any]


class Batch(msgspec.Struct, frozen=True):
    """A JSON-RPC batch accepted in 2025-03-26: each member's decision; the answers go out together as one array."""

    members: tuple[Reply | Ready | Call | Cancel | Response | None, ...]


Decision: TypeAlias = Reply | Ready | Call | Cancel | Response | Batch | None


class Session:
    """One client session: the era (set by the first request), the revision and client capabilities of the handshake
    era, the requests in flight, and the ids of the requests the server sends the client."""

    __slots__ = ("_in_flight", "_next_server_id", "client_capabilities", "modern", "revision")

    def __init__(self) -> None:
        self.revision: Revision | None = None  # the handshake era's negotiated revision
        self.modern = False  # a request carrying the 2026-07-28 envelope opened the session
        self.client_capabilities: dict[str, Any] = {}
        self._in_flight: set[RequestId] = set()
        self._next_server_id = 0

    @property
    def opened(self) -> bool:
        """Whether the era is decided (``initialize`` answered, or a 2026-07-28 request accepted)."""
        return self.revision is not None or self.modern

    def receive_line(self, line: bytes) -> Decision:
        """The decision for one line from the client: a message, a batch, or something that is neither."""
        try:
            message = _decoder.decode(line)
        except msgspec.DecodeError:
            return Reply(error_message(None, PARSE_ERROR, "Parse error: the line is not valid JSON"))
        except RecursionError:  # msgspec's decoder refuses nesting deeper than the interpreter's recursion limit
            return Reply(error_message(None, PARSE_ERROR, "Parse error: the line is nested too deeply"))
        if isinstance(message, list):
            return self._batch(message)
        return self.receive(message)

    def receive(self, message: Any) -> Reply | Ready | Call | Cancel | Response | None:
        """The decision for one decoded message (not a batch)."""
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return Reply(error_message(id_of(message), INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"))
        if "method" not in message:
            if "id" in message and ("result" in message or "error" in message):
                return Response(message["id"], message) if valid_id(message["id"]) else None
            return Reply(error_message(id_of(message), INVALID_REQUEST, "Invalid Request: no method"))
        method = message["method"]
        params = message.get("params")
        if not isinstance(method, str):
            return Reply(error_message(id_of(message), INVALID_REQUEST, "Invalid Request: method must be a string"))
        if "id" not in message:
            return _notification(method, params)
        request_id = message["id"]
        if not valid_id(request_id):
            return Reply(error_message(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer"))
        if params is not None and not isinstance(params, dict):
            return Reply(error_message(request_id, INVALID_PARAMS, "Invalid params: params must be an object"))
        if request_id in self._in_flight:
            return Reply(
                error_message(request_id, INVALID_REQUEST, "Invalid Request: this id is already in use by a request")
            )
        if method == "initialize" or (not self.opened and not has_modern_envelope(params)):
            return Reply(self._before_or_at_initialize(request_id, method, params))
        self.modern = self.modern or self.revision is None
        self._in_flight.add(request_id)
        return self._request(request_id, method, params or {})

    def finished(self, request_id: RequestId) -> None:
        """The driver is done with an accepted request (answered, or cancelled): its id may be used again."""
        self._in_flight.discard(request_id)

    def roots_request(self) -> tuple[int, dict[str, Any]]:
        """A new handshake-era ``roots/list`` request to the client: its id and the message."""
        self._next_server_id += 1
        return self._next_server_id, {"jsonrpc": "2.0", "id": self._next_server_id, "method": "roots/list"}

    def _batch(self, batch: list[Any]) -> Reply | Batch:
        if self.modern or self.revision is None or not self.revision.batches or not batch:
            reason = "an empty batch" if not batch else "JSON-RPC batches are not part of the negotiated revision"
            return Reply(error_message(None, INVALID_REQUEST, f"Invalid Request: {reason}"))
        members: list[Reply | Ready | Call | Cancel | Response | None] = []
        for message in batch:
            if isinstance(message, dict) and message.get("method") == "initialize":
                members.append(
                    Reply(error_message(id_of(message), INVALID_REQUEST, "initialize cannot be part of a batch"))
                )
            else:
                members.append(self.receive(message))
        return Batch(tuple(members))

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
            if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
                return error_message(
                    request_id, INVALID_PARAMS, "Invalid params: initialize needs params.protocolVersion"
                )
            capabilities = params.get("capabilities")
            self.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
            self.revision = negotiate(params["protocolVersion"])
            return result_message(request_id, initialize_result(self.revision))
        if method == "ping":
            return result_message(request_id, {})
        return error_message(
            request_id,
            INVALID_REQUEST,
            "Invalid Request: the server is not initialized; send initialize first (or a request carrying the "
            "2026-07-28 _meta envelope)",
        )

    def _request(self, request_id: RequestId, method: str, params: dict[str, Any]) -> Ready | Call:
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
            if method in PAGINATED_METHODS and params.get("cursor") is not None:
                # every list is one page: no cursor was ever handed out, so none is valid
                raise ProtocolError(INVALID_PARAMS, "Invalid params: unknown cursor (every list is one page)")
            if method in CALL_METHODS:
                target = _call_target(method, params, revision)
                return Call(
                    request_id=request_id,
                    method=method,
                    params=params,
                    revision=revision,
                    capabilities=capabilities,
                    target=target,
                )
            result = _result(method, revision)
        except ProtocolError as error:
            return Ready(
                request_id=request_id,
                method=method,
                message=error_message(request_id, error.code, error.message, error.data),
            )
        except Exception as exc:  # the driver logs it; the client gets no detail
            return Ready(
                request_id=request_id,
                method=method,
                message=error_message(request_id, INTERNAL_ERROR, "Internal error"),
                failure=exc,
            )
        return Ready(
            request_id=request_id, method=method, message=result_message(request_id, ordered(result, revision, method))
        )


def _notification(method: str, params: Any) -> Cancel | None:
    if method == "notifications/cancelled" and isinstance(params, dict) and valid_id(params.get("requestId")):
        return Cancel(params["requestId"])
    return None  # notifications/initialized, notifications/roots/list_changed and unknown notifications need nothing


def _call_target(method: str, params: dict[str, Any], revision: Revision) -> str:
    """The tool name or resource URI of a call, checked.

    Raises:
        ProtocolError: ``-32602`` for a missing or non-string name or URI, a tool this server does not have, or
            ``arguments`` that are neither absent, ``null`` nor an object (the specification's protocol errors, and
            the original's answers); the revision's "resource not found" for a URI that is not the skill's.
    """
    if method == "tools/call":
        name = params.get("name")
        if not isinstance(name, str):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: tools/call needs params.name (a string)")
        if load_catalog().get(name) is None:
            raise ProtocolError(INVALID_PARAMS, f"Unknown tool: {name[:200]}")
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise ProtocolError(INVALID_PARAMS, "Invalid params: tools/call arguments must be an object")
        return name
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise ProtocolError(INVALID_PARAMS, "Invalid params: resources/read needs params.uri (a string)")
    if uri != SKILL_URI:
        raise ProtocolError(revision.resource_not_found, "Resource not found", {"uri": uri[:200]})
    return uri


def _result(method: str, revision: Revision) -> dict[str, Any]:
    listed = listing(method, revision)
    if listed is not None:
        return listed
    if method == "server/discover":
        return discover_result()
    return {}  # ping


__all__ = [
    "CALL_METHODS",
    "Batch",
    "Call",
    "Cancel",
    "Decision",
    "Ready",
    "Reply",
    "Response",
    "Session",
]
