"""The low-level MCP server of intent-loop: 15 strict tools, one resource, the envelope on every answer.

Built on ``mcp.server.Server`` rather than the high-level ``MCPServer``, which silently drops unknown keys and coerces
types. Every call's arguments are decoded strictly (the service's own decoder) *before* the project root is resolved,
so a malformed call is refused the same way whatever the host declares, and never touches storage or the client.
Arguments that are not an object reach no handler through the SDK, so a small middleware routes them here too.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from intentloop import SERVER_NAME, __version__
from intentloop.errors import IntentLoopError, InvalidInputError
from intentloop.mcp import envelope as env
from intentloop.mcp.catalog import Catalog, ToolSpec, load_catalog
from intentloop.mcp.client_roots import (
    ROOTS_TIMEOUT_S,
    client_declares_roots,
    is_modern,
    list_roots_handshake,
    roots_from_responses,
    roots_input_request,
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
    SKILL_DESCRIPTION,
    SKILL_MIME_TYPE,
    SKILL_NAME,
    SKILL_TITLE,
    SKILL_URI,
    read_skill,
)

logger = logging.getLogger(__name__)

EXPERIMENTAL_CAPABILITIES: dict[str, dict[str, Any]] = {"codex/sandbox-state-meta": {}}
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for resources/read of an unknown or missing resource

INSTRUCTIONS = """\
Intent Loop keeps a local, inspectable record of what the user of this session actually wants: outcomes, constraints, \
unknowns and disagreements, each with its epistemic status and source. It stores and projects intent; it does no task \
work.
- Record sparingly: when the user invokes Intent Loop (/intent start|show|correct|feedback|forget|export|off), or when \
a costly, divergent ambiguity about the user's intent is worth writing down. Otherwise stay silent.
- intent_add_explicit is only for the user's own direct or confirmed words (source_ref.kind user_event). Your \
inferences go through intent_add_inference with a confidence, tool output and results through intent_add_evidence. \
Never treat inferred or evidence records as the user's words.
- A statement is one atomic line. Never paste prompts, transcripts, file contents or secrets.
- Every mutation takes a request_id; to retry, repeat the same request_id with identical arguments.
- Project: with Codex the sandbox working directory decides; elsewhere pass project_root (an absolute path) unless \
the client advertises exactly one root.
- Pass host_session_id only when the Intent Loop runtime context gave it to you; keep it and task ids internal.
- Every answer is one envelope {ok, schema_version, operation, project_id, task_id, result | error}; on ok=false read \
error.code and retry only when error.retryable is true.
- The resource intent-loop://skill/intent is the full usage guide."""

# Set by the middleware when tools/call carried non-object ``arguments``: the JSON type name it found.
_NON_OBJECT_ARGUMENTS: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "intentloop_non_object_arguments", default=None
)


Decode = Callable[[str, Any], object]


class ToolService(Protocol):
    """What the server needs from the service layer (``intentloop.service.IntentService`` provides it)."""

    async def dispatch(self, tool: str, arguments: dict[str, Any], *, project_root: str, project_id: str) -> Any:
        """Decode ``arguments`` strictly and run ``tool`` for the project.

        Raises:
            IntentLoopError: any refusal, with its stable code.
        """
        ...


class IntentLoopServer(Server[Any]):
    """``Server`` whose initialization options always advertise ``codex/sandbox-state-meta``.

    Overriding the factory (rather than passing the capability at one call site) makes every transport that builds
    its own options — stdio here, the SDK's in-memory transport in tests — advertise the same capabilities.
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        merged = {**EXPERIMENTAL_CAPABILITIES, **(experimental_capabilities or {})}
        return super().create_initialization_options(notification_options, merged, extensions)


async def _arguments_shape_middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Let ``tools/call`` with non-object ``arguments`` reach the handler, which answers with the envelope."""
    params = ctx.params
    if ctx.method == "tools/call" and isinstance(params, Mapping):
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, Mapping):
            token = _NON_OBJECT_ARGUMENTS.set(env.json_type(arguments))
            try:
                return await call_next(dataclasses.replace(ctx, params={**params, "arguments": None}))
            finally:
                _NON_OBJECT_ARGUMENTS.reset(token)
    return await call_next(ctx)


def _tool_result(envelope: env.Envelope) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=env.envelope_text(envelope))],
        structured_content=envelope,
        is_error=not envelope["ok"],
    )


def _request_meta(ctx: ServerRequestContext[Any, Any]) -> Mapping[str, Any] | None:
    if ctx.meta is not None:
        return ctx.meta
    raw = ctx.params.get("_meta") if isinstance(ctx.params, Mapping) else None
    return raw if isinstance(raw, Mapping) else None


