"""Strict decoding of the 15 tools' arguments: every tool accepts its published minimum and rejects the rest."""

from __future__ import annotations

import copy
import math
from typing import Any

import msgspec
import pytest

from intentloop.errors import IntentLoopError
from intentloop.service.args import (
    TOOL_NAMES,
    InitialExplicitItem,
    StartTaskArgs,
    decode_arguments,
    opt,
)

TASK = "5f0c7c52-2f67-4a7e-9d2d-1b0e6b8f3a11"
CLAIM = "0d9d3f8e-6c1a-4b7f-8e2d-3a4b5c6d7e8f"
SRC = {"kind": "user_event", "event_id": "turn-1"}
BASE = {"task_id": TASK, "request_id": "r1", "statement": "keep it small", "source_ref": SRC, "facets": ["outcome"]}
GRAPH = {
    "format": "intent-loop-export",
    "schema_version": 1,
    "exported_at": "2026-01-02T03:04:05.678Z",
    "source_project_id": "a" * 64,
    "source_task_id": TASK,
    "history_complete": False,
    "claims": [],
    "invalidated_claim_ids": [],
    "candidates": [],
}

# The smallest valid call of every tool, and (field, wrong-typed value) for a type error in a named field.
MINIMAL: dict[str, tuple[dict[str, Any], str, Any]] = {
    "intent_status": ({}, "task_id", 7),
    "intent_start_task": ({}, "mode", "sometimes"),
    "intent_get_snapshot": ({"task_id": TASK}, "max_characters", "2400"),
    "intent_add_explicit": ({**BASE, "confirmation_reason": "direct_statement"}, "confirmation_reason", "because"),
    "intent_add_inference": ({**BASE, "confidence": 0.5}, "confidence", "high"),
    "intent_add_evidence": (dict(BASE), "feedback_class", "maybe"),
    "intent_mark_unknown": (dict(BASE), "facets", ["outcome", "vibes"]),
    "intent_mark_dispute": (dict(BASE), "related_claim_ids", [CLAIM, 3]),
    "intent_replace_claim": ({**BASE, "replacement_kind": "evidence", "supersedes": [CLAIM]}, "supersedes", []),
    "intent_invalidate": (
        {"task_id": TASK, "request_id": "r1", "claim_id": CLAIM, "reason": "wrong", "source_ref": SRC},
        "reason",
        "",
    ),
    "intent_list_candidates": ({"task_id": TASK}, "task_id", "not-a-uuid"),
    "intent_export": ({"task_id": TASK}, "detail", "everything"),
    "intent_import": ({"task_id": TASK, "request_id": "r1", "graph": GRAPH}, "graph", []),
    "intent_delete": ({"task_id": TASK, "target": "task", "confirmation": f"DELETE TASK {TASK}"}, "target", "project"),
    "intent_set_mode": ({"task_id": TASK, "request_id": "r1", "mode": "on"}, "mode", "loud"),
}


def _code(tool: str, arguments: Any) -> tuple[str, str]:
    with pytest.raises(IntentLoopError) as info:
        decode_arguments(tool, arguments)
    return info.value.code, info.value.message


def test_every_tool_has_a_minimal_case() -> None:
    assert set(MINIMAL) == set(TOOL_NAMES)
    assert len(TOOL_NAMES) == 15


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_minimal_arguments_decode(tool: str) -> None:
    arguments, _field, _bad = MINIMAL[tool]
    decoded = decode_arguments(tool, copy.deepcopy(arguments))
    assert isinstance(decoded, msgspec.Struct)
    # project_root is optional on every tool and accepted when given
    with_root = decode_arguments(tool, {**copy.deepcopy(arguments), "project_root": "/somewhere"})
    assert with_root.project_root == "/somewhere"


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_unknown_key_is_rejected(tool: str) -> None:
    arguments, _field, _bad = MINIMAL[tool]
    code, message = _code(tool, {**copy.deepcopy(arguments), "surprise": 1})
    assert code == "INVALID_ARGUMENTS"
    assert "unknown field `surprise`" in message


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_wrong_type_names_the_field_path(tool: str) -> None:
    arguments, field, bad = MINIMAL[tool]
    code, message = _code(tool, {**copy.deepcopy(arguments), field: bad})
    assert code == "INVALID_ARGUMENTS"
    assert f"$.{field}" in message


