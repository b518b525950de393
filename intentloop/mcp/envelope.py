"""The one answer shape of every tool call, success or failure.

``{"ok", "schema_version": 1, "operation", "project_id", "task_id", "result" | "error": {code, message, retryable}}``
goes out both as ``structuredContent`` and as the JSON text block. Building it never raises: a result that cannot be
converted to JSON becomes an ``INTERNAL_ERROR`` envelope, so the client's output-schema check always passes.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import msgspec

from intentloop import SCHEMA_VERSION
from intentloop.errors import IntentLoopError
from intentloop.service.args import UUID_PATTERN

logger = logging.getLogger(__name__)

# The published task_id pattern: any RFC-variant UUID plus the nil and max UUIDs. Only a task_id argument of this
# shape is echoed, so an envelope never repeats an arbitrary string an agent put in the wrong field.
_ECHOABLE_TASK_ID = re.compile(rf"\A(?:{UUID_PATTERN.removeprefix('^').removesuffix('$')})\Z")
_MAX_OPERATION_CHARS = 200
INTERNAL_MESSAGE = "internal error; the server log has the details"

_json_encoder = msgspec.json.Encoder()

Envelope = dict[str, Any]


def json_type(value: object) -> str:
    """The JSON type name of a decoded value, in msgspec's wording (``str``, ``int``, ``array``, ``object`` ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def task_id_for(arguments: object, result: object = None) -> str | None:
    """The envelope's ``task_id``: the ``task_id`` argument, else ``result.task_id``, else ``None``."""
    if isinstance(arguments, dict):
        candidate = arguments.get("task_id")
        if isinstance(candidate, str) and _ECHOABLE_TASK_ID.match(candidate):
            return candidate
    if isinstance(result, dict):
        candidate = result.get("task_id")
        if isinstance(candidate, str):
            return candidate
    return None


def _operation(name: str) -> str:
    return name if len(name) <= _MAX_OPERATION_CHARS else name[:_MAX_OPERATION_CHARS]


def success(operation: str, project_id: str | None, arguments: object, result: object) -> Envelope:
    """A success envelope; ``result`` may be a msgspec Struct, a dict, a list or a scalar.

    Falls back to :func:`failure` with ``INTERNAL_ERROR`` when ``result`` cannot be expressed as JSON.
    """
    try:
        plain = msgspec.to_builtins(result)
        _json_encoder.encode(plain)
    except (TypeError, ValueError, OverflowError):
        logger.exception("%s returned a result that is not JSON", operation)
        return failure(operation, project_id, arguments, IntentLoopError(INTERNAL_MESSAGE))
    return {
        "ok": True,
        "schema_version": SCHEMA_VERSION,
        "operation": _operation(operation),
        "project_id": project_id,
        "task_id": task_id_for(arguments, plain),
        "result": plain,
    }


def failure(operation: str, project_id: str | None, arguments: object, error: IntentLoopError) -> Envelope:
    """A failure envelope carrying the error's stable code, message and retryability."""
    return {
        "ok": False,
        "schema_version": SCHEMA_VERSION,
        "operation": _operation(operation),
        "project_id": project_id,
        "task_id": task_id_for(arguments),
        "error": {"code": error.code, "message": str(error.message), "retryable": bool(error.retryable)},
    }


def internal_failure(operation: str, project_id: str | None, arguments: object) -> Envelope:
    """The envelope for an unexpected exception: a fixed message, never a traceback or the exception's text."""
    return failure(operation, project_id, arguments, IntentLoopError(INTERNAL_MESSAGE))


def envelope_text(envelope: Envelope) -> str:
    """The JSON text block: compact, keys in envelope order, non-ASCII kept as is."""
    return _json_encoder.encode(envelope).decode("utf-8")


__all__ = [
    "INTERNAL_MESSAGE",
    "Envelope",
    "envelope_text",
    "failure",
    "internal_failure",
    "json_type",
    "success",
    "task_id_for",
]
