"""Validation of what an agent asks to store: opaque ids, source references, confidences, and new claims.

Why here and not in the service: the same checks guard MCP calls, imports and hook observations, and they are pure;
each raises :class:`~intentloop.errors.InvalidInputError` with the original's stable code, in the original's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from intentloop.errors import InvalidInputError
from intentloop.model.canonical import sha256_hex
from intentloop.model.claims import (
    FEEDBACK_CLASSES,
    SCOPES,
    SOURCE_KINDS,
    Claim,
    SourceRef,
    normalize_facets,
    role_for_status,
)
from intentloop.model.ids import HEX64_RE, OPAQUE_ID_RE, format_time, is_uuid, parse_time
from intentloop.model.redaction import atomic_statement, js_trim, minimal_excerpt, secret_kinds

LONG_TERM_STALE_DAYS = 90
LONG_TERM_STALE = timedelta(days=LONG_TERM_STALE_DAYS)


def is_opaque_id(value: str) -> bool:
    """``^[A-Za-z0-9_.:@-]{1,200}$`` and free of anything redaction finds, random-looking tokens included (a hook
    ``turn_id`` that fails is just not used)."""
    return bool(OPAQUE_ID_RE.match(value)) and not secret_kinds(value)


def validate_request_id(request_id: str) -> str:
    """Check a caller's request id.

    Raises:
        InvalidInputError: ``INVALID_REQUEST_ID`` when not 1–200 opaque characters; ``SENSITIVE_ID_REJECTED`` when it
            contains a credential or a random-looking token (:func:`~intentloop.model.redaction.secret_kinds`).
    """
    if not isinstance(request_id, str) or not OPAQUE_ID_RE.match(request_id):
        raise InvalidInputError("request_id must be 1-200 opaque characters", code="INVALID_REQUEST_ID")
    if secret_kinds(request_id):
        raise InvalidInputError(
            "request_id must not contain a credential or access token", code="SENSITIVE_ID_REJECTED"
        )
    return request_id


def validate_source_ref(source: SourceRef | Mapping[str, Any], allowed_kinds: Iterable[str] | None = None) -> SourceRef:
    """Normalize a source reference: ids checked, excerpt redacted and capped, absent fields omitted.

    Raises:
        InvalidInputError: ``INVALID_SOURCE`` for a kind not allowed here, neither ``event_id`` nor ``sha256``, an
            ``event_id`` outside the opaque-id charset, or ``sha256`` not 64 lowercase hex;
            ``SENSITIVE_ID_REJECTED`` for an ``event_id`` containing a credential or a random-looking token.
    """
    ref = source if isinstance(source, SourceRef) else SourceRef.from_wire(source)
    allowed = frozenset(SOURCE_KINDS if allowed_kinds is None else allowed_kinds)
    if ref.kind not in SOURCE_KINDS or ref.kind not in allowed:
        raise InvalidInputError(f"source kind {ref.kind} is not allowed for this operation", code="INVALID_SOURCE")
    if ref.event_id is None and ref.sha256 is None:
        raise InvalidInputError("source_ref requires event_id or sha256", code="INVALID_SOURCE")
    if ref.event_id is not None:
        if not OPAQUE_ID_RE.match(ref.event_id):
            raise InvalidInputError(
                "source_ref.event_id must be an opaque ID, not a path or free text", code="INVALID_SOURCE"
            )
        if secret_kinds(ref.event_id):
            raise InvalidInputError(
                "source_ref.event_id must not contain a credential or access token", code="SENSITIVE_ID_REJECTED"
            )
    if ref.sha256 is not None and not HEX64_RE.match(ref.sha256):
        raise InvalidInputError("source_ref.sha256 must be a lowercase SHA-256 value", code="INVALID_SOURCE")
    return SourceRef(kind=ref.kind, event_id=ref.event_id, sha256=ref.sha256, excerpt=minimal_excerpt(ref.excerpt))


def validate_signal_key(signal_key: str | None, statement: str) -> str:
    """The long-term signal key: the trimmed key, or ``sha256_hex(statement)`` when absent or blank.

    Raises:
        InvalidInputError: ``INVALID_SIGNAL_KEY`` when not an opaque id or SHA-256; ``SENSITIVE_ID_REJECTED`` when it
            contains a credential or a random-looking token.
    """
    key = js_trim(signal_key) if signal_key is not None else ""
    if not key:
        key = sha256_hex(statement)
    if not OPAQUE_ID_RE.match(key) and not HEX64_RE.match(key):
        raise InvalidInputError("signal_key must be an opaque ID or SHA-256 value", code="INVALID_SIGNAL_KEY")
    if secret_kinds(key):
        raise InvalidInputError(
            "signal_key must not contain a credential or access token", code="SENSITIVE_ID_REJECTED"
        )
    return key


def normalize_confidence(epistemic_status: str, confidence: float | None) -> int | float | None:
    """Inferred claims need a confidence in [0, 1]; no other status takes one. Integral values come back as ``int``.

    Raises:
        InvalidInputError: ``CONFIDENCE_REQUIRED`` (inferred without a finite value in [0, 1]) or
            ``CONFIDENCE_NOT_ALLOWED`` (any other status with a confidence).
    """
    if epistemic_status != "inferred":
        if confidence is not None:
            raise InvalidInputError("confidence is only accepted for inferred claims", code="CONFIDENCE_NOT_ALLOWED")
        return None
    if (
        confidence is None
        or isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not math.isfinite(confidence)
        or not 0 <= confidence <= 1
    ):
        raise InvalidInputError("inferred claims require confidence from 0 to 1", code="CONFIDENCE_REQUIRED")
    return int(confidence) if float(confidence).is_integer() else float(confidence)


def check_role(epistemic_status: str, role: str) -> None:
    """Check the role/status pairing of a record (an internal invariant; imports report it as ``INVALID_IMPORT``).

    Raises:
        InvalidInputError: ``INVALID_CLAIM_ROLE`` when ``role`` is not the one fixed by ``epistemic_status``.
    """
    expected = role_for_status(epistemic_status)
    if role != expected:
        raise InvalidInputError(f"{epistemic_status} claims require role={expected}", code="INVALID_CLAIM_ROLE")


def _claim_ids(values: Iterable[str], field: str) -> list[str]:
    unique: list[str] = []
    for value in values:
        if not isinstance(value, str) or not is_uuid(value):
            raise InvalidInputError(f"{field} must contain UUIDs", code="INVALID_ID")
        if value not in unique:
            unique.append(value)
    return unique


def review_after(valid_from: str) -> str:
    """``valid_from`` + 90 days: when a long-term inference goes stale."""
    return format_time(parse_time(valid_from) + LONG_TERM_STALE)


def make_claim(
    *,
    claim_id: str,
    statement: str,
    epistemic_status: str,
    source_ref: SourceRef,
    scope: str,
    facets: Iterable[str],
    now: str,
    confidence: float | None = None,
    supersedes: Iterable[str] = (),
    related_claim_ids: Iterable[str] = (),
    result_feedback_class: str | None = None,
) -> Claim:
    """Build a new claim with every rule of the model applied (role by status, facets, confidence, times).

    ``statement`` goes through :func:`~intentloop.model.redaction.atomic_statement` (idempotent on an already
    normalized statement); ``source_ref`` should come from :func:`validate_source_ref`. Explicit claims are confirmed
    ``now``; long-term inferred ones get ``review_after`` = ``now`` + 90 days.

    Raises:
        InvalidInputError: ``INVALID_STATEMENT``/``RAW_PROMPT_REJECTED``, ``INVALID_SCOPE``, ``INVALID_FACETS``,
            ``EXPLICIT_SOURCE_REQUIRED``, ``CONFIDENCE_REQUIRED``/``CONFIDENCE_NOT_ALLOWED``, ``INVALID_ID`` or
            ``INVALID_ARGUMENTS`` (unknown status or feedback class).
    """
    role = role_for_status(epistemic_status)
    text = atomic_statement(statement)
    if scope not in SCOPES:
        raise InvalidInputError(f"scope must be one of {', '.join(SCOPES)}", code="INVALID_SCOPE")
    if epistemic_status == "explicit" and source_ref.kind != "user_event":
        raise InvalidInputError(
            "new explicit claims require a direct user_event source", code="EXPLICIT_SOURCE_REQUIRED"
        )
    if result_feedback_class is not None and result_feedback_class not in FEEDBACK_CLASSES:
        raise InvalidInputError(f"unknown result_feedback_class {result_feedback_class!r}")
    normalized_confidence = normalize_confidence(epistemic_status, confidence)
    long_term_inference = scope == "long_term" and epistemic_status == "inferred"
    return Claim(
        claim_id=claim_id,
        statement=text,
        role=role,
        epistemic_status=epistemic_status,
        source_ref=source_ref,
        scope=scope,
        confidence=normalized_confidence,
        valid_from=now,
        last_confirmed=now if epistemic_status == "explicit" else None,
        supersedes=_claim_ids(supersedes, "supersedes"),
        facets=normalize_facets(facets, epistemic_status),
        related_claim_ids=_claim_ids(related_claim_ids, "related_claim_ids"),
        review_after=review_after(now) if long_term_inference else None,
        result_feedback_class=result_feedback_class,
    )


__all__ = [
    "LONG_TERM_STALE",
    "LONG_TERM_STALE_DAYS",
    "check_role",
    "is_opaque_id",
    "make_claim",
    "normalize_confidence",
    "review_after",
    "validate_request_id",
    "validate_signal_key",
    "validate_source_ref",
]
