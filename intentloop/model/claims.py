"""Claims, candidates and source references as stored on the wire, with the fixed tables of the intent model.

Why plain ``str`` fields and not ``Literal`` enums: these Structs also read payloads that a later version wrote, and a
new enum value there must not make an old reader drop the whole record; the enums are checked where records are made
(:mod:`intentloop.model.validation`). Field order is the original's, optional fields are omitted when absent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias, TypeVar, get_args

import msgspec

from intentloop.errors import ErrorCode, InvalidInputError

# The enums of the wire format, written once: the Literal types decode tool arguments strictly (service/args.py),
# the tuples serve the checks here.
Role: TypeAlias = Literal["user", "agent", "evidence", "system"]
EpistemicStatus: TypeAlias = Literal["explicit", "inferred", "evidence", "unknown", "disputed"]
Scope: TypeAlias = Literal["task", "project", "long_term"]
Mode: TypeAlias = Literal["on", "private", "off"]
SourceKind: TypeAlias = Literal["user_event", "agent_turn", "tool_result", "external_evidence", "explicit_import"]
Facet: TypeAlias = Literal[
    "outcome",
    "success_signal",
    "failure_signal",
    "hard_constraint",
    "soft_constraint",
    "tradeoff",
    "unknown",
    "result_feedback",
    "disagreement",
]
CandidateType: TypeAlias = Literal["prompt_update", "result_feedback", "long_term_preference", "recovery_needed"]
FeedbackClass: TypeAlias = Literal["keep", "implementation_change", "intent_change", "uncertain"]
ConfirmationReason: TypeAlias = Literal["direct_statement", "confirmed_candidate"]

ROLES: tuple[str, ...] = get_args(Role)
EPISTEMIC_STATUSES: tuple[str, ...] = get_args(EpistemicStatus)
SCOPES: tuple[str, ...] = get_args(Scope)
MODES: tuple[str, ...] = get_args(Mode)
SOURCE_KINDS: tuple[str, ...] = get_args(SourceKind)
FACETS: tuple[str, ...] = get_args(Facet)
CANDIDATE_TYPES: tuple[str, ...] = get_args(CandidateType)
FEEDBACK_CLASSES: tuple[str, ...] = get_args(FeedbackClass)
CONFIRMATION_REASONS: tuple[str, ...] = get_args(ConfirmationReason)

_T = TypeVar("_T")

# Role is fixed by epistemic status.
ROLE_FOR_STATUS: Mapping[str, str] = {
    "explicit": "user",
    "inferred": "agent",
    "evidence": "evidence",
    "unknown": "agent",
    "disputed": "system",
}

# Source kinds each operation accepts (None in the original = every kind).
_ALL_KINDS = frozenset(SOURCE_KINDS)
SOURCE_KINDS_BY_OPERATION: Mapping[str, frozenset[str]] = {
    "add_explicit": frozenset({"user_event"}),
    "add_inference": _ALL_KINDS,
    "long_term_inference": frozenset({"user_event", "agent_turn"}),
    "add_evidence": frozenset({"tool_result", "external_evidence", "agent_turn", "user_event"}),
    "mark_unknown": _ALL_KINDS,
    "mark_dispute": _ALL_KINDS,
    "replace_claim": _ALL_KINDS,
    "invalidate": _ALL_KINDS,
}


class SourceRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """``{kind, event_id?, sha256?, excerpt?}``: where a record came from, never the raw source."""

    kind: str
    event_id: str | None = None
    sha256: str | None = None
    excerpt: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> SourceRef:
        """Read a stored source reference; unknown keys are ignored.

        Raises:
            InvalidInputError: ``INVALID_SOURCE`` when a known field has the wrong type or ``kind`` is missing.
        """
        return _convert(data, cls, "INVALID_SOURCE")


class EvidenceFile(msgspec.Struct, frozen=True, kw_only=True):
    """``{path, sha256}``: the project file an evidence claim is bound to, as it was when recorded.

    ``path`` is relative to the project root (``/``-separated); ``sha256`` the hex digest of its bytes then.
    """

    path: str
    sha256: str


class Claim(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One atomic intent claim. Lists are part of a frozen record: treat them as read-only.

    ``confidence`` (inferred only), ``review_after`` (long-term inferred) and ``result_feedback_class`` (evidence)
    are omitted from the wire when ``None``; ``last_confirmed`` is always written (``null`` when unconfirmed).
    ``evidence_file`` (intentloop's own, evidence bound to a project file) is omitted when ``None``, so a claim
    without it is byte-for-byte the original's.
    """

    claim_id: str
    statement: str
    role: str
    epistemic_status: str
    source_ref: SourceRef
    scope: str
    confidence: int | float | None = None
    valid_from: str
    last_confirmed: str | None
    supersedes: list[str]
    facets: list[str]
    related_claim_ids: list[str]
    review_after: str | None = None
    result_feedback_class: str | None = None
    evidence_file: EvidenceFile | None = None

    def to_wire(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Claim:
        """Read a stored or exported claim; unknown keys are ignored.

        Raises:
            InvalidInputError: ``INVALID_ARGUMENTS`` naming the bad field when a required field is missing or mistyped.
        """
        return _convert(data, cls, "INVALID_ARGUMENTS")

    @property
    def is_user_explicit(self) -> bool:
        return self.role == "user" and self.epistemic_status == "explicit"

    @property
    def is_direct_user_explicit(self) -> bool:
        """User-explicit *and* sourced from a direct user event: the only records hooks may inject as text."""
        return self.is_user_explicit and self.source_ref.kind == "user_event"


class Candidate(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """An unconfirmed observation (hook prompt/result/compaction, long-term preference, import)."""

    candidate_id: str
    candidate_type: str
    source_ref: SourceRef
    created_at: str
    summary: str | None = None
    task_ids: list[str] | None = None

    def to_wire(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Candidate:
        """Read a stored candidate; unknown keys are ignored.

        Raises:
            InvalidInputError: ``INVALID_ARGUMENTS`` naming the bad field.
        """
        return _convert(data, cls, "INVALID_ARGUMENTS")


def _convert(data: Mapping[str, Any], cls: type[_T], code: ErrorCode) -> _T:
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError as exc:
        raise InvalidInputError(f"{cls.__name__}: {exc}", code=code) from exc


def role_for_status(epistemic_status: str) -> str:
    """The role a claim of ``epistemic_status`` must carry.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` for an unknown status.
    """
    try:
        return ROLE_FOR_STATUS[epistemic_status]
    except KeyError:
        raise InvalidInputError(f"unknown epistemic_status {epistemic_status!r}") from None


def normalize_facets(facets: Iterable[str], epistemic_status: str) -> list[str]:
    """Deduplicate preserving order; ``unknown`` claims gain the ``unknown`` facet, disputes ``disagreement``.

    Raises:
        InvalidInputError: ``INVALID_FACETS`` when empty or a value is not one of :data:`FACETS`.
    """
    unique: list[str] = []
    for facet in facets:
        if not isinstance(facet, str) or facet not in FACETS:
            raise InvalidInputError(f"unknown intent facet {facet!r}", code="INVALID_FACETS")
        if facet not in unique:
            unique.append(facet)
    if not unique:
        raise InvalidInputError("at least one intent facet is required", code="INVALID_FACETS")
    if epistemic_status == "unknown" and "unknown" not in unique:
        unique.append("unknown")
    if epistemic_status == "disputed" and "disagreement" not in unique:
        unique.append("disagreement")
    return unique


def allowed_source_kinds(operation: str) -> frozenset[str]:
    """The source kinds ``operation`` (a key of :data:`SOURCE_KINDS_BY_OPERATION`) accepts; every kind otherwise."""
    return SOURCE_KINDS_BY_OPERATION.get(operation, _ALL_KINDS)


__all__ = [
    "CANDIDATE_TYPES",
    "CONFIRMATION_REASONS",
    "EPISTEMIC_STATUSES",
    "FACETS",
    "FEEDBACK_CLASSES",
    "MODES",
    "ROLES",
    "ROLE_FOR_STATUS",
    "SCOPES",
    "SOURCE_KINDS",
    "SOURCE_KINDS_BY_OPERATION",
    "Candidate",
    "Claim",
    "EvidenceFile",
    "SourceRef",
    "allowed_source_kinds",
    "normalize_facets",
    "role_for_status",
]
