"""Claim/Candidate/SourceRef wire shapes, the role/facet/confidence rules, and id/source validation."""

from __future__ import annotations

import json

import msgspec
import pytest

from intentloop.errors import InvalidInputError
from intentloop.model import (
    ROLE_FOR_STATUS,
    Candidate,
    Claim,
    SourceRef,
    allowed_source_kinds,
    canonical_bytes,
    check_role,
    is_opaque_id,
    make_claim,
    normalize_confidence,
    normalize_facets,
    sha256_hex,
    validate_request_id,
    validate_signal_key,
    validate_source_ref,
)

CLAIM_ID = "4f1c7d4e-8a2b-4c3d-9e5f-0a1b2c3d4e5f"
OTHER_ID = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
NOW = "2026-11-30T01:02:03.456Z"


def _codes(fn, *args, **kwargs) -> str:
    with pytest.raises(InvalidInputError) as info:
        fn(*args, **kwargs)
    return info.value.code


def test_claim_wire_shape_omits_absent_optionals_but_keeps_null_last_confirmed() -> None:
    claim = make_claim(
        claim_id=CLAIM_ID,
        statement="Ship the CLI first.",
        epistemic_status="evidence",
        source_ref=SourceRef(kind="tool_result", event_id="tool-1"),
        scope="task",
        facets=["failure_signal"],
        now=NOW,
    )
    wire = claim.to_wire()
    assert list(wire) == [
        "claim_id",
        "statement",
        "role",
        "epistemic_status",
        "source_ref",
        "scope",
        "valid_from",
        "last_confirmed",
        "supersedes",
        "facets",
        "related_claim_ids",
    ]
    assert wire["last_confirmed"] is None and wire["supersedes"] == [] and wire["role"] == "evidence"
    assert wire["source_ref"] == {"kind": "tool_result", "event_id": "tool-1"}
    assert Claim.from_wire(json.loads(json.dumps(wire))) == claim


def test_long_term_inferred_claim_carries_confidence_and_review_after() -> None:
    claim = make_claim(
        claim_id=CLAIM_ID,
        statement="Prefers small commits.",
        epistemic_status="inferred",
        source_ref=SourceRef(kind="agent_turn", sha256="a" * 64),
        scope="long_term",
        facets=["soft_constraint", "soft_constraint"],
        now=NOW,
        confidence=0.7,
    )
    wire = claim.to_wire()
    assert wire["confidence"] == 0.7 and wire["role"] == "agent"
    assert wire["review_after"] == "2027-02-28T01:02:03.456Z"
    assert wire["facets"] == ["soft_constraint"]
    assert "result_feedback_class" not in wire


def test_stored_payloads_are_read_leniently() -> None:
    stored = {
        "claim_id": CLAIM_ID,
        "statement": "s",
        "role": "user",
        "epistemic_status": "explicit",
        "source_ref": {"kind": "user_event", "event_id": "e", "added_later": {"x": 1}},
        "scope": "task",
        "valid_from": NOW,
        "last_confirmed": NOW,
        "supersedes": [],
        "facets": ["outcome"],
        "related_claim_ids": [],
        "evidence_file": {"path": "a.txt", "sha256": "b" * 64},
    }
    claim = Claim.from_wire(stored)
    assert claim.source_ref == SourceRef(kind="user_event", event_id="e")
    candidate = Candidate.from_wire(
        {
            "candidate_id": OTHER_ID,
            "candidate_type": "prompt_update",
            "source_ref": {"kind": "user_event", "sha256": "c" * 64},
            "created_at": NOW,
            "future": True,
        }
    )
    assert candidate.to_wire() == {
        "candidate_id": OTHER_ID,
        "candidate_type": "prompt_update",
        "source_ref": {"kind": "user_event", "sha256": "c" * 64},
        "created_at": NOW,
    }
    # ... but a record missing a required field is refused, naming it
    del stored["facets"]
    with pytest.raises(InvalidInputError, match="facets"):
        Claim.from_wire(stored)


def test_role_is_fixed_by_status() -> None:
    assert ROLE_FOR_STATUS == {
        "explicit": "user",
        "inferred": "agent",
        "evidence": "evidence",
        "unknown": "agent",
        "disputed": "system",
    }
    check_role("disputed", "system")
    assert _codes(check_role, "disputed", "user") == "INVALID_CLAIM_ROLE"


