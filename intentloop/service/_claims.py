"""The claim operations: add explicit / inference / evidence, mark unknown / dispute, replace, invalidate.

Everything that depends only on the input is checked before the lock (a rejected call costs no I/O); the checks that
need the task's current state run inside :func:`~intentloop.service._transaction.semantic_write`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from intentloop.errors import ConflictError, IntentLoopError, InvalidInputError
from intentloop.model import (
    Claim,
    EventDraft,
    EvidenceFile,
    TaskState,
    allowed_source_kinds,
    atomic_statement,
    make_claim,
    new_uuid,
    normalize_facets,
    request_fingerprint,
    utc_now,
    validate_signal_key,
)
from intentloop.model.redaction import js_trim
from intentloop.service._evidence import bind_evidence_file
from intentloop.service._rules import (
    OP_INVALIDATE,
    OP_LONG_TERM,
    check_request_id,
    check_uuid,
    claim_fingerprint_input,
    source_ref,
)
from intentloop.service._state import Ctx, Engine, signal_task_ids
from intentloop.service._transaction import semantic_write
from intentloop.service.args import (
    AddEvidenceArgs,
    AddExplicitArgs,
    AddInferenceArgs,
    ClaimBaseArgs,
    InvalidateArgs,
    MarkDisputeArgs,
    MarkUnknownArgs,
    ReplaceClaimArgs,
    opt,
)
from intentloop.store import LedgerView


def _claim_ids(values: list[str], field: str) -> list[str]:
    return list(dict.fromkeys(check_uuid(v, field) for v in values))


async def add_claim(
    engine: Engine,
    ctx: Ctx,
    args: ClaimBaseArgs,
    *,
    status: str,
    allowed_sources: frozenset[str],
    confidence: float | None = None,
    supersedes: list[str] | None = None,
    related: list[str] | None = None,
    feedback_class: str | None = None,
    require_long_term_candidate: bool = False,
    event_type: str = "claim_added",
    evidence_file: EvidenceFile | None = None,
) -> dict[str, Any]:
    """The shared body of the five claim-adding tools and replace; returns the wire claim.

    Raises:
        IntentLoopError: the validation codes of the model, ``LONG_TERM_CONFIRMATION_REQUIRED``, ``CLAIM_NOT_ACTIVE``,
            ``EXPLICIT_REPLACEMENT_REQUIRES_USER``, ``RELATED_CLAIM_NOT_FOUND`` and those of :func:`semantic_write`.
    """
    task_id = check_uuid(args.task_id, "task_id")
    request_id = check_request_id(args.request_id)
    source = source_ref(args.source_ref, allowed_sources)
    claim = make_claim(
        claim_id=new_uuid(),
        statement=args.statement,
        epistemic_status=status,
        source_ref=source,
        scope=args.scope,
        facets=args.facets,
        now=utc_now(),
        confidence=confidence,
        supersedes=_claim_ids(supersedes or [], "supersedes"),
        related_claim_ids=_claim_ids(related or [], "related_claim_ids"),
        result_feedback_class=feedback_class,
    )
    if evidence_file is not None:
        claim = msgspec.structs.replace(claim, evidence_file=evidence_file)
    wire = claim.to_wire()
    fingerprint = request_fingerprint(
        event_type, claim_fingerprint_input(wire, require_long_term_candidate=require_long_term_candidate)
    )

    def decide(task: TaskState, _view: Callable[[], LedgerView]) -> list[EventDraft]:
        if require_long_term_candidate and not any(
            c.candidate_type == "long_term_preference" and len(c.task_ids or ()) >= 3 for c in task.candidates
        ):
            raise ConflictError(
                "no three-task long-term candidate is eligible for confirmation",
                code="LONG_TERM_CONFIRMATION_REQUIRED",
            )
        _check_targets(task, claim, lambda claim_id: peer_target(ctx, claim_id))
        payload = {"claim": wire, "request_fingerprint": fingerprint}
        return [
            EventDraft(event_type=event_type, task_id=task_id, actor=claim.role, request_id=request_id, payload=payload)
        ]

    event = await semantic_write(engine, ctx, task_id, request_id, (event_type,), fingerprint, decide)
    stored = event.payload.get("claim")
    if not isinstance(stored, dict):
        raise ConflictError("request_id was already used for another operation", code="REQUEST_ID_REUSED")
    return stored


def peer_target(ctx: Ctx, claim_id: str) -> Claim | None:
    """The active claim ``claim_id`` of the shared project's combined view (a peer claim as a snapshot with
    ``include_peers`` shows it), which a supersession or invalidation may name (docs/SYNC.md, "Teams: whose words
    and disagreements"); ``None`` when there is none."""
    from intentloop.service._share import peer_claim

    found = peer_claim(ctx.store.data_root, ctx.project_root, ctx.project_id, claim_id)
    return None if found is None else found.claim


def _named(task: TaskState, claim_id: str) -> bool:
    """Whether the task holds, supersedes or invalidates ``claim_id`` (then it is no peer claim to name again)."""
    return claim_id in task.claims or claim_id in task.superseded_by or claim_id in task.invalidations


def _active_target(task: TaskState, claim_id: str, peer: Callable[[str], Claim | None]) -> Claim | None:
    """The active claim ``claim_id`` a supersession or invalidation names: the task's, or the combined view's
    (``peer``) when the task neither holds it nor already superseded or invalidated it; ``None`` when neither."""
    if task.is_active(claim_id):
        return task.claims[claim_id]
    return None if _named(task, claim_id) else peer(claim_id)


def _check_targets(task: TaskState, claim: Claim, peer: Callable[[str], Claim | None]) -> None:
    """Every superseded id is an active claim of the task, or of the combined view (``peer``) when the task does not
    hold it; related ids are claims of the task."""
    for target_id in claim.supersedes:
        target = _active_target(task, target_id, peer)
        if target is None:
            raise ConflictError(f"superseded claim {target_id} is not active in this task", code="CLAIM_NOT_ACTIVE")
        if target.is_user_explicit and not claim.is_direct_user_explicit:
            raise ConflictError(
                "a user-explicit claim can only be superseded by a new direct user-explicit claim",
                code="EXPLICIT_REPLACEMENT_REQUIRES_USER",
            )
    for related_id in claim.related_claim_ids:
        if related_id not in task.claims:
            raise IntentLoopError(
                f"related claim {related_id} does not exist in this task", code="RELATED_CLAIM_NOT_FOUND"
            )


async def add_explicit(engine: Engine, ctx: Ctx, args: AddExplicitArgs) -> dict[str, Any]:
    return await add_claim(
        engine,
        ctx,
        args,
        status="explicit",
        allowed_sources=allowed_source_kinds("add_explicit"),
        require_long_term_candidate=args.scope == "long_term" and args.confirmation_reason == "confirmed_candidate",
    )


async def add_inference(engine: Engine, ctx: Ctx, args: AddInferenceArgs) -> dict[str, Any]:
    if args.scope != "long_term":
        return await add_claim(
            engine,
            ctx,
            args,
            status="inferred",
            allowed_sources=allowed_source_kinds("add_inference"),
            confidence=args.confidence,
        )
    return await _long_term_inference(engine, ctx, args)


async def _long_term_inference(engine: Engine, ctx: Ctx, args: AddInferenceArgs) -> dict[str, Any]:
    """A long-term inference never becomes a claim: it is a candidate counting the distinct tasks with its signal."""
    source = source_ref(args.source_ref, allowed_source_kinds("long_term_inference"))
    statement = atomic_statement(args.statement)
    task_id = check_uuid(args.task_id, "task_id")
    request_id = check_request_id(args.request_id)
    signal_key = validate_signal_key(opt(args.signal_key), statement)
    source_wire = source.to_wire()
    facets = normalize_facets(args.facets, "inferred")
    fingerprint = request_fingerprint(
        OP_LONG_TERM,
        {
            "statement": statement,
            "source_ref": source_wire,
            "scope": args.scope,
            "confidence": args.confidence,
            "facets": facets,
            "signal_key": signal_key,
        },
    )

    def decide(task: TaskState, view: Callable[[], LedgerView]) -> list[EventDraft]:
        task_ids = sorted(signal_task_ids(view().of_types(("candidate_added",)), signal_key) | {task_id})
        candidate = {
            "candidate_id": new_uuid(),
            "candidate_type": "long_term_preference",
            "source_ref": source_wire,
            "created_at": utc_now(),
            "summary": statement,
            "task_ids": task_ids,
        }
        payload = {
            "candidate": candidate,
            "signal_key": signal_key,
            "confidence": args.confidence,
            "eligible_for_confirmation": len(task_ids) >= 3,
            "request_fingerprint": fingerprint,
        }
        return [
            EventDraft(
                event_type="candidate_added", task_id=task_id, actor="agent", request_id=request_id, payload=payload
            )
        ]

    event = await semantic_write(engine, ctx, task_id, request_id, ("candidate_added",), fingerprint, decide)
    stored = event.payload.get("candidate")
    if not isinstance(stored, dict):
        raise ConflictError("request_id was already used for another operation", code="REQUEST_ID_REUSED")
    return stored


async def add_evidence(engine: Engine, ctx: Ctx, args: AddEvidenceArgs) -> dict[str, Any]:
    """An evidence claim; with ``evidence_path``, bound to that project file's current SHA-256 (hashed off-thread).

    Raises:
        IntentLoopError: those of :func:`add_claim`, ``PATH_ESCAPE`` and ``INVALID_EVIDENCE_PATH``.
    """
    path = opt(args.evidence_path)
    bound = None if path is None else await bind_evidence_file(ctx.project_root, path)
    return await add_claim(
        engine,
        ctx,
        args,
        status="evidence",
        allowed_sources=allowed_source_kinds("add_evidence"),
        feedback_class=opt(args.feedback_class),
        evidence_file=bound,
    )


async def mark_unknown(engine: Engine, ctx: Ctx, args: MarkUnknownArgs) -> dict[str, Any]:
    return await add_claim(engine, ctx, args, status="unknown", allowed_sources=allowed_source_kinds("mark_unknown"))


async def mark_dispute(engine: Engine, ctx: Ctx, args: MarkDisputeArgs) -> dict[str, Any]:
    if len(args.related_claim_ids) < 2 and not js_trim(args.statement):
        raise InvalidInputError(
            "a dispute requires two related claims or a free-standing statement", code="INVALID_DISPUTE"
        )
    return await add_claim(
        engine,
        ctx,
        args,
        status="disputed",
        allowed_sources=allowed_source_kinds("mark_dispute"),
        related=list(args.related_claim_ids),
    )


async def replace_claim(engine: Engine, ctx: Ctx, args: ReplaceClaimArgs) -> dict[str, Any]:
    """Supersede active claims with a corrected one (pre-checks in the original's order)."""
    kind = args.replacement_kind
    confidence = opt(args.confidence)
    reason = opt(args.confirmation_reason)
    if kind == "explicit" and (args.source_ref.kind != "user_event" or reason is None):
        raise InvalidInputError(
            "explicit replacement requires a user_event and confirmation reason", code="EXPLICIT_SOURCE_REQUIRED"
        )
    if kind == "inferred":
        if confidence is None:
            raise InvalidInputError("inferred replacement requires confidence", code="CONFIDENCE_REQUIRED")
        if args.scope == "long_term":
            raise ConflictError(
                "long-term inferences must remain candidates until user confirmation",
                code="LONG_TERM_CONFIRMATION_REQUIRED",
            )
    elif confidence is not None:
        raise InvalidInputError("confidence is only accepted for inferred claims", code="CONFIDENCE_NOT_ALLOWED")
    if not args.supersedes:
        raise InvalidInputError("replace requires at least one active claim ID", code="REPLACEMENT_TARGET_REQUIRED")
    return await add_claim(
        engine,
        ctx,
        args,
        status=kind,
        allowed_sources=allowed_source_kinds("replace_claim"),
        confidence=confidence,
        supersedes=list(args.supersedes),
        related=list(args.related_claim_ids),
        # Stricter than the original, which let a replacement skip the three-task check: a confirmed long-term
        # candidate must exist whichever tool turns it into an explicit claim.
        require_long_term_candidate=kind == "explicit"
        and args.scope == "long_term"
        and reason == "confirmed_candidate",
        event_type="claim_replaced",
    )


async def invalidate(engine: Engine, ctx: Ctx, args: InvalidateArgs) -> dict[str, Any]:
    """Append an invalidation: the claim leaves the current view and stays in export/history."""
    task_id = check_uuid(args.task_id, "task_id")
    claim_id = check_uuid(args.claim_id, "claim_id")
    request_id = check_request_id(args.request_id)
    reason = atomic_statement(args.reason, 240)
    source = source_ref(args.source_ref, allowed_source_kinds("invalidate"))
    source_wire = source.to_wire()
    fingerprint = request_fingerprint(
        OP_INVALIDATE, {"claim_id": claim_id, "reason": reason, "source_ref": source_wire}
    )
    invalidated_at = utc_now()

    def decide(task: TaskState, _view: Callable[[], LedgerView]) -> list[EventDraft]:
        target = _active_target(task, claim_id, lambda peer_id: peer_target(ctx, peer_id))
        if target is None:
            raise ConflictError("claim is not active in this task", code="CLAIM_NOT_ACTIVE")
        if target.is_user_explicit and source.kind != "user_event":
            raise ConflictError(
                "a user-explicit claim can only be invalidated by a direct user_event",
                code="EXPLICIT_INVALIDATION_REQUIRES_USER",
            )
        payload = {
            "claim_id": claim_id,
            "invalidated_at": invalidated_at,
            "reason": reason,
            "source_ref": source_wire,
            "request_fingerprint": fingerprint,
        }
        actor = "user" if source.kind == "user_event" else "agent"
        return [
            EventDraft(
                event_type="claim_invalidated", task_id=task_id, actor=actor, request_id=request_id, payload=payload
            )
        ]

    event = await semantic_write(engine, ctx, task_id, request_id, ("claim_invalidated",), fingerprint, decide)
    return {
        "claim_id": event.payload.get("claim_id"),
        "invalidated_at": event.payload.get("invalidated_at"),
        "reason": event.payload.get("reason"),
    }


__all__ = [
    "add_claim",
    "add_evidence",
    "add_explicit",
    "add_inference",
    "invalidate",
    "mark_dispute",
    "mark_unknown",
    "replace_claim",
]
