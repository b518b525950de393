"""Strict input structs for the 15 tools and one row per tool (:data:`TOOLS`): name, struct, handler and metadata.

``intentloop/mcp/tool_schemas.json`` (what ``tools/list`` sends) is generated from :data:`TOOLS` and these structs by
``python -m intentloop.mcp.schemagen``: field types, limits, patterns and defaults come from the annotations, field
descriptions and JSON Schema formats from ``Meta(description=..., extra_json_schema=...)``, titles, tool descriptions
and hints from :data:`TOOLS`. A test fails when the checked-in file is not exactly what the generator writes.

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
    EpistemicStatus as Status,
    Facet,
    FeedbackClass,
    Mode,
    Role,
    Scope,
    SourceKind,
)

#: At most this many claims in ``intent_start_task``'s ``initial_explicit`` (the schema's ``maxItems``; the service
#: checks it again, as ``INITIAL_CLAIM_LIMIT``, for callers that build argument structs without decoding).
MAX_INITIAL_CLAIMS = 12
#: How deeply a tool's arguments may nest (objects and arrays): a portable graph needs 6 levels. Deeper input is
#: refused before anything recurses over it (Python's recursion limit would otherwise decide, with a traceback).
MAX_ARGUMENT_DEPTH = 64

_T = TypeVar("_T")

# The published patterns. The UUID pattern admits the nil and max UUIDs; the
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

Uuid: TypeAlias = Annotated[str, Meta(pattern=UUID_PATTERN, extra_json_schema={"format": "uuid"})]
RequestId: TypeAlias = Annotated[str, Meta(pattern=REQUEST_ID_PATTERN)]
ProjectRoot: TypeAlias = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=1000,
        description="Absolute path of the project root. Optional on Codex (the sandbox cwd is used); other hosts pass "
        "it unless exactly one local root is advertised.",
    ),
]
Statement: TypeAlias = Annotated[str, Meta(min_length=1, max_length=4000)]
DateTime: TypeAlias = Annotated[str, Meta(pattern=DATETIME_PATTERN, extra_json_schema={"format": "date-time"})]
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
    host_session_id: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=300,
                description="The host's opaque session id, only when the Intent Loop runtime context provided it. "
                "Never invent it or show it to the user.",
            ),
        ]
        | UnsetType
    ) = UNSET
    mode: Mode = "on"
    initial_explicit: Annotated[list[InitialExplicitItem | Statement], Meta(max_length=MAX_INITIAL_CLAIMS)] = []


class SnapshotArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    max_characters: Annotated[int, Meta(ge=500, le=8000)] | UnsetType = UNSET
    as_of: (
        Annotated[
            str,
            Meta(
                pattern=INSTANT_PATTERN,
                extra_json_schema={"format": "date-time"},
                description="Optional RFC 3339 UTC instant (e.g. 2026-11-30T01:02:03.456Z): answer from the events "
                "recorded at or before it (record time). Earlier than the task's start: TASK_NOT_FOUND.",
            ),
        ]
        | UnsetType
    ) = UNSET
    include_history: Annotated[
        bool,
        Meta(
            description="Also return history: every superseded or invalidated claim of the task with its status, the "
            "superseding claim, the record time of its removal and the invalidation reason."
        ),
    ] = False
    include_peers: Annotated[
        bool,
        Meta(
            description="Also return peer_claims: the active claims of the project's other writers as the last "
            "`intentloop sync` accepted them (your other machines, trusted keys), each with its origin (writer key "
            "id, principal, own: whether it is the user's own principal, task_id). Only a shared project has peers."
        ),
    ] = False


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
    evidence_path: (
        Annotated[
            str,
            Meta(
                min_length=1,
                max_length=4096,
                description="Optional project file this evidence is about, relative to the project root or absolute "
                "inside it. The claim records evidence_file {path, sha256}; snapshots and exports then mark it "
                "evidence_stale when the file changes or disappears. Outside the root: PATH_ESCAPE; not a regular "
                "file: INVALID_EVIDENCE_PATH; a path holding a token or key (it is stored as it is): "
                "SENSITIVE_ID_REJECTED.",
            ),
        ]
        | UnsetType
    ) = UNSET


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
    original_format: Annotated[
        bool,
        Meta(
            description="Leave out intentloop's own fields (the signature block, evidence_file, evidence_stale) so the "
            "original intent-loop implementation's strict import accepts the graph."
        ),
    ] = False


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
    signature: (
        Annotated[
            ExportSignatureArg,
            Meta(
                description="intentloop's own: the export's Ed25519 signature block. The import answers "
                "signature_status (valid, invalid or unknown_key) and imports the graph whatever it says."
            ),
        ]
        | UnsetType
    ) = UNSET


class ImportArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    request_id: RequestId
    graph: PortableGraphArg


class DeleteArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    target: Literal["task", "claim"]
    claim_id: Uuid | UnsetType = UNSET
    confirmation: Annotated[str, Meta(min_length=1, max_length=200)]
    delete_copies: (
        Annotated[
            bool,
            Meta(
                description="Also delete claims elsewhere in the project that repeat a deleted statement word for word "
                "(e.g. an import into another task). Default false: they are only listed in the result."
            ),
        ]
        | UnsetType
    ) = UNSET


class SetModeArgs(ToolArgs, frozen=True, kw_only=True):
    task_id: Uuid
    request_id: RequestId
    mode: Mode


class Tool(Struct, frozen=True, kw_only=True):
    """One tool, in one row: its wire name, argument struct, handler and how it is published.

    The handler is named, not imported, so that reading the rows (the catalog check at server start, the schema
    generator) loads none of the handler modules or trio; :mod:`intentloop.service.intent_service` resolves every
    row's handler when it is imported, so a row naming a missing handler fails there, for every tool at once.

    Attributes:
        name: the wire name, e.g. ``intent_status``.
        args: the strict argument struct (its fields are the published input schema).
        handler: ``"module:function"`` inside :mod:`intentloop.service`: the operation, called with the engine, the
            call's context and the decoded arguments (a plain function runs inline, a coroutine function is awaited).
        marks_evidence: the result holds claims (a snapshot or an export): each one bound to a file gets
            ``evidence_stale``.
        title: the human title.
        description: what the tool does, for the model.
        read_only: ``readOnlyHint``: the tool changes nothing.
        destructive: ``destructiveHint``: the tool removes data.
        idempotent: ``idempotentHint``: repeating the same call changes nothing more.
    """

    name: str
    args: type[ToolArgs]
    handler: str
    marks_evidence: bool = False
    title: str
    description: str
    read_only: bool
    destructive: bool = False
    idempotent: bool = True


def _by_name(*tools: Tool) -> dict[str, Tool]:
    """The rows keyed by name, in their order.

    Raises:
        ValueError: two rows share a name.
    """
    table = {tool.name: tool for tool in tools}
    if len(table) != len(tools):
        raise ValueError("two tool rows share a name")
    return table


#: The 15 tools in their published order (``openWorldHint`` is false for all: they touch only local files).
TOOLS: dict[str, Tool] = _by_name(
    Tool(
        name="intent_status",
        args=StatusArgs,
        handler="_reads:status",
        title="Intent Loop status",
        description="Report schema version, storage location, task/candidate counts and private-control counts for "
        "this project, or the mode and counts of one task. Returns no claim content and creates no storage.",
        read_only=True,
    ),
    Tool(
        name="intent_start_task",
        args=StartTaskArgs,
        handler="_modes:start_task",
        marks_evidence=True,
        title="Start or associate task intent",
        description="Start a task (omit task_id) or re-associate an existing one with this host session. Optional "
        "initial_explicit claims must be the user's own words. private mode needs host_session_id. Not idempotent "
        "without the same request_id. Returns the task snapshot.",
        read_only=False,
        idempotent=False,
    ),
    Tool(
        name="intent_get_snapshot",
        args=SnapshotArgs,
        handler="_reads:snapshot",
        marks_evidence=True,
        title="Read current intent",
        description="Read the current intent of a task: active claims, unknowns, disagreements, stale long-term "
        "items, candidate count and a capped compact_text. Read-only.",
        read_only=True,
    ),
    Tool(
        name="intent_add_explicit",
        args=AddExplicitArgs,
        handler="_claims:add_explicit",
        title="Add user-explicit intent",
        description="Record one atomic statement the user directly said or confirmed (source_ref.kind user_event, "
        "confirmation_reason required). Never use it for tool output, evidence or your own inference.",
        read_only=False,
    ),
    Tool(
        name="intent_add_inference",
        args=AddInferenceArgs,
        handler="_claims:add_inference",
        title="Add visible inference",
        description="Record one visible agent inference with a confidence in [0,1]. It stays inferred; scope "
        "long_term only creates a candidate that needs 3 tasks and user confirmation.",
        read_only=False,
    ),
    Tool(
        name="intent_add_evidence",
        args=AddEvidenceArgs,
        handler="_claims:add_evidence",
        title="Add result or external evidence",
        description="Record result feedback or tool/external evidence, optionally classified (keep, "
        "implementation_change, intent_change, uncertain). Evidence stays evidence, however compelling.",
        read_only=False,
    ),
    Tool(
        name="intent_mark_unknown",
        args=MarkUnknownArgs,
        handler="_claims:mark_unknown",
        title="Mark an unknown",
        description="Record an open question the user has not answered, with the decision it affects.",
        read_only=False,
    ),
    Tool(
        name="intent_mark_dispute",
        args=MarkDisputeArgs,
        handler="_claims:mark_dispute",
        title="Preserve an unresolved disagreement",
        description="Preserve an unresolved disagreement, optionally referencing the claims involved. It never picks "
        "a winner.",
        read_only=False,
    ),
    Tool(
        name="intent_replace_claim",
        args=ReplaceClaimArgs,
        handler="_claims:replace_claim",
        title="Correct or replace intent",
        description="Correct intent by adding a new claim that supersedes active ones; history is kept. A "
        "user-explicit claim can only be replaced by a new user-explicit statement from a user event.",
        read_only=False,
    ),
    Tool(
        name="intent_invalidate",
        args=InvalidateArgs,
        handler="_claims:invalidate",
        title="Invalidate an intent claim",
        description="Mark an active claim as no longer valid, with a one-line reason and source. A user-explicit "
        "claim can only be invalidated from a user event.",
        read_only=False,
    ),
    Tool(
        name="intent_list_candidates",
        args=ListCandidatesArgs,
        handler="_reads:list_candidates",
        title="List unconfirmed intent candidates",
        description="List unconfirmed candidates (hook observations, result feedback, long-term preferences, "
        "imports). Never promotes them.",
        read_only=True,
    ),
    Tool(
        name="intent_export",
        args=ExportArgs,
        handler="_reads:export",
        marks_evidence=True,
        title="Export intent state",
        description="Export a task as a portable versioned graph (default) or a human summary. Returns data; writes "
        "no file.",
        read_only=True,
    ),
    Tool(
        name="intent_import",
        args=ImportArgs,
        handler="_import:import_graph",
        marks_evidence=True,
        title="Explicitly import an intent graph",
        description="Import a portable graph into a task after validation. Ids are remapped, provenance becomes "
        "explicit_import, history is marked incomplete; nothing is merged silently.",
        read_only=False,
    ),
    Tool(
        name="intent_delete",
        args=DeleteArgs,
        handler="_delete_tool:delete",
        title="Physically delete intent data",
        description="Physically delete a task or one claim after an exact confirmation string (DELETE TASK <task_id> "
        "or DELETE CLAIM <claim_id>), then verify no byte of its id remains. The result lists other claims that "
        "still hold a deleted statement (other_copies); delete_copies: true deletes the word-for-word copies too. A "
        "later call with a deleted claim's original request_id answers CLAIM_DELETED.",
        read_only=False,
        destructive=True,
        idempotent=False,
    ),
    Tool(
        name="intent_set_mode",
        args=SetModeArgs,
        handler="_modes:set_mode",
        title="Set task intent mode",
        description="Set a task's mode: on (durable), private (memory-only, needs a known host session) or off "
        "(semantic reads and writes refused).",
        read_only=False,
    ),
)
TOOL_ARGS: dict[str, type[ToolArgs]] = {name: tool.args for name, tool in TOOLS.items()}
TOOL_NAMES: tuple[str, ...] = tuple(TOOL_ARGS)


class _TooDeepError(Exception):
    """Arguments nested deeper than :data:`MAX_ARGUMENT_DEPTH`."""


def _js_numbers(value: Any, depth: int = 0) -> Any:
    """JSON has one number type: ``600.0`` is the integer 600 to a JavaScript client, so integral floats become ints.

    Raises:
        _TooDeepError: the value nests deeper than :data:`MAX_ARGUMENT_DEPTH`.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict | list):
        if depth >= MAX_ARGUMENT_DEPTH:
            raise _TooDeepError
        if isinstance(value, dict):
            return {key: _js_numbers(item, depth + 1) for key, item in value.items()}
        return [_js_numbers(item, depth + 1) for item in value]
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
    except _TooDeepError as exc:
        raise InvalidInputError(
            f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels - at `$`", code="INVALID_ARGUMENTS"
        ) from exc


def opt(value: _T | UnsetType) -> _T | None:
    """An optional argument's value, ``None`` when it was not supplied."""
    return None if isinstance(value, UnsetType) else value


__all__ = [
    "TOOLS",
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
    "Tool",
    "ToolArgs",
    "decode_arguments",
    "opt",
]