def test_facet_normalisation() -> None:
    assert normalize_facets(["outcome", "tradeoff", "outcome"], "explicit") == ["outcome", "tradeoff"]
    assert normalize_facets(["tradeoff"], "unknown") == ["tradeoff", "unknown"]
    assert normalize_facets(["unknown", "tradeoff"], "unknown") == ["unknown", "tradeoff"]
    assert normalize_facets(["outcome"], "disputed") == ["outcome", "disagreement"]
    assert _codes(normalize_facets, [], "explicit") == "INVALID_FACETS"
    assert _codes(normalize_facets, ["outcome", "vibes"], "explicit") == "INVALID_FACETS"


def test_confidence_rules_and_integral_values_stored_as_int() -> None:
    assert normalize_confidence("inferred", 0.62) == 0.62
    one = normalize_confidence("inferred", 1.0)
    zero = normalize_confidence("inferred", 0.0)
    assert type(one) is int and one == 1 and type(zero) is int
    assert normalize_confidence("explicit", None) is None
    for bad in (None, -0.01, 1.01, float("nan"), float("inf"), True):
        assert _codes(normalize_confidence, "inferred", bad) == "CONFIDENCE_REQUIRED"
    for status in ("explicit", "evidence", "unknown", "disputed"):
        assert _codes(normalize_confidence, status, 0.5) == "CONFIDENCE_NOT_ALLOWED"
    claim = make_claim(
        claim_id=CLAIM_ID,
        statement="s",
        epistemic_status="inferred",
        source_ref=SourceRef(kind="agent_turn", event_id="t"),
        scope="task",
        facets=["outcome"],
        now=NOW,
        confidence=1.0,
    )
    assert b'"confidence":1,' in canonical_bytes(claim) and b'"confidence":1,' in msgspec.json.encode(claim)


def test_source_kind_allow_lists_per_operation() -> None:
    assert allowed_source_kinds("add_explicit") == {"user_event"}
    assert allowed_source_kinds("add_evidence") == {"tool_result", "external_evidence", "agent_turn", "user_event"}
    assert allowed_source_kinds("long_term_inference") == {"user_event", "agent_turn"}
    assert "explicit_import" in allowed_source_kinds("mark_unknown")
    ok = {"kind": "tool_result", "event_id": "t-1"}
    assert validate_source_ref(ok, allowed_source_kinds("add_evidence")).kind == "tool_result"
    assert _codes(validate_source_ref, ok, allowed_source_kinds("add_explicit")) == "INVALID_SOURCE"
    assert _codes(validate_source_ref, {"kind": "explicit_import", "sha256": "a" * 64}, ["user_event"]) == (
        "INVALID_SOURCE"
    )
    assert _codes(validate_source_ref, {"kind": "rumour", "event_id": "x"}) == "INVALID_SOURCE"


def test_validate_source_ref() -> None:
    ref = validate_source_ref(
        {"kind": "user_event", "event_id": "turn:42@host", "sha256": "0" * 64, "excerpt": "  said   password=x1 " * 20}
    )
    assert ref.event_id == "turn:42@host" and ref.sha256 == "0" * 64
    assert ref.excerpt is not None and len(ref.excerpt) == 160 and "x1" not in ref.excerpt
    assert validate_source_ref(SourceRef(kind="user_event", sha256="f" * 64)).to_wire() == {
        "kind": "user_event",
        "sha256": "f" * 64,
    }
    assert validate_source_ref({"kind": "user_event", "event_id": "e", "excerpt": "   "}).excerpt is None
    cases = [
        ({"kind": "user_event"}, "INVALID_SOURCE"),
        ({"kind": "user_event", "event_id": "/etc/passwd"}, "INVALID_SOURCE"),
        ({"kind": "user_event", "event_id": "free text"}, "INVALID_SOURCE"),
        ({"kind": "user_event", "event_id": "x" * 201}, "INVALID_SOURCE"),
        ({"kind": "user_event", "sha256": "A" * 64}, "INVALID_SOURCE"),
        ({"kind": "user_event", "sha256": "a" * 63}, "INVALID_SOURCE"),
        ({"kind": "user_event", "event_id": "ghp_" + "A" * 24}, "SENSITIVE_ID_REJECTED"),
        ({"kind": "user_event", "event_id": "AKIAIOSFODNN7EXAMPLE"}, "SENSITIVE_ID_REJECTED"),
        ({"kind": 3, "event_id": "e"}, "INVALID_SOURCE"),
    ]
    for source, code in cases:
        assert _codes(validate_source_ref, source) == code, source
    # a random-looking (high-entropy) id would be stored verbatim: refused; a UUID is not random-looking
    assert _codes(validate_source_ref, {"kind": "user_event", "event_id": "xK9mP2qR7vL4nT8wZ3bY6cF1hJ5"}) == (
        "SENSITIVE_ID_REJECTED"
    )
    assert validate_source_ref({"kind": "user_event", "event_id": "550e8400-e29b-41d4-a716-446655440000"}).event_id


