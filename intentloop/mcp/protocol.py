"""The MCP revisions this server speaks, and what each one knows: one table for every era-dependent decision.

Two eras share the stdio transport. The handshake era (2024-11-05 … 2025-11-25) opens with ``initialize``; the
2026-07-28 revision has no handshake: every request carries its protocol version and client capabilities in
``params._meta``, and ``server/discover`` tells a client what the server speaks. A revision is never sent a field
it does not define: titles, output schemas and ``structuredContent`` appeared in 2025-06-18, tool annotations in
2025-03-26 (the only revision with JSON-RPC batches), ``resultType``, cache hints and the ``serverInfo`` stamp in
2026-07-28, which also moved "resource not found" from ``-32002`` to ``-32602``.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

# JSON-RPC 2.0 and MCP error codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
LEGACY_RESOURCE_NOT_FOUND: Final = -32002  # up to 2025-11-25
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022  # 2026-07-28

# The 2026-07-28 per-request envelope (``params._meta``) and the result stamp.
PROTOCOL_VERSION_META_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY: Final = "io.modelcontextprotocol/clientInfo"
SERVER_INFO_META_KEY: Final = "io.modelcontextprotocol/serverInfo"


class Revision(msgspec.Struct, frozen=True, kw_only=True):
    """What one protocol revision defines, as far as this server's answers are concerned.

    Attributes:
        version: the revision's date string.
        modern: per-request ``_meta`` envelope and ``server/discover`` instead of the ``initialize`` handshake.
        annotations: ``Tool.annotations`` exists.
        titles: ``title`` exists on tools, resources and the server's ``Implementation``.
        structured: ``Tool.outputSchema`` and ``CallToolResult.structuredContent`` exist.
        batches: JSON-RPC batch arrays must be accepted.
        resource_not_found: the error code of ``resources/read`` for an unknown URI.
    """

    version: str
    modern: bool = False
    annotations: bool = True
    titles: bool = True
    structured: bool = True
    batches: bool = False
    resource_not_found: int = LEGACY_RESOURCE_NOT_FOUND


REVISIONS: Final[dict[str, Revision]] = {
    revision.version: revision
    for revision in (
        Revision(version="2024-11-05", annotations=False, titles=False, structured=False),
        Revision(version="2025-03-26", titles=False, structured=False, batches=True),
        Revision(version="2025-06-18"),
        Revision(version="2025-11-25"),
        Revision(version="2026-07-28", modern=True, resource_not_found=INVALID_PARAMS),
    )
}
HANDSHAKE_VERSIONS: Final = tuple(version for version, revision in REVISIONS.items() if not revision.modern)
MODERN_VERSIONS: Final = tuple(version for version, revision in REVISIONS.items() if revision.modern)
LATEST_HANDSHAKE: Final = HANDSHAKE_VERSIONS[-1]

# Methods each era serves (notifications are handled separately). ``ping`` belongs to the handshake era only.
HANDSHAKE_METHODS: Final = frozenset(
    {"initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read"}
)
MODERN_METHODS: Final = frozenset(
    {"server/discover", "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read"}
)
# The paginated list methods: each answer is one page, so any ``cursor`` sent to them is invalid (-32602).
PAGINATED_METHODS: Final = frozenset({"tools/list", "resources/list", "resources/templates/list"})
# 2026-07-28 results that carry the cache hints ``ttlMs`` and ``cacheScope``.
CACHEABLE_METHODS: Final = frozenset(
    {"server/discover", "tools/list", "resources/list", "resources/templates/list", "resources/read"}
)


def negotiate(requested: object) -> Revision:
    """The handshake revision to answer ``initialize`` with: the one asked for, else the latest handshake one."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return REVISIONS[requested]
    return REVISIONS[LATEST_HANDSHAKE]


def has_modern_envelope(params: object) -> bool:
    """Whether a request's ``params._meta`` carries the 2026-07-28 protocol-version key (the era's only signal)."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


class ProtocolError(Exception):
    """A JSON-RPC error answer: ``code``, ``message`` and optional ``data``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def check_modern_envelope(params: object) -> tuple[Revision, dict[str, Any]]:
    """The revision and client capabilities a 2026-07-28 request declares.

    Raises:
        ProtocolError: ``-32602`` when ``_meta`` lacks the version or the capabilities (or the version is not a
            string), ``-32022`` naming the supported versions when the version is not served here.
    """
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise ProtocolError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying {PROTOCOL_VERSION_META_KEY!r} and "
            f"{CLIENT_CAPABILITIES_META_KEY!r}",
        )
    missing = [key for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if key not in meta]
    if missing:
        raise ProtocolError(INVALID_PARAMS, f"params._meta is missing {', '.join(repr(key) for key in missing)}")
    version = meta[PROTOCOL_VERSION_META_KEY]
    if not isinstance(version, str):
        raise ProtocolError(INVALID_PARAMS, f"{PROTOCOL_VERSION_META_KEY!r} must be a string")
    if version not in MODERN_VERSIONS:
        raise ProtocolError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )
    capabilities = meta[CLIENT_CAPABILITIES_META_KEY]
    return REVISIONS[version], capabilities if isinstance(capabilities, dict) else {}


__all__ = [
    "CACHEABLE_METHODS",
    "CLIENT_CAPABILITIES_META_KEY",
    "CLIENT_INFO_META_KEY",
    "HANDSHAKE_METHODS",
    "HANDSHAKE_VERSIONS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_HANDSHAKE",
    "LEGACY_RESOURCE_NOT_FOUND",
    "METHOD_NOT_FOUND",
    "MODERN_METHODS",
    "MODERN_VERSIONS",
    "PAGINATED_METHODS",
    "PARSE_ERROR",
    "PROTOCOL_VERSION_META_KEY",
    "REVISIONS",
    "SERVER_INFO_META_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "ProtocolError",
    "Revision",
    "check_modern_envelope",
    "has_modern_envelope",
    "negotiate",
]
