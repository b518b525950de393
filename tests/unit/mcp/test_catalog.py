"""The packaged tool catalog: exactly the 15 tools, closed input schemas, complete annotations."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from importlib import resources
from typing import Any

import jsonschema
import msgspec
import pytest

from intentloop.mcp import TOOL_NAMES
from intentloop.mcp.catalog import close_object_schemas, iter_object_schemas, load_catalog, parse_catalog

EXPECTED = {
    "intent_status",
    "intent_start_task",
    "intent_get_snapshot",
    "intent_add_explicit",
    "intent_add_inference",
    "intent_add_evidence",
    "intent_mark_unknown",
    "intent_mark_dispute",
    "intent_replace_claim",
    "intent_invalidate",
    "intent_list_candidates",
    "intent_export",
    "intent_import",
    "intent_delete",
    "intent_set_mode",
}
READ_ONLY = {"intent_status", "intent_get_snapshot", "intent_list_candidates", "intent_export"}
NOT_IDEMPOTENT = {"intent_start_task", "intent_delete"}


def _document() -> dict[str, Any]:
    text = resources.files("intentloop.mcp").joinpath("tool_schemas.json").read_text(encoding="utf-8")
    return dict(json.loads(text))


def test_catalog_lists_exactly_the_fifteen_tools() -> None:
    catalog = load_catalog()
    assert {tool.name for tool in catalog.tools} == EXPECTED
    assert set(TOOL_NAMES) == EXPECTED
    assert len(catalog.tools) == 15


def test_packaged_file_itself_closes_every_object_schema() -> None:
    # The file on disk (not just the loaded copy) is closed, so a reader of the file sees what clients see.
    for tool in _document()["tools"]:
        nodes = list(iter_object_schemas(tool["inputSchema"]))
        assert nodes, tool["name"]
        for path, node in nodes:
            assert node.get("additionalProperties") is False, f"{tool['name']} {path}"


def test_loading_closes_an_object_schema_left_open() -> None:
    document = copy.deepcopy(_document())
    source_ref = document["tools"][3]["inputSchema"]["properties"]["source_ref"]
    del source_ref["additionalProperties"]
    catalog = parse_catalog(document)
    loaded = catalog.tools[3].input_schema["properties"]["source_ref"]
    assert loaded["additionalProperties"] is False
    # positive control: the edited document really was open
    assert "additionalProperties" not in source_ref


def test_close_object_schemas_reaches_array_items_and_any_of_branches() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"anyOf": [{"type": "object", "properties": {}}, {"type": "string"}]}}
        },
    }
    closed = close_object_schemas(schema)
    assert closed["additionalProperties"] is False
    assert closed["properties"]["items"]["items"]["anyOf"][0]["additionalProperties"] is False
    assert "additionalProperties" not in closed["properties"]["items"]["items"]["anyOf"][1]
    assert "additionalProperties" not in schema  # the input is not modified


def test_annotations_are_complete_and_match_the_original() -> None:
    for tool in load_catalog().tools:
        hints = tool.annotations
        assert set(hints) == {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        assert hints["openWorldHint"] is False
        assert hints["readOnlyHint"] is (tool.name in READ_ONLY)
        assert hints["destructiveHint"] is (tool.name == "intent_delete")
        assert hints["idempotentHint"] is (tool.name not in NOT_IDEMPOTENT)
        assert tool.title and tool.description


def test_every_tool_accepts_optional_project_root_with_published_limits() -> None:
    for tool in load_catalog().tools:
        root = tool.input_schema["properties"]["project_root"]
        assert root["type"] == "string" and root["minLength"] == 1 and root["maxLength"] == 1000
        assert "project_root" not in tool.input_schema.get("required", [])


def test_envelope_schema_accepts_both_answer_shapes_and_rejects_extras() -> None:
    schema = load_catalog().envelope_schema
    ok = {"ok": True, "schema_version": 1, "operation": "x", "project_id": None, "task_id": None, "result": [1]}
    failed = {
        "ok": False,
        "schema_version": 1,
        "operation": "x",
        "project_id": "a" * 64,
        "task_id": None,
        "error": {"code": "C", "message": "m", "retryable": False},
    }
    jsonschema.validate(ok, schema)
    jsonschema.validate(failed, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**ok, "extra": 1}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**failed, "error": {"code": "C", "message": "m"}}, schema)


def test_parse_catalog_refuses_a_missing_tool() -> None:
    document = copy.deepcopy(_document())
    document["tools"] = document["tools"][:-1]
    with pytest.raises(ValueError, match="exactly the 15 tools"):
        parse_catalog(document)
    parse_catalog(_document())  # positive control


def test_parse_catalog_refuses_an_open_world_tool() -> None:
    document = copy.deepcopy(_document())
    document["tools"][0]["annotations"]["openWorldHint"] = True
    with pytest.raises(ValueError, match="openWorldHint"):
        parse_catalog(document)


def test_importing_the_package_face_loads_neither_mcp_nor_trio() -> None:
    code = "import sys, intentloop.mcp; print(sorted(m for m in ('mcp', 'trio', 'anyio') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    # positive control: the server module loads trio — and still neither the SDK nor its pydantic models
    modules = "('mcp', 'mcp_types', 'pydantic', 'anyio', 'trio')"
    code = f"import sys, intentloop.mcp.server; print(sorted(m for m in {modules} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['trio']"


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_published_fields_are_exactly_what_the_service_decodes(tool: str) -> None:
    from intentloop.service.args import TOOL_ARGS

    spec = load_catalog().get(tool)
    assert spec is not None
    assert set(spec.properties) == set(TOOL_ARGS[tool].__struct_fields__)
    required = set(spec.input_schema.get("required", []))
    struct_required = {
        name
        for name, field in zip(TOOL_ARGS[tool].__struct_fields__, msgspec.structs.fields(TOOL_ARGS[tool]), strict=True)
        if field.required
    }
    assert required == struct_required


def test_the_server_start_up_path_imports_nothing_beyond_trio_msgspec_and_our_modules() -> None:
    # What a host waits for before the first tools/list: building the server and the stdio transport. The service
    # (store, model, rules) is loaded later, in a worker thread; docs/MCP.md has the measurements behind this.
    code = (
        "import sys, trio, msgspec\n"
        "before = set(sys.modules)\n"
        "import intentloop.mcp.stdio, intentloop.mcp.server as server\n"
        "from intentloop.mcp.protocol import negotiate\n"
        "server.McpServer().tools(negotiate('2025-06-18'))\n"
        "print(sorted(m for m in set(sys.modules) - before if not m.startswith('intentloop')))\n"
        "print('intentloop.service.intent_service' in sys.modules, 'intentloop.store' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["[]", "False False"]


_IGNORED_KEYWORDS = {"title", "description", "format", "$ref", "default"}


def _constraints(schema: Any, defs: dict[str, Any]) -> Any:
    """A schema node reduced to what it accepts: refs resolved, anyOf order and enum order ignored, prose dropped."""
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _constraints(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _IGNORED_KEYWORDS:
            continue
        if key == "properties":
            out[key] = {name: _constraints(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _constraints(value, defs)
        elif key == "anyOf":
            out[key] = sorted(json.dumps(_constraints(sub, defs), sort_keys=True) for sub in value)
        elif key == "const":
            out["enum"] = [value]
        elif key in ("enum", "required"):
            if value:
                out[key] = sorted(value, key=json.dumps)
        else:
            out[key] = value
    if "enum" in out:  # the values decide what is accepted (the published side also names a type, msgspec does not)
        out.pop("type", None)
    return out


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_the_published_schema_and_the_argument_struct_agree_field_by_field(tool: str) -> None:
    # tool_schemas.json is generated from the argument structs by our own walk (intentloop/mcp/schemagen.py); msgspec's
    # schema of the same structs is an independent derivation of what the decoder accepts. Every field, type, length,
    # pattern, range, enum, item rule and required flag must agree.
    from intentloop.service.args import TOOL_ARGS

    (root,), defs = msgspec.json.schema_components([TOOL_ARGS[tool]])
    decoded = _constraints(root, defs)
    published = _constraints(load_catalog().get(tool).input_schema, {})  # type: ignore[union-attr]
    for name in published["properties"]:
        assert decoded["properties"].get(name) == published["properties"][name], f"{tool}.{name}"
    assert decoded == published


def test_the_field_by_field_comparison_notices_a_changed_limit() -> None:
    # Control for the test above: one bound changed on the published side is a difference.
    schema = copy.deepcopy(dict(load_catalog().get("intent_start_task").input_schema))  # type: ignore[union-attr]
    schema["properties"]["label"]["maxLength"] = 501
    assert _constraints(schema, {}) != _constraints(load_catalog().get("intent_start_task").input_schema, {})  # type: ignore[union-attr]


def test_snapshot_history_and_time_arguments_are_published() -> None:
    schema = {tool.name: tool.input_schema for tool in load_catalog().tools}["intent_get_snapshot"]
    as_of = schema["properties"]["as_of"]
    task = "5f0c7c52-2f67-4a7e-9d2d-1b0e6b8f3a11"
    jsonschema.validate({"task_id": task, "as_of": "2026-11-30T01:02:03.456Z"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"task_id": task, "as_of": "2026-11-30T01:02Z"}, schema)
    from intentloop.service.args import INSTANT_PATTERN

    assert as_of["pattern"] == INSTANT_PATTERN
    assert schema["properties"]["include_history"] == {**schema["properties"]["include_history"], "type": "boolean"}
    assert "as_of" not in schema["required"] and "include_history" not in schema["required"]
