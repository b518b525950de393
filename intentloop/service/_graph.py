"""Portable graphs: export of one task, and the validation and remapping of an explicit import.

An import is external history: every id is replaced by a fresh one, every source becomes ``explicit_import`` (the
original source survives only inside a provenance hash), every text is redacted again, and the history is marked
incomplete. Hashes and fingerprints are computed over the *redacted* graph, so no digest of a secret reaches disk;
for a graph without secrets that is byte-for-byte the original implementation's input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from intentloop.errors import IntentLoopError, InvalidInputError
from intentloop.model import (
    ROLE_FOR_STATUS,
    atomic_statement,
    canonical_bytes,
    normalize_facets,
    parse_time,
    request_fingerprint,
    sha256_hex,
)
from intentloop.service._evidence import check_stored_path
from intentloop.service._rules import OP_IMPORT, check_uuid, redact_text
from intentloop.service.args import GraphCandidateArg, GraphClaimArg, PortableGraphArg

MAX_COMBINED_ITEMS = 2000
MAX_COMBINED_RELATIONS = 20000


def _invalid(message: str) -> IntentLoopError:
    return InvalidInputError(message, code="INVALID_IMPORT")


def _check_time(value: str, field: str) -> None:
    try:
        parse_time(value)
    except ValueError:
        raise _invalid(f"imported {field} must be RFC 3339 UTC") from None


def _check_claim(claim: GraphClaimArg) -> None:
    if claim.role != ROLE_FOR_STATUS[claim.epistemic_status]:
        raise _invalid(f"imported {claim.epistemic_status} claim has an invalid role")
    has_confidence = claim.confidence is not msgspec.UNSET
    if claim.epistemic_status == "inferred" and not has_confidence:
        raise _invalid("imported inferred claim requires confidence from 0 to 1")
    if claim.epistemic_status != "inferred" and has_confidence:
        raise _invalid("only imported inferred claims may include confidence")
    _check_time(claim.valid_from, "valid_from")
    if claim.last_confirmed is not None:
        _check_time(claim.last_confirmed, "last_confirmed")
    if claim.review_after is not msgspec.UNSET:
        _check_time(claim.review_after, "review_after")
    if claim.evidence_file is not msgspec.UNSET:  # stored verbatim, like a binding made here
        check_stored_path(claim.evidence_file.path)


def validate_graph(graph: PortableGraphArg) -> None:
    """Every check of the original's import, plus fully anchored id checks.

    Raises:
        IntentLoopError: ``INVALID_IMPORT`` (or ``INVALID_ID`` for a malformed id, as the original answers);
            ``SENSITIVE_ID_REJECTED`` or ``INVALID_EVIDENCE_PATH`` for an ``evidence_file`` path that could not be
            bound here either.
    """
    total = len(graph.claims) + len(graph.invalidated_claim_ids) + len(graph.candidates)
    if total > MAX_COMBINED_ITEMS:
        raise _invalid("portable graph exceeds the combined import limit")
    relations = sum(len(c.supersedes) + len(c.related_claim_ids) for c in graph.claims) + sum(
        len(c.task_ids) for c in graph.candidates if c.task_ids is not msgspec.UNSET
    )
    if relations > MAX_COMBINED_RELATIONS:
        raise _invalid("portable graph exceeds the combined relation limit")
    _check_time(graph.exported_at, "exported_at")
    check_uuid(graph.source_task_id, "source_task_id")
    by_id: dict[str, GraphClaimArg] = {}
    for claim in graph.claims:
        check_uuid(claim.claim_id, "imported claim_id")
        if claim.claim_id in by_id:
            raise _invalid("graph contains duplicate claim IDs")
        by_id[claim.claim_id] = claim
        _check_claim(claim)
    for claim in graph.claims:
        for ref in (*claim.supersedes, *claim.related_claim_ids):
            if ref not in by_id:
                raise _invalid(f"claim {claim.claim_id} references a missing claim")
        if claim.claim_id in claim.supersedes:
            raise _invalid("a claim cannot supersede itself")
    _check_supersession(by_id)
    for claim_id in graph.invalidated_claim_ids:
        check_uuid(claim_id, "invalidated_claim_id")
        if claim_id not in by_id:
            raise _invalid("invalidated claim is absent from graph claims")
    seen: set[str] = set()
    for candidate in graph.candidates:
        check_uuid(candidate.candidate_id, "candidate_id")
        if candidate.candidate_id in seen:
            raise _invalid("graph contains duplicate candidate IDs")
        seen.add(candidate.candidate_id)
        _check_time(candidate.created_at, "created_at")
        for task_id in candidate.task_ids if candidate.task_ids is not msgspec.UNSET else ():
            check_uuid(task_id, "candidate task_id")


def _check_supersession(by_id: dict[str, GraphClaimArg]) -> None:
    """No cycles, and no replacement older than what it replaces (iterative DFS: graphs hold up to 1,000 claims)."""
    done: set[str] = set()
    for root in by_id:
        if root in done:
            continue
        on_path: set[str] = {root}
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            node, index = stack[-1]
            targets = by_id[node].supersedes
            if index >= len(targets):
                stack.pop()
                on_path.discard(node)
                done.add(node)
                continue
            stack[-1] = (node, index + 1)
            target = targets[index]
            if parse_time(by_id[node].valid_from) < parse_time(by_id[target].valid_from):
                raise _invalid("a replacement claim predates the claim it supersedes")
            if target in on_path:
                raise _invalid("supersession graph contains a cycle")
            if target not in done:
                on_path.add(target)
                stack.append((target, 0))


def _redacted_source(source: Any) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(source)
    if "excerpt" in data:
        data["excerpt"] = redact_text(data["excerpt"])
    return data


def redacted_graph(graph: PortableGraphArg) -> dict[str, Any]:
    """The graph as plain data with every free text redacted (the fingerprint's normalized input)."""
    data: dict[str, Any] = msgspec.to_builtins(graph)
    for claim in data["claims"]:
        claim["statement"] = redact_text(claim["statement"])
        if "excerpt" in claim["source_ref"]:
            claim["source_ref"]["excerpt"] = redact_text(claim["source_ref"]["excerpt"])
    for candidate in data["candidates"]:
        if "summary" in candidate:
            candidate["summary"] = redact_text(candidate["summary"])
        if "excerpt" in candidate["source_ref"]:
            candidate["source_ref"]["excerpt"] = redact_text(candidate["source_ref"]["excerpt"])
    return data


def import_payload(graph: PortableGraphArg, task_id: str, new_id: Callable[[], str]) -> dict[str, Any]:
    """The ``graph_imported`` payload: fresh ids, ``explicit_import`` provenance, redacted texts, fingerprint."""
    claim_ids = {c.claim_id: new_id() for c in graph.claims}
    candidate_ids = {c.candidate_id: new_id() for c in graph.candidates}
    task_ids: dict[str, str] = {}
    for candidate in graph.candidates:
        for tid in candidate.task_ids if candidate.task_ids is not msgspec.UNSET else ():
            task_ids.setdefault(tid, new_id())
    claims = [_import_claim(c, claim_ids) for c in graph.claims]
    candidates = [_import_candidate(c, candidate_ids, task_ids) for c in graph.candidates]
    invalidated = list(dict.fromkeys(claim_ids[c] for c in graph.invalidated_claim_ids))
    return {
        "claims": claims,
        "invalidated_claim_ids": invalidated,
        "candidates": candidates,
        "imported_from": {
            "source_identity_sha256": sha256_hex(
                canonical_bytes({"project_id": graph.source_project_id, "task_id": graph.source_task_id})
            ),
            "exported_at": graph.exported_at,
            "history_complete": False,
        },
        "request_fingerprint": request_fingerprint(OP_IMPORT, {"task_id": task_id, "graph": redacted_graph(graph)}),
    }


def _import_claim(claim: GraphClaimArg, ids: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(claim)
    out["claim_id"] = ids[claim.claim_id]
    out["statement"] = atomic_statement(claim.statement)
    out["source_ref"] = {
        "kind": "explicit_import",
        "sha256": sha256_hex(
            canonical_bytes({"claim_id": claim.claim_id, "source_ref": _redacted_source(claim.source_ref)})
        ),
    }
    out["supersedes"] = list(dict.fromkeys(ids[x] for x in claim.supersedes))
    out["related_claim_ids"] = list(dict.fromkeys(ids[x] for x in claim.related_claim_ids))
    out["facets"] = normalize_facets(claim.facets, claim.epistemic_status)
    out.pop("evidence_stale", None)  # a read-time mark of the exporting side, recomputed on every read here
    return out


def _import_candidate(candidate: GraphCandidateArg, ids: dict[str, str], task_ids: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(candidate)
    out["candidate_id"] = ids[candidate.candidate_id]
    out["source_ref"] = {
        "kind": "explicit_import",
        "sha256": sha256_hex(
            canonical_bytes(
                {"candidate_id": candidate.candidate_id, "source_ref": _redacted_source(candidate.source_ref)}
            )
        ),
    }
    if candidate.task_ids is not msgspec.UNSET:
        out["task_ids"] = [task_ids[t] for t in candidate.task_ids]
    if candidate.summary is not msgspec.UNSET:
        out["summary"] = atomic_statement(candidate.summary)
    return out


def portable_export(
    *,
    project_id: str,
    task_id: str,
    exported_at: str,
    claims: Sequence[dict[str, Any]],
    invalidated: Sequence[str],
    candidates: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The ``intent-loop-export`` graph of one task (every claim, superseded and invalidated ones included)."""
    return {
        "format": "intent-loop-export",
        "schema_version": 1,
        "exported_at": exported_at,
        "source_project_id": project_id,
        "source_task_id": task_id,
        "history_complete": False,
        "claims": [dict(c) for c in claims],
        "invalidated_claim_ids": sorted(invalidated),
        "candidates": [dict(c) for c in candidates],
    }


def summary_export(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The ``intent-loop-human-summary`` of a snapshot taken at 2,400 characters."""
    return {
        "format": "intent-loop-human-summary",
        "schema_version": 1,
        "task_id": snapshot["task_id"],
        "generated_at": snapshot["generated_at"],
        "history_complete": False,
        "active_claim_count": len(snapshot["active_claims"]),
        "candidate_count": snapshot["candidate_count"],
        "unknown_count": len(snapshot["unknowns"]),
        "disagreement_count": len(snapshot["disagreements"]),
        "compact_text": snapshot["compact_text"],
    }


__all__ = ["import_payload", "portable_export", "redacted_graph", "summary_export", "validate_graph"]