@pytest.mark.parametrize("tool", [t for t in TOOL_NAMES if MINIMAL[t][0]])
def test_missing_required_field_is_rejected(tool: str) -> None:
    arguments, _field, _bad = MINIMAL[tool]
    required = next(iter(arguments))
    code, message = _code(tool, {k: v for k, v in arguments.items() if k != required})
    assert code == "INVALID_ARGUMENTS"
    assert f"missing required field `{required}`" in message


def test_message_names_nested_paths() -> None:
    arguments = {**BASE, "confirmation_reason": "direct_statement", "source_ref": {"kind": "user_event", "x": 1}}
    assert _code("intent_add_explicit", arguments)[1].endswith("- at `$.source_ref`")
    arguments["source_ref"] = {"kind": "rumour", "event_id": "e"}
    assert "`$.source_ref.kind`" in _code("intent_add_explicit", arguments)[1]
    start = {"initial_explicit": ["fine", {"statement": "s", "facets": ["outcome"], "extra": True}]}
    assert "`$.initial_explicit[1]`" in _code("intent_start_task", start)[1]


def test_max_characters_type_error_message_is_exact() -> None:
    code, message = _code("intent_get_snapshot", {"task_id": TASK, "max_characters": "x"})
    assert (code, message) == ("INVALID_ARGUMENTS", "Expected `int`, got `str` - at `$.max_characters`")


@pytest.mark.parametrize("value", [499, 8001, 600.5, True, math.nan])
def test_max_characters_range_and_type(value: Any) -> None:
    assert _code("intent_get_snapshot", {"task_id": TASK, "max_characters": value})[0] == "INVALID_ARGUMENTS"
    assert decode_arguments("intent_get_snapshot", {"task_id": TASK, "max_characters": 500})


def test_integral_floats_are_integers_as_in_javascript() -> None:
    decoded = decode_arguments("intent_get_snapshot", {"task_id": TASK, "max_characters": 600.0})
    assert decoded.max_characters == 600  # type: ignore[attr-defined]
    graph = decode_arguments(
        "intent_import", {"task_id": TASK, "request_id": "r", "graph": {**GRAPH, "schema_version": 1.0}}
    )
    assert graph.graph.schema_version == 1  # type: ignore[attr-defined]
    inference = decode_arguments("intent_add_inference", {**BASE, "confidence": 1})
    assert inference.confidence == 1.0  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -0.1, 1.01, "0.5", None])
def test_confidence_rejects_nan_infinity_and_out_of_range(value: Any) -> None:
    code, message = _code("intent_add_inference", {**BASE, "confidence": value})
    assert code == "INVALID_ARGUMENTS"
    assert "$.confidence" in message
    for good in (0, 0.0, 0.5, 1):
        decode_arguments("intent_add_inference", {**BASE, "confidence": good})


def test_explicit_null_is_not_an_absent_optional() -> None:
    assert _code("intent_start_task", {"label": None})[0] == "INVALID_ARGUMENTS"
    assert opt(decode_arguments("intent_start_task", {}).label) is None  # type: ignore[attr-defined]


def test_initial_explicit_items_are_objects_or_strings() -> None:
    decoded = decode_arguments(
        "intent_start_task",
        {"initial_explicit": ["plain", {"statement": "typed", "facets": ["outcome"], "scope": "project"}]},
    )
    assert isinstance(decoded, StartTaskArgs)
    plain, typed = decoded.initial_explicit
    assert plain == "plain"
    assert isinstance(typed, InitialExplicitItem)
    assert (typed.scope, typed.facets) == ("project", ["outcome"])
    assert decode_arguments("intent_start_task", {"initial_explicit": [{"statement": "s", "facets": ["tradeoff"]}]})
    for bad in ([""], [{"statement": "s"}], [{"statement": "s", "facets": []}], [3], ["x"] * 13):
        assert _code("intent_start_task", {"initial_explicit": bad})[0] == "INVALID_ARGUMENTS"


