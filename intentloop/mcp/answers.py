"""The answers that need neither trio nor the service: the handshake, the tool list, discovery and JSON-RPC framing.

The session (:mod:`intentloop.mcp.session`), which both the blocking front loop and the trio server drive, and the trio
server's tool calls build their answers here. Nothing here imports trio, the service or the standard library's heavier
modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from intentloop import SERVER_NAME, __version__
from intentloop.mcp.catalog import ToolSpec, load_catalog
from intentloop.mcp.protocol import CACHEABLE_METHODS, MODERN_VERSIONS, SERVER_INFO_META_KEY, Revision
from intentloop.mcp.skill import SKILL_DESCRIPTION, SKILL_MIME_TYPE, SKILL_NAME, SKILL_TITLE, SKILL_URI

EXPERIMENTAL_CAPABILITIES: dict[str, dict[str, Any]] = {"codex/sandbox-state-meta": {}}
SERVER_TITLE = "Intent Loop"

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

CAPABILITIES: dict[str, Any] = {
    "experimental": EXPERIMENTAL_CAPABILITIES,
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}

RequestId = int | str

_encoder = msgspec.json.Encoder()
_tools: dict[tuple[bool, bool, bool, bool], list[dict[str, Any]]] = {}


def server_info(revision: Revision) -> dict[str, str]:
    """The server's ``Implementation`` object as ``revision`` defines it."""
    if revision.titles:
        return {"name": SERVER_NAME, "title": SERVER_TITLE, "version": __version__}
    return {"name": SERVER_NAME, "version": __version__}


def initialize_result(revision: Revision) -> dict[str, Any]:
    """The result of a handshake-era ``initialize`` that negotiated ``revision``."""
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": revision.version,
        "serverInfo": server_info(revision),
    }


def discover_result() -> dict[str, Any]:
    """The result of a 2026-07-28 ``server/discover`` (before :func:`ordered` adds the revision's fields)."""
    return {"capabilities": CAPABILITIES, "instructions": INSTRUCTIONS, "supportedVersions": list(MODERN_VERSIONS)}


def listing(method: str, revision: Revision) -> dict[str, Any] | None:
    """The result of a list method that needs no arguments (before :func:`ordered`), or ``None`` for other methods:
    ``tools/list``, ``resources/list`` (the skill) and ``resources/templates/list`` (none)."""
    if method == "tools/list":
        return {"tools": tools(revision)}
    if method == "resources/list":
        resource = {"description": SKILL_DESCRIPTION, "mimeType": SKILL_MIME_TYPE, "name": SKILL_NAME}
        if revision.titles:
            resource["title"] = SKILL_TITLE
        resource["uri"] = SKILL_URI
        return {"resources": [resource]}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    return None


def tools(revision: Revision) -> list[dict[str, Any]]:
    """The 15 tool objects as ``revision`` defines them (built once per shape and process)."""
    shape = (revision.annotations, revision.titles, revision.structured, revision.modern)  # modern: schema key order
    if shape not in _tools:
        catalog = load_catalog()
        _tools[shape] = [_tool(spec, catalog.envelope_schema, revision) for spec in catalog.tools]
    return _tools[shape]


def _tool(spec: ToolSpec, envelope_schema: Mapping[str, Any], revision: Revision) -> dict[str, Any]:
    tool: dict[str, Any] = {}
    if revision.annotations:
        tool["annotations"] = {**{key: spec.annotations[key] for key in sorted(spec.annotations)}}
        tool["annotations"]["title"] = spec.title
    # Schemas go out byte for byte as the earlier SDK-based server sent them: its handshake-era model moved
    # ``properties``/``required``/``type`` first, its 2026-07-28 model kept the file's order.
    order = dict if revision.modern else _schema_order
    tool["description"] = spec.description
    tool["inputSchema"] = order(spec.input_schema)
    tool["name"] = spec.name
    if revision.structured:
        tool["outputSchema"] = order(envelope_schema)
    if revision.titles:
        tool["title"] = spec.title
    return tool


def _schema_order(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool schema with ``properties``, ``required`` and ``type`` first, as the earlier (SDK-based) server sent it."""
    head = {key: schema[key] for key in ("properties", "required", "type") if key in schema}
    return {**head, **{key: value for key, value in schema.items() if key not in head}}


def ordered(result: dict[str, Any], revision: Revision, method: str) -> dict[str, Any]:
    """The result with the fields its revision adds, keys in the order MCP SDKs write them (sorted, ``_meta`` last)."""
    if revision.modern:
        result.setdefault("resultType", "complete")
        if method in CACHEABLE_METHODS:
            result.setdefault("ttlMs", 0)
            result.setdefault("cacheScope", "private")
    in_order = {key: result[key] for key in sorted(result) if key != "_meta"}
    if revision.modern:
        in_order["_meta"] = {SERVER_INFO_META_KEY: server_info(revision)}
    return in_order


def valid_id(value: object) -> bool:
    """Whether ``value`` may be a JSON-RPC request id here (a string or an integer, not a boolean)."""
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def id_of(message: object) -> RequestId | None:
    """The valid id of ``message``, else ``None`` (what an error about an unreadable request echoes)."""
    if isinstance(message, dict):
        value = message.get("id")
        if isinstance(value, int | str) and valid_id(value):
            return value
    return None


def result_message(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC result answer."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: RequestId | None, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error answer (``data`` only when given)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def encode_message(message: Any) -> bytes:
    """One outgoing message as its wire line (compact JSON, non-ASCII kept, with the newline)."""
    return _encoder.encode(message) + b"\n"


__all__ = [
    "CAPABILITIES",
    "EXPERIMENTAL_CAPABILITIES",
    "INSTRUCTIONS",
    "SERVER_TITLE",
    "RequestId",
    "discover_result",
    "encode_message",
    "error_message",
    "id_of",
    "initialize_result",
    "listing",
    "ordered",
    "result_message",
    "server_info",
    "tools",
    "valid_id",
]
