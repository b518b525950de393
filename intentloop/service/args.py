"""Strict input structs for the 15 tools, exactly as ``intentloop/mcp/tool_schemas.json`` publishes them.

Patterns are the published JSON Schema patterns (JavaScript ``$`` semantics); Python's ``$`` also matches before a
trailing newline, so the service re-checks ids with ``fullmatch`` and answers ``INVALID_ID``/``INVALID_REQUEST_ID``.
Optional fields without a published default use ``msgspec.UNSET`` so an explicit ``null`` is rejected like any
other wrong type.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, TypeVar

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from intentloop.errors import InvalidInputError
from intentloop.model import (
    CandidateType,
    ConfirmationReason,
    Facet,
    FeedbackClass,
    Mode,
    Role,
    Scope,
    SourceKind,
)
from intentloop.model import EpistemicStatus as Status

#: At most this many claims in ``intent_start_task``'s ``initial_explicit`` (the schema's ``maxItems``; the service
#: checks it again, as ``INITIAL_CLAIM_LIMIT``, for callers that build argument structs without decoding).
MAX_INITIAL_CLAIMS = 12

_T = TypeVar("_T")

# The published patterns (intentloop/mcp/tool_schemas.json). The UUID pattern admits the nil and max UUIDs; the
# service rejects them with INVALID_ID as the original's service layer does.
UUID_PATTERN = (
    "^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}"
    "|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$"
)
REQUEST_ID_PATTERN = "^[A-Za-z0-9_.:@-]{1,200}$"
SHA256_PATTERN = "^[a-f0-9]{64}$"
DATETIME_PATTERN = (
    r"^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:"
    r"(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))"
    r"T(?:(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z))$"
)

# intentloop's own (not the original's): an RFC 3339 UTC instant with seconds, as the ledger writes record times.
INSTANT_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$"

Uuid: TypeAlias = Annotated[str, Meta(pattern=UUID_PATTERN)]
RequestId: TypeAlias = Annotated[str, Meta(pattern=REQUEST_ID_PATTERN)]
ProjectRoot: TypeAlias = Annotated[str, Meta(min_length=1, max_length=1000)]
Statement: TypeAlias = Annotated[str, Meta(min_length=1, max_length=4000)]
DateTime: TypeAlias = Annotated[str, Meta(pattern=DATETIME_PATTERN)]
Confidence: TypeAlias = Annotated[float, Meta(ge=0, le=1)]
Facets: TypeAlias = Annotated[list[Facet], Meta(min_length=1, max_length=9)]
RelatedIds: TypeAlias = Annotated[list[Uuid], Meta(max_length=20)]


class _Strict(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Base of every inbound struct: unknown keys are an error."""


class SourceRefArg(_Strict, frozen=True, kw_only=True):
    kind: SourceKind
    event_id: Annotated[str, Meta(min_length=1, max_length=200)] | UnsetType = UNSET
    sha256: Annotated[str, Meta(pattern=SHA256_PATTERN)] | UnsetType = UNSET
    excerpt: Annotated[str, Meta(max_length=2000)] | UnsetType = UNSET


class ToolArgs(_Strict, frozen=True, kw_only=True):
    """Fields every tool accepts. ``project_root`` is resolved by the MCP adapter before the service runs."""

    project_root: ProjectRoot | UnsetType = UNSET


class StatusArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid | UnsetType = UNSET


class InitialExplicitItem(_Strict, frozen=True, kw_only=True):
    statement: Statement
    scope: Scope = "task"
    facets: Facets


class StartTaskArgs(ToolArgs, frozen=True, kw_only=True):
    request_id: RequestId | UnsetType = UNSET
    task_id: Uuid | UnsetType = UNSET
    label: Annotated[str, Meta(max_length=500)] | UnsetType = UNSET
    host_session_id: Annotated[str, Meta(min_length=1, max_length=300)] | UnsetType = UNSET
    mode: Mode = "on"
    initial_explicit: Annotated[list[InitialExplicitItem | Statement], Meta(max_length=MAX_INITIAL_CLAIMS)] = []


class SnapshotArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    max_characters: Annotated[int, Meta(ge=500, le=8000)] | UnsetType = UNSET
    as_of: Annotated[str, Meta(pattern=INSTANT_PATTERN)] | UnsetType = UNSET
    include_history: bool = False


class ClaimBaseArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    request_id: RequestId
    statement: Statement
    source_ref: SourceRefArg
    scope: Scope = "task"
    facets: Facets


class AddExplicitArgs(ClaimBaseArgs, frozen=True, kw_only=True):
    confirmation_reason: ConfirmationReason


class AddInferenceArgs(ClaimBaseArgs, frozen=True, kw_only=True):
    confidence: Confidence
    signal_key: Annotated[str, Meta(min_length=1, max_length=200)] | UnsetType = UNSET


class AddEvidenceArgs(ClaimBaseArgs, frozen=True, kw_only=True):
    feedback_class: FeedbackClass | UnsetType = UNSET
    evidence_path: Annotated[str, Meta(min_length=1, max_length=4096)] | UnsetType = UNSET


class MarkUnknownArgs(ClaimBaseArgs, frozen=True, kw_only=True):
    pass


class MarkDisputeArgs(ClaimBaseArgs, frozen=True, kw_only=True):
    related_claim_ids: RelatedIds = []


class ReplaceClaimArgs(ClaimBaseArgs, frozen=True, kw_only=True):
    replacement_kind: Status
    supersedes: Annotated[list[Uuid], Meta(min_length=1, max_length=20)]
    related_claim_ids: RelatedIds = []
    confidence: Confidence | UnsetType = UNSET
    confirmation_reason: ConfirmationReason | UnsetType = UNSET


class InvalidateArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    request_id: RequestId
    claim_id: Uuid
    reason: Annotated[str, Meta(min_length=1, max_length=1000)]
    source_ref: SourceRefArg


class ListCandidatesArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid


class ExportArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    detail: Literal["portable", "summary"] = "portable"
    original_format: bool = False


class EvidenceFileArg(_Strict, frozen=True, kw_only=True):
    path: Annotated[str, Meta(min_length=1, max_length=4096)]
    sha256: Annotated[str, Meta(pattern=SHA256_PATTERN)]


class GraphClaimArg(_Strict, frozen=True, kw_only=True):
    claim_id: Uuid
    statement: Annotated[str, Meta(min_length=1, max_length=500)]
    role: Role
    epistemic_status: Status
    source_ref: SourceRefArg
    scope: Scope
    confidence: Confidence | UnsetType = UNSET
    valid_from: DateTime
    last_confirmed: DateTime | None
    supersedes: RelatedIds
    facets: Facets
    related_claim_ids: RelatedIds
    review_after: DateTime | UnsetType = UNSET
    result_feedback_class: FeedbackClass | UnsetType = UNSET
    evidence_file: EvidenceFileArg | UnsetType = UNSET
    evidence_stale: bool | UnsetType = UNSET


class GraphCandidateArg(_Strict, frozen=True, kw_only=True):
    candidate_id: Uuid
    candidate_type: CandidateType
    source_ref: SourceRefArg
    created_at: DateTime
    summary: Annotated[str, Meta(max_length=500)] | UnsetType = UNSET
    task_ids: Annotated[list[Uuid], Meta(max_length=100)] | UnsetType = UNSET


class ExportSignatureArg(_Strict, frozen=True, kw_only=True):
    algorithm: Literal["ed25519"]
    key_id: Annotated[str, Meta(pattern=SHA256_PATTERN)]
    public_key: Annotated[str, Meta(pattern=SHA256_PATTERN)]
    signature: Annotated[str, Meta(pattern="^[a-f0-9]{128}$")]


