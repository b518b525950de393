"""Every example call of the README's "The MCP tools" table, run through a real ``intentloop serve`` subprocess.

The table's placeholders are filled with real ids from a fixture task (``T``; claims ``C``, ``C1``, ``C2``), ``...``
in the import row with a real portable export of another task; each call must answer ``ok``, so a README example
that drifts from the tools fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from intentloop.mcp import TOOL_NAMES

from _support import mcp_client as H

README = Path(__file__).resolve().parents[2] / "README.md"
ROW = re.compile(r"^\|\s*`(?P<tool>intent_[a-z_]+)`\s*\|\s*`(?P<example>[^`]+)`\s*\|")
PLACEHOLDER_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ELIDED_GRAPH = re.compile(r'"graph":\s*(\{[^{}]*?),\s*\.\.\.\s*\}')


def readme_rows() -> list[tuple[str, str]]:
    """``(tool, example)`` for each row of the table under ``## The MCP tools``."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## The MCP tools", 1)[1].split("\n## ", 1)[0]
    rows = [(m["tool"], m["example"]) for m in map(ROW.match, section.splitlines()) if m]
    tools = [tool for tool, _ in rows]
    assert sorted(tools) == sorted(TOOL_NAMES), f"the table must list each of the 15 tools once: {tools}"
    return rows


def substitute(example: str, values: dict[str, str], graph: dict[str, Any]) -> dict[str, Any]:
    """The example as JSON: bare placeholders (outside strings) become JSON strings, ``<X>`` inside strings the raw
    value, and an elided graph (``{"format": ..., ...}``) the real export — whose shown keys must agree with it."""
    elided = ELIDED_GRAPH.search(example)
    if elided:
        shown = json.loads(elided.group(1) + "}")
        assert shown.items() <= graph.items(), f"the README's graph keys {shown} disagree with a real export"
        example = example[: elided.start()] + '"graph": "<GRAPH>"' + example[elided.end() :]
    assert "..." not in example, example
    out: list[str] = []
    index, in_string = 0, False
    while index < len(example):
        char = example[index]
        if in_string:
            if char == "\\":
                out.append(example[index : index + 2])
                index += 2
                continue
            in_string = char != '"'
            out.append(char)
            index += 1
            continue
        if char == '"':
            in_string = True
            out.append(char)
            index += 1
            continue
        token = PLACEHOLDER_TOKEN.match(example, index)
        if token and token.group() not in ("true", "false", "null"):
            name = token.group()
            assert name in values, f"unknown placeholder {name} in {example}"
            out.append(json.dumps(values[name]))
            index = token.end()
            continue
        out.append(char)
        index += 1
    text = "".join(out)
    for name, value in values.items():
        text = text.replace(f"<{name}>", value)
    arguments = json.loads(text)
    assert isinstance(arguments, dict)
    if arguments.get("graph") == "<GRAPH>":
        arguments["graph"] = graph
    return arguments


def test_placeholders_are_substituted_only_outside_strings() -> None:
    values = {"T": "task-id", "C": "claim-id"}
    example = '{"task_id": T, "claim_id": C, "statement": "CI on T", "confirmation": "DELETE CLAIM <C>", "n": [C]}'
    assert substitute(example, values, {}) == {
        "task_id": "task-id",
        "claim_id": "claim-id",
        "statement": "CI on T",
        "confirmation": "DELETE CLAIM claim-id",
        "n": ["claim-id"],
    }
    graph = {"format": "intent-loop-export", "claims": []}
    assert substitute('{"graph": {"format": "intent-loop-export", ...}}', {}, graph) == {"graph": graph}
    with pytest.raises(AssertionError):  # a shown key that disagrees with the real export is caught
        substitute('{"graph": {"format": "other", ...}}', {}, graph)
    with pytest.raises(AssertionError):  # an unknown placeholder is caught
        substitute('{"task_id": X}', values, {})


async def test_every_readme_example_call_succeeds(data_root: Path, project: Path) -> None:
    rows = readme_rows()
    async with H.server(data_root) as client:
        s = H.Surface(client, project)

        # the fixture task: a session (for the private-mode row) and claims for C, C1, C2
        started = await s.ok(
            "intent_start_task",
            {
                "request_id": "fixture-start",
                "host_session_id": "fixture-session",
                "initial_explicit": ["Fixture constraint to invalidate"],
            },
        )
        task = started["task_id"]
        to_invalidate = started["active_claims"][0]["claim_id"]

        async def claim(tool: str, request_id: str, statement: str, kind: str, **extra: Any) -> str:
            arguments = {
                "task_id": task,
                "request_id": request_id,
                "statement": statement,
                "source_ref": H.source(kind, f"ev-{request_id}"),
                "facets": ["outcome"],
                **extra,
            }
            return str((await s.ok(tool, arguments))["claim_id"])

        to_replace = await claim(
            "intent_add_explicit",
            "fx-1",
            "Fixture claim to replace",
            "user_event",
            confirmation_reason="direct_statement",
        )
        related = await claim("intent_add_inference", "fx-2", "Fixture inference", "agent_turn", confidence=0.5)
        to_delete = await claim("intent_add_evidence", "fx-3", "Fixture evidence to delete", "tool_result")

        source_task = (
            await s.ok("intent_start_task", {"request_id": "fixture-source", "initial_explicit": ["Imported wish"]})
        )["task_id"]
        graph = await s.ok("intent_export", {"task_id": source_task, "detail": "portable"})
        assert graph["claims"]

        base = {"T": task, "C1": to_replace, "C2": related, "session": "readme-session"}
        claim_for = {"intent_replace_claim": to_replace, "intent_invalidate": to_invalidate, "intent_delete": to_delete}
        answered: list[str] = []
        for tool, example in rows:
            arguments = substitute(example, {**base, "C": claim_for.get(tool, to_replace)}, graph)
            result = await s.ok(tool, arguments)
            answered.append(tool)
            if tool == "intent_delete":
                assert result["deleted"] == "claim" and result["claim_id"] == to_delete
                snapshot = await s.ok("intent_get_snapshot", {"task_id": task})
                assert to_delete not in json.dumps(snapshot)
                assert to_delete not in json.dumps(await s.ok("intent_export", {"task_id": task}))
                assert H.files_containing(data_root, to_delete) == {}
            elif tool == "intent_import":
                statements = {c["statement"] for c in result["active_claims"]}
                assert "Imported wish" in statements
            elif tool == "intent_set_mode":
                assert result["mode"] == arguments["mode"]
        assert sorted(answered) == sorted(TOOL_NAMES)