def test_defaults_are_the_published_ones() -> None:
    start = decode_arguments("intent_start_task", {})
    assert isinstance(start, StartTaskArgs)
    assert (start.mode, start.initial_explicit) == ("on", [])
    unknown = decode_arguments("intent_mark_unknown", dict(BASE))
    assert unknown.scope == "task"  # type: ignore[attr-defined]
    dispute = decode_arguments("intent_mark_dispute", dict(BASE))
    assert dispute.related_claim_ids == []  # type: ignore[attr-defined]
    export = decode_arguments("intent_export", {"task_id": TASK})
    assert export.detail == "portable"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("request_id", "has space"),
        ("request_id", "x" * 201),
        ("task_id", "5f0c7c52-2f67-0a7e-9d2d-1b0e6b8f3a11"),
        ("statement", "x" * 4001),
        ("facets", ["outcome"] * 10),
        ("scope", "forever"),
    ],
)
def test_limits_and_patterns(field: str, value: Any) -> None:
    assert _code("intent_mark_unknown", {**BASE, field: value})[0] == "INVALID_ARGUMENTS"
    assert decode_arguments("intent_mark_unknown", dict(BASE))


def test_source_ref_limits() -> None:
    for bad in (
        {"kind": "user_event", "sha256": "A" * 64},
        {"kind": "user_event", "event_id": ""},
        {"kind": "user_event", "event_id": "e", "excerpt": "x" * 2001},
        {"event_id": "e"},
    ):
        assert _code("intent_mark_unknown", {**BASE, "source_ref": bad})[0] == "INVALID_ARGUMENTS"
    ok = {"kind": "tool_result", "sha256": "a" * 64, "excerpt": "x" * 2000}
    assert decode_arguments("intent_mark_unknown", {**BASE, "source_ref": ok})


def test_graph_is_strict_at_every_depth() -> None:
    claim = {
        "claim_id": CLAIM,
        "statement": "s",
        "role": "user",
        "epistemic_status": "explicit",
        "source_ref": SRC,
        "scope": "task",
        "valid_from": "2026-01-01T00:00:00Z",
        "last_confirmed": None,
        "supersedes": [],
        "facets": ["outcome"],
        "related_claim_ids": [],
    }
    good = {**GRAPH, "claims": [claim]}
    assert decode_arguments("intent_import", {"task_id": TASK, "request_id": "r", "graph": good})
    for path, bad in (
        ("$.graph.format", {**GRAPH, "format": "other"}),
        ("$.graph.schema_version", {**GRAPH, "schema_version": 2}),
        ("$.graph.history_complete", {**GRAPH, "history_complete": True}),
        ("$.graph.claims[0]", {**GRAPH, "claims": [{**claim, "extra": 1}]}),
        ("$.graph.claims[0].statement", {**GRAPH, "claims": [{**claim, "statement": "x" * 501}]}),
        ("$.graph.claims[0].valid_from", {**GRAPH, "claims": [{**claim, "valid_from": "yesterday"}]}),
        ("$.graph.exported_at", {**GRAPH, "exported_at": "2026-01-02T03:04:05+01:00"}),
    ):
        code, message = _code("intent_import", {"task_id": TASK, "request_id": "r", "graph": bad})
        assert code == "INVALID_ARGUMENTS"
        assert path in message, message


def test_non_object_arguments_and_unknown_tool() -> None:
    assert _code("intent_status", ["a"])[0] == "INVALID_ARGUMENTS"
    assert _code("intent_teleport", {})[0] == "INVALID_ARGUMENTS"
    assert decode_arguments("intent_status", None)