class PortableGraphArg(_Strict, frozen=True, kw_only=True):
    format: Literal["intent-loop-export"]
    schema_version: Literal[1]
    exported_at: DateTime
    source_project_id: Annotated[str, Meta(pattern=SHA256_PATTERN)]
    source_task_id: Uuid
    history_complete: Literal[False]
    claims: Annotated[list[GraphClaimArg], Meta(max_length=1000)]
    invalidated_claim_ids: Annotated[list[Uuid], Meta(max_length=1000)]
    candidates: Annotated[list[GraphCandidateArg], Meta(max_length=1000)]
    signature: ExportSignatureArg | UnsetType = UNSET


class ImportArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    request_id: RequestId
    graph: PortableGraphArg


class DeleteArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    target: Literal["task", "claim"]
    claim_id: Uuid | UnsetType = UNSET
    confirmation: Annotated[str, Meta(min_length=1, max_length=200)]
    delete_copies: bool | UnsetType = UNSET


class SetModeArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    request_id: RequestId
    mode: Mode


TOOL_ARGS: dict[str, type[ToolArgs]] = {
    "intent_status": StatusArgs,
    "intent_start_task": StartTaskArgs,
    "intent_get_snapshot": SnapshotArgs,
    "intent_add_explicit": AddExplicitArgs,
    "intent_add_inference": AddInferenceArgs,
    "intent_add_evidence": AddEvidenceArgs,
    "intent_mark_unknown": MarkUnknownArgs,
    "intent_mark_dispute": MarkDisputeArgs,
    "intent_replace_claim": ReplaceClaimArgs,
    "intent_invalidate": InvalidateArgs,
    "intent_list_candidates": ListCandidatesArgs,
    "intent_export": ExportArgs,
    "intent_import": ImportArgs,
    "intent_delete": DeleteArgs,
    "intent_set_mode": SetModeArgs,
}
TOOL_NAMES: tuple[str, ...] = tuple(TOOL_ARGS)


def _js_numbers(value: Any) -> Any:
    """JSON has one number type: ``600.0`` is the integer 600 to a JavaScript client, so integral floats become ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _js_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_js_numbers(item) for item in value]
    return value


def decode_arguments(tool: str, arguments: Any) -> ToolArgs:
    """Decode one tool's ``arguments`` strictly into its struct.

    Args:
        tool: one of :data:`TOOL_NAMES`.
        arguments: the JSON object the client sent (``None`` counts as ``{}``).

    Returns:
        The tool's frozen argument struct.

    Raises:
        InvalidInputError: ``INVALID_ARGUMENTS`` for an unknown tool, a non-object, an unknown key, a wrong type,
            a value out of range or a pattern mismatch; the message names the field's path
            (e.g. ``Expected `int`, got `str` - at `$.max_characters` ``).
    """
    struct_type = TOOL_ARGS.get(tool)
    if struct_type is None:
        raise InvalidInputError(f"unknown tool {tool!r}", code="INVALID_ARGUMENTS")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidInputError("arguments must be a JSON object - at `$`", code="INVALID_ARGUMENTS")
    try:
        return msgspec.convert(_js_numbers(arguments), struct_type, strict=True)
    except msgspec.ValidationError as exc:
        raise InvalidInputError(str(exc), code="INVALID_ARGUMENTS") from exc


def opt(value: _T | UnsetType) -> _T | None:
    """An optional argument's value, ``None`` when it was not supplied."""
    return None if isinstance(value, UnsetType) else value


__all__ = [
    "TOOL_ARGS",
    "TOOL_NAMES",
    "AddEvidenceArgs",
    "AddExplicitArgs",
    "AddInferenceArgs",
    "ClaimBaseArgs",
    "DeleteArgs",
    "EvidenceFileArg",
    "ExportArgs",
    "ExportSignatureArg",
    "GraphCandidateArg",
    "GraphClaimArg",
    "ImportArgs",
    "InitialExplicitItem",
    "InvalidateArgs",
    "ListCandidatesArgs",
    "MarkDisputeArgs",
    "MarkUnknownArgs",
    "PortableGraphArg",
    "ReplaceClaimArgs",
    "SetModeArgs",
    "SnapshotArgs",
    "SourceRefArg",
    "StartTaskArgs",
    "StatusArgs",
    "ToolArgs",
    "decode_arguments",
    "opt",
]
