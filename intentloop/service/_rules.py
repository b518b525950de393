"""Service-side glue over the model's validation: anchored id checks, source conversion, fingerprint inputs.

The model's checks (``intentloop.model.validation``) do the work; this module only adapts the strict argument
structs to them and closes one gap: Python's ``$`` (used by the published patterns) accepts a trailing newline.
"""

from __future__ import annotations

from typing import Any

import msgspec

from intentloop.errors import InvalidInputError
from intentloop.model import (
    SourceRef,
    is_uuid,
    redact,
    validate_request_id,
    validate_source_ref,
)
from intentloop.service.args import SourceRefArg

# Operation names of the request fingerprints (docs/EVENTS.md), exactly as the original hashes them.
OP_START = "start_task"
OP_SET_MODE = "set_mode"
OP_INVALIDATE = "invalidate_claim"
OP_LONG_TERM = "long_term_inference"
OP_IMPORT = "import_graph"


def check_uuid(value: str, field: str) -> str:
    """Raises: InvalidInputError ``INVALID_ID`` unless ``value`` is an RFC 9562 UUID (versions 1–8)."""
    if not is_uuid(value):
        raise InvalidInputError(f"{field} must be a UUID", code="INVALID_ID")
    return value


def check_request_id(value: str) -> str:
    """Raises: InvalidInputError ``INVALID_REQUEST_ID`` or ``SENSITIVE_ID_REJECTED``."""
    return validate_request_id(value)


def source_ref(arg: SourceRefArg, allowed: frozenset[str] | None = None) -> SourceRef:
    """The stored form of an inbound source reference (ids checked, excerpt redacted and capped).

    Raises:
        InvalidInputError: ``INVALID_SOURCE`` or ``SENSITIVE_ID_REJECTED``.
    """
    data: dict[str, Any] = msgspec.to_builtins(arg)
    return validate_source_ref(data, allowed)


def redact_text(text: str) -> str:
    """Credential redaction only (no trimming, no limits): the normalization of texts inside fingerprints."""
    return redact(text).text


def claim_fingerprint_input(claim: dict[str, Any], *, require_long_term_candidate: bool) -> dict[str, Any]:
    """The normalized input of a ``claim_added``/``claim_replaced`` fingerprint, from the wire claim."""
    normalized = {
        "statement": claim.get("statement"),
        "role": claim.get("role"),
        "epistemic_status": claim.get("epistemic_status"),
        "source_ref": claim.get("source_ref"),
        "scope": claim.get("scope"),
        "confidence": claim.get("confidence"),
        "supersedes": claim.get("supersedes"),
        "facets": claim.get("facets"),
        "related_claim_ids": claim.get("related_claim_ids"),
        "result_feedback_class": claim.get("result_feedback_class"),
        "require_long_term_candidate": require_long_term_candidate,
    }
    evidence = claim.get("evidence_file")
    if isinstance(evidence, dict):  # intentloop's own; the path only, so a retry after the file changed still matches
        normalized["evidence_path"] = evidence.get("path")
    return normalized


def start_fingerprint_input(
    task_id: str, mode: Any, label: Any, host_session_hash: Any, initial_claims: list[Any]
) -> dict[str, Any]:
    """The normalized input of a ``start_task`` fingerprint (also used by re-associating ``mode_set`` events)."""
    return {
        "task_id": task_id,
        "mode": mode,
        "label": label,
        "host_session_hash": host_session_hash,
        "initial_explicit": [
            {"statement": c.get("statement"), "scope": c.get("scope"), "facets": c.get("facets")}
            for c in initial_claims
            if isinstance(c, dict)
        ],
    }


__all__ = [
    "OP_IMPORT",
    "OP_INVALIDATE",
    "OP_LONG_TERM",
    "OP_SET_MODE",
    "OP_START",
    "check_request_id",
    "check_uuid",
    "claim_fingerprint_input",
    "redact_text",
    "source_ref",
    "start_fingerprint_input",
]
