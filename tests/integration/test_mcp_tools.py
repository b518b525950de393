"""Every tool end to end through a real ``python -m intentloop.mcp`` subprocess and the official MCP client: each
tool's success path on real storage, and unknown keys and wrong types on every tool answered with the envelope,
``INVALID_ARGUMENTS``, naming the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from intentloop.mcp import TOOL_NAMES

from _support.mcp_client import Surface, server, source

NIL_TASK = "5a0c2d4e-6f70-4a1b-8c2d-3e4f5a6b7c8d"


async def test_every_tool_succeeds_end_to_end(data_root: Path, project: Path) -> None:
    async with server(data_root) as client:
        s = Surface(client, project)
        used: set[str] = set()

        async def ok(tool: str, arguments: dict[str, Any]) -> Any:
            used.add(tool)
            return await s.ok(tool, arguments)

        status = await ok("intent_status", {})
        assert status["project_id"] == s.project_id and status["task_count"] == 0

        started = await ok(
            "intent_start_task",
            {"request_id": "start-1", "label": "demo", "initial_explicit": ["Keep the public API stable"]},
        )
        task = started["task_id"]
        assert [c["statement"] for c in started["active_claims"]] == ["Keep the public API stable"]

        snapshot = await ok("intent_get_snapshot", {"task_id": task})
        assert snapshot["task_id"] == task and snapshot["mode"] == "on"

        base = {"task_id": task, "facets": ["outcome"]}
        explicit = await ok(
            "intent_add_explicit",
            {
                **base,
                "request_id": "r-explicit",
                "statement": "Ship the CLI before the web UI",
                "source_ref": source("user_event", "turn-1"),
                "confirmation_reason": "direct_statement",
            },
        )
        assert explicit["role"] == "user" and explicit["epistemic_status"] == "explicit"
        inferred = await ok(
            "intent_add_inference",
            {
                **base,
                "request_id": "r-inferred",
                "statement": "The user probably prefers small commits",
                "source_ref": source("agent_turn", "turn-2"),
                "confidence": 0.6,
            },
        )
        assert inferred["epistemic_status"] == "inferred" and inferred["confidence"] == 0.6
        evidence = await ok(
            "intent_add_evidence",
            {
                **base,
                "request_id": "r-evidence",
                "statement": "The test suite passes on Python 3.11",
                "source_ref": source("tool_result", "pytest-1"),
                "feedback_class": "keep",
            },
        )
        assert evidence["role"] == "evidence" and evidence["result_feedback_class"] == "keep"
        unknown = await ok(
            "intent_mark_unknown",
            {
                **base,
                "request_id": "r-unknown",
                "statement": "Whether Windows must be supported",
                "source_ref": source("agent_turn", "turn-3"),
            },
        )
        assert unknown["epistemic_status"] == "unknown" and "unknown" in unknown["facets"]
        dispute = await ok(
            "intent_mark_dispute",
            {
                **base,
                "request_id": "r-dispute",
                "statement": "Small commits conflict with shipping the CLI first",
                "source_ref": source("agent_turn", "turn-4"),
                "related_claim_ids": [explicit["claim_id"], inferred["claim_id"]],
            },
        )
        assert dispute["epistemic_status"] == "disputed" and "disagreement" in dispute["facets"]
        replaced = await ok(
            "intent_replace_claim",
            {
                **base,
                "request_id": "r-replace",
                "statement": "The user prefers one commit per feature",
                "source_ref": source("agent_turn", "turn-5"),
                "replacement_kind": "inferred",
                "supersedes": [inferred["claim_id"]],
                "confidence": 0.7,
            },
        )
        assert replaced["supersedes"] == [inferred["claim_id"]]
        invalidated = await ok(
            "intent_invalidate",
            {
                "task_id": task,
                "request_id": "r-invalidate",
                "claim_id": evidence["claim_id"],
                "reason": "The run used a stale lock file",
                "source_ref": source("tool_result", "pytest-2"),
            },
        )
        assert invalidated["claim_id"] == evidence["claim_id"]

        candidates = await ok("intent_list_candidates", {"task_id": task})
        assert isinstance(candidates, list)

        portable = await ok("intent_export", {"task_id": task})
        assert portable["format"] == "intent-loop-export" and portable["source_task_id"] == task
        summary = await ok("intent_export", {"task_id": task, "detail": "summary"})
        assert summary["format"] == "intent-loop-human-summary"

        second = (await ok("intent_start_task", {"request_id": "start-2"}))["task_id"]
        imported = await ok("intent_import", {"task_id": second, "request_id": "r-import", "graph": portable})
        assert imported["task_id"] == second and imported["active_claims"]

        mode = await ok("intent_set_mode", {"task_id": task, "request_id": "r-off", "mode": "off"})
        assert mode["mode"] == "off"
        off = await s.call("intent_get_snapshot", {"task_id": task})
        assert off["ok"] is False and off["error"]["code"] == "MODE_OFF"
        assert (await ok("intent_set_mode", {"task_id": task, "request_id": "r-on", "mode": "on"}))["mode"] == "on"

        deleted = await ok(
            "intent_delete",
            {
                "task_id": task,
                "target": "claim",
                "claim_id": unknown["claim_id"],
                "confirmation": f"DELETE CLAIM {unknown['claim_id']}",
            },
        )
        assert deleted["deleted"] == "claim" and deleted["claim_id"] == unknown["claim_id"]
        deleted = await ok(
            "intent_delete", {"task_id": second, "target": "task", "confirmation": f"DELETE TASK {second}"}
        )
        assert deleted["deleted"] == "task"

        task_status = await ok("intent_status", {"task_id": task})
        assert task_status["task_id"] == task and task_status["mode"] == "on"
        assert used == set(TOOL_NAMES)


# Minimal arguments that pass decoding for each tool, and one field to break: (path, wrong value, fragment).
_SRC = {"kind": "agent_turn", "event_id": "e-1"}
_CLAIM = {"task_id": NIL_TASK, "request_id": "r-1", "statement": "s", "source_ref": _SRC, "facets": ["outcome"]}
VALID: dict[str, dict[str, Any]] = {
    "intent_status": {},
    "intent_start_task": {"request_id": "r-1"},
    "intent_get_snapshot": {"task_id": NIL_TASK},
    "intent_add_explicit": {
        **_CLAIM,
        "source_ref": {"kind": "user_event", "event_id": "e-1"},
        "confirmation_reason": "direct_statement",
    },
    "intent_add_inference": {**_CLAIM, "confidence": 0.5},
    "intent_add_evidence": {**_CLAIM, "source_ref": {"kind": "tool_result", "event_id": "e-1"}},
    "intent_mark_unknown": _CLAIM,
    "intent_mark_dispute": _CLAIM,
    "intent_replace_claim": {**_CLAIM, "replacement_kind": "unknown", "supersedes": [NIL_TASK]},
    "intent_invalidate": {
        "task_id": NIL_TASK,
        "request_id": "r-1",
        "claim_id": NIL_TASK,
        "reason": "r",
        "source_ref": _SRC,
    },
    "intent_list_candidates": {"task_id": NIL_TASK},
    "intent_export": {"task_id": NIL_TASK},
    "intent_import": {
        "task_id": NIL_TASK,
        "request_id": "r-1",
        "graph": {
            "format": "intent-loop-export",
            "schema_version": 1,
            "exported_at": "2026-01-01T00:00:00.000Z",
            "source_project_id": "a" * 64,
            "source_task_id": NIL_TASK,
            "history_complete": False,
            "claims": [],
            "invalidated_claim_ids": [],
            "candidates": [],
        },
    },
    "intent_delete": {"task_id": NIL_TASK, "target": "task", "confirmation": f"DELETE TASK {NIL_TASK}"},
    "intent_set_mode": {"task_id": NIL_TASK, "request_id": "r-1", "mode": "on"},
}
WRONG_TYPE: dict[str, tuple[tuple[str, ...], Any]] = {
    "intent_status": (("task_id",), 7),
    "intent_start_task": (("label",), ["not", "a", "string"]),
    "intent_get_snapshot": (("max_characters",), "600"),
    "intent_add_explicit": (("statement",), 5),
    "intent_add_inference": (("confidence",), "0.5"),
    "intent_add_evidence": (("facets",), "outcome"),
    "intent_mark_unknown": (("source_ref", "kind"), 3),
    "intent_mark_dispute": (("related_claim_ids",), NIL_TASK),
    "intent_replace_claim": (("supersedes",), NIL_TASK),
    "intent_invalidate": (("reason",), None),
    "intent_list_candidates": (("task_id",), True),
    "intent_export": (("detail",), 1),
    "intent_import": (("graph", "claims"), {}),
    "intent_delete": (("confirmation",), 12),
    "intent_set_mode": (("mode",), False),
}
# Where each tool has a nested object, an unknown key inside it; else an unknown key at the top level.
UNKNOWN_KEY: dict[str, tuple[str, ...]] = {
    tool: ("source_ref",) if "source_ref" in VALID[tool] else ("graph",) if tool == "intent_import" else ()
    for tool in TOOL_NAMES
}


def _with(arguments: dict[str, Any], path: tuple[str, ...], key: str, value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(arguments))
    target = copy
    for part in path:
        target = target[part]
    target[key] = value
    return copy


def _dotted(path: tuple[str, ...]) -> str:
    return "$" + "".join(f".{part}" for part in path)


async def test_unknown_keys_and_wrong_types_on_every_tool(data_root: Path, project: Path) -> None:
    failures: list[str] = []
    async with server(data_root) as client:
        s = Surface(client, project)
        for tool in TOOL_NAMES:
            control = await s.call(tool, VALID[tool])
            if not control["ok"] and control["error"]["code"] == "INVALID_ARGUMENTS":
                failures.append(f"{tool}: the valid arguments were refused: {control['error']}")

            path = UNKNOWN_KEY[tool]
            envelope = await s.call(tool, _with(VALID[tool], path, "bogus_key", 1))
            message = envelope.get("error", {}).get("message", "")
            if envelope["ok"] or envelope["error"]["code"] != "INVALID_ARGUMENTS" or "`bogus_key`" not in message:
                failures.append(f"{tool}: unknown key at {_dotted(path)} answered {envelope}")
            elif path and f"`{_dotted(path)}`" not in message:
                failures.append(f"{tool}: unknown key message does not name {_dotted(path)}: {message}")

            field_path, value = WRONG_TYPE[tool]
            envelope = await s.call(tool, _with(VALID[tool], field_path[:-1], field_path[-1], value))
            message = envelope.get("error", {}).get("message", "")
            if envelope["ok"] or envelope["error"]["code"] != "INVALID_ARGUMENTS":
                failures.append(f"{tool}: wrong type at {_dotted(field_path)} answered {envelope}")
            elif f"`{_dotted(field_path)}`" not in message:
                failures.append(f"{tool}: wrong-type message does not name {_dotted(field_path)}: {message}")
    assert not failures, "\n".join(failures)