class _Handlers:
    """The request handlers, closed over one service and its configuration."""

    def __init__(
        self,
        service: ToolService,
        catalog: Catalog,
        decode: Decode,
        canonicalize: Canonicalize,
        skill_paths: Sequence[Path] | None,
        roots_timeout: float,
    ) -> None:
        self.server: Server[Any] | None = None
        self.service = service
        self.decode = decode
        self.catalog = catalog
        self.canonicalize = canonicalize
        self.skill_paths = skill_paths
        self.roots_timeout = roots_timeout
        self.tools = types.ListToolsResult(tools=[self._tool(spec) for spec in catalog.tools])

    def _tool(self, spec: ToolSpec) -> types.Tool:
        hints = spec.annotations
        return types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=dict(spec.input_schema),
            output_schema=dict(self.catalog.envelope_schema),
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=hints["readOnlyHint"],
                destructive_hint=hints["destructiveHint"],
                idempotent_hint=hints["idempotentHint"],
                open_world_hint=hints["openWorldHint"],
            ),
        )

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return self.tools

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        arguments: dict[str, Any] = dict(params.arguments or {})
        spec = self.catalog.get(name)
        if spec is None:
            return _tool_result(env.failure(name, None, {}, InvalidInputError(f"Unknown tool `{name[:200]}`")))
        bad_type = _NON_OBJECT_ARGUMENTS.get()
        if bad_type is not None:
            return _tool_result(env.failure(name, None, {}, InvalidInputError(f"Expected `object`, got `{bad_type}`")))
        try:
            self.decode(name, arguments)
            resolved = await self._resolve_root(ctx, params, arguments)
        except IntentLoopError as error:
            return _tool_result(env.failure(name, None, arguments, error))
        if isinstance(resolved, types.InputRequiredResult):
            return resolved
        service_arguments = {key: value for key, value in arguments.items() if key != "project_root"}
        try:
            result = await self.service.dispatch(
                name, service_arguments, project_root=resolved.root, project_id=resolved.project_id
            )
        except IntentLoopError as error:
            return _tool_result(env.failure(name, resolved.project_id, arguments, error))
        except Exception:
            logger.exception("%s failed unexpectedly", name)
            return _tool_result(env.internal_failure(name, resolved.project_id, arguments))
        return _tool_result(env.success(name, resolved.project_id, arguments, result))

    async def _resolve_root(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams, arguments: Mapping[str, Any]
    ) -> ResolvedRoot | types.InputRequiredResult:
        declared = resolve_declared(_request_meta(ctx), arguments, self.canonicalize)
        if declared is not None:
            return declared
        if is_modern(ctx):
            uris = roots_from_responses(params)
            if uris is None:
                if not client_declares_roots(ctx):
                    raise root_required()
                return roots_input_request()
        else:
            uris = await list_roots_handshake(ctx, self.roots_timeout)
        path = single_local_root(uris)
        if path is None:
            raise root_required()
        return canonical(path, self.canonicalize, "client_roots")

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=SKILL_URI,
                    name=SKILL_NAME,
                    title=SKILL_TITLE,
                    description=SKILL_DESCRIPTION,
                    mime_type=SKILL_MIME_TYPE,
                )
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != SKILL_URI:
            raise MCPError(code=RESOURCE_NOT_FOUND, message="Resource not found", data={"uri": str(params.uri)[:200]})
        try:
            text = read_skill(self.skill_paths)
        except IntentLoopError as error:
            raise MCPError(
                code=RESOURCE_NOT_FOUND, message=f"{error.code}: {error.message}", data=error.to_dict()
            ) from error
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=SKILL_URI, mime_type=SKILL_MIME_TYPE, text=text)]
        )

    async def discover(self, ctx: ServerRequestContext[Any, Any], params: types.RequestParams) -> types.DiscoverResult:
        """``server/discover`` as the SDK answers it, plus the experimental capability the default leaves out."""
        server = self.server
        assert server is not None, "discover is registered only after the server exists"
        return types.DiscoverResult(
            supported_versions=list(MODERN_PROTOCOL_VERSIONS),
            capabilities=server.get_capabilities(
                NotificationOptions(), dict(EXPERIMENTAL_CAPABILITIES), protocol_version=ctx.protocol_version
            ),
            instructions=server.instructions,
        )


def build_server(
    service: ToolService,
    *,
    decode: Decode | None = None,
    canonicalize: Canonicalize = default_canonicalize,
    skill_paths: Sequence[Path] | None = None,
    roots_timeout: float = ROOTS_TIMEOUT_S,
) -> IntentLoopServer:
    """The intent-loop MCP server over ``service``.

    Args:
        service: runs the tools (``intentloop.service.IntentService`` in production).
        decode: strict argument check run before the root is resolved; raises ``INVALID_ARGUMENTS`` naming the
            field (default: ``intentloop.service.decode_arguments``, the decoder the service itself uses).
        canonicalize: turns a raw root into a canonical one (``intentloop.store.canonicalize_project_root``).
        skill_paths: where to look for ``SKILL.md`` (default: next to the package, then the install's share dir).
        roots_timeout: seconds to wait for a handshake-era client to answer ``roots/list``.
    """
    if decode is None:
        from intentloop.service import decode_arguments

        decode = decode_arguments
    handlers = _Handlers(service, load_catalog(), decode, canonicalize, skill_paths, roots_timeout)
    server = IntentLoopServer(
        SERVER_NAME,
        version=__version__,
        title="Intent Loop",
        instructions=INSTRUCTIONS,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_read_resource=handlers.read_resource,
    )
    handlers.server = server
    server.add_request_handler("server/discover", types.RequestParams, handlers.discover)
    server.middleware.append(_arguments_shape_middleware)
    return server


__all__ = ["EXPERIMENTAL_CAPABILITIES", "INSTRUCTIONS", "IntentLoopServer", "ToolService", "build_server"]
