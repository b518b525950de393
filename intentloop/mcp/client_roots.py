"""Asking the MCP client for its roots (step 3 of the project-root order), in both protocol eras.

Handshake era: a server-to-client ``roots/list`` request, sent only when the client declared the roots capability and
bounded by a timeout, so a client that never answers cannot make a call hang. 2026-07-28 era: the server cannot call
the client, so the call answers ``InputRequiredResult`` and the client retries it with the roots attached.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

logger = logging.getLogger(__name__)

ROOTS_TIMEOUT_S = 2.0
# The key under which the modern-era input request travels; the client echoes it in ``inputResponses``.
ROOTS_INPUT_KEY = "intent_loop_roots"


def client_declares_roots(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the client declared the roots capability (at the handshake, or in this request's envelope)."""
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.roots is not None


def is_modern(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request arrived on a 2026-07-28 (no back-channel) connection."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def roots_from_responses(params: types.CallToolRequestParams) -> list[str] | None:
    """Root URIs the client attached to a modern-era retry, or ``None`` when it attached none."""
    responses = params.input_responses or {}
    answer = responses.get(ROOTS_INPUT_KEY)
    roots = getattr(answer, "roots", None)
    if roots is None:
        return None
    return [str(root.uri) for root in roots]


def roots_input_request() -> types.InputRequiredResult:
    """The modern-era answer that asks the client to retry the call with its roots."""
    return types.InputRequiredResult(input_requests={ROOTS_INPUT_KEY: types.ListRootsRequest()})


async def list_roots_handshake(ctx: ServerRequestContext[Any, Any], timeout: float = ROOTS_TIMEOUT_S) -> list[str]:
    """Root URIs from a handshake-era ``roots/list`` request; ``[]`` when the client cannot or does not answer.

    The request goes through ``send_request`` rather than the deprecated ``list_roots`` helper, so no deprecation
    warning is raised (and none can reach a terminal or the wire).
    """
    if not client_declares_roots(ctx):
        return []
    with anyio.move_on_after(timeout):
        try:
            result = await ctx.session.send_request(
                types.ListRootsRequest(), types.ListRootsResult, request_read_timeout_seconds=timeout
            )
        except Exception as exc:  # a client error, a malformed answer or a closed channel all mean "no roots"
            logger.debug("roots/list failed: %s", type(exc).__name__)
            return []
        return [str(root.uri) for root in result.roots]
    logger.debug("roots/list did not answer within %.1f s", timeout)
    return []


__all__ = [
    "ROOTS_INPUT_KEY",
    "ROOTS_TIMEOUT_S",
    "client_declares_roots",
    "is_modern",
    "list_roots_handshake",
    "roots_from_responses",
    "roots_input_request",
]