def test_request_ids() -> None:
    for good in ("start:550e8400-e29b-41d4-a716-446655440000", "r", "a" * 200, "hook:UserPromptSubmit:abc.def@x_y-z"):
        assert validate_request_id(good) == good
    for bad in ("", "a" * 201, "has space", "slash/no", "ünïcode"):
        assert _codes(validate_request_id, bad) == "INVALID_REQUEST_ID"
    for secret in ("ghp_" + "A" * 24, "password:hunter2", "sk-test-1234567890abcdef", "AKIAIOSFODNN7EXAMPLE"):
        assert _codes(validate_request_id, secret) == "SENSITIVE_ID_REJECTED"
    assert is_opaque_id("turn-1") and not is_opaque_id("ghp_" + "A" * 24) and not is_opaque_id("a b")


def test_signal_keys() -> None:
    assert validate_signal_key(None, "Prefers tabs.") == sha256_hex("Prefers tabs.")
    assert validate_signal_key("   ", "Prefers tabs.") == sha256_hex("Prefers tabs.")
    assert validate_signal_key("  style.tabs  ", "x") == "style.tabs"
    assert _codes(validate_signal_key, "tabs vs spaces", "x") == "INVALID_SIGNAL_KEY"
    assert _codes(validate_signal_key, "secret=abcdef", "x") == "INVALID_SIGNAL_KEY"
    assert _codes(validate_signal_key, "secret:abcdef", "x") == "SENSITIVE_ID_REJECTED"


def test_make_claim_rules() -> None:
    user = SourceRef(kind="user_event", event_id="u-1")
    explicit = make_claim(
        claim_id=CLAIM_ID,
        statement="  Keep JSON.  ",
        epistemic_status="explicit",
        source_ref=user,
        scope="project",
        facets=["outcome"],
        now=NOW,
        supersedes=[OTHER_ID, OTHER_ID],
    )
    assert explicit.role == "user" and explicit.last_confirmed == NOW and explicit.statement == "Keep JSON."
    assert explicit.supersedes == [OTHER_ID] and explicit.confidence is None and explicit.review_after is None
    base = {
        "claim_id": CLAIM_ID,
        "statement": "s",
        "source_ref": user,
        "scope": "task",
        "facets": ["outcome"],
        "now": NOW,
    }
    tool = SourceRef(kind="tool_result", event_id="t")
    assert _codes(make_claim, **{**base, "source_ref": tool}, epistemic_status="explicit") == (
        "EXPLICIT_SOURCE_REQUIRED"
    )
    assert _codes(make_claim, **base, epistemic_status="inferred") == "CONFIDENCE_REQUIRED"
    assert _codes(make_claim, **base, epistemic_status="evidence", confidence=0.3) == "CONFIDENCE_NOT_ALLOWED"
    assert _codes(make_claim, **{**base, "scope": "galaxy"}, epistemic_status="unknown") == "INVALID_SCOPE"
    assert _codes(make_claim, **base, epistemic_status="unknown", supersedes=["nope"]) == "INVALID_ID"
    assert _codes(make_claim, **{**base, "statement": "a\nb"}, epistemic_status="unknown") == "RAW_PROMPT_REJECTED"
    assert _codes(make_claim, **base, epistemic_status="evidence", result_feedback_class="meh") == "INVALID_ARGUMENTS"
    evidence = make_claim(**base, epistemic_status="evidence", result_feedback_class="keep")
    assert evidence.to_wire()["result_feedback_class"] == "keep"
    unknown = make_claim(**base, epistemic_status="unknown")
    assert unknown.facets == ["outcome", "unknown"] and unknown.role == "agent"
