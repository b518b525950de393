"""The server in memory, over real JSON-RPC framing, in both protocol eras, with a fake service."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
import trio.testing
from mcp import Client
from mcp.shared.exceptions import MCPError

from intentloop import __version__
from intentloop.errors import IntentLoopError
from intentloop.mcp import TOOL_NAMES, session as session_module
from intentloop.mcp.catalog import iter_object_schemas, load_catalog
from intentloop.mcp.server import McpServer
from intentloop.model import project_id_for
from intentloop.service import decode_arguments

from _support.mcp_client import META_KEY, envelope_of, error_code, roots_callback
from _support.mcp_memory import fake_canonicalize

ERAS = ["legacy", "auto"]  # "auto" against an in-process server speaks 2026-07-28 (server/discover, no handshake)
TASK = "6f1c1a51-8e7b-4b8f-9a3e-2f3c1d2e4b5a"


async def _call(client: Client, name: str, arguments: Any = None, meta: Any = None) -> dict[str, Any]:
    return envelope_of(await client.call_tool(name, arguments, meta=meta))


# ------------------------------------------------------------------------------------------------ capabilities
async def test_initialize_advertises_sandbox_state_meta(server: McpServer, connect: Any) -> None:
    async with Client(connect(server), mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        caps = client.server_capabilities
        assert caps.experimental == {"codex/sandbox-state-meta": {}}
        assert caps.tools is not None and caps.resources is not None
        assert client.server_info is not None
        assert client.server_info.name == "intent-loop"
        assert client.server_info.version == __version__
        assert client.instructions and "never treat" in client.instructions.lower()


async def test_discover_advertises_sandbox_state_meta(server: McpServer, connect: Any) -> None:
    async with Client(connect(server)) as client:
        assert client.protocol_version == "2026-07-28"
        discovered = await client.session.discover()
        assert discovered.capabilities.experimental == {"codex/sandbox-state-meta": {}}
        assert discovered.instructions == client.instructions


# ------------------------------------------------------------------------------------------------------- tools
@pytest.mark.parametrize("mode", ERAS)
async def test_list_tools_publishes_fifteen_closed_annotated_tools(server: McpServer, mode: str, connect: Any) -> None:
    async with Client(connect(server), mode=mode) as client:
        tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == list(TOOL_NAMES)
    envelope_schema = dict(load_catalog().envelope_schema)
    for tool in tools:
        assert tool.title
        objects = list(iter_object_schemas(tool.input_schema))
        assert objects and all(node["additionalProperties"] is False for _, node in objects), tool.name
        assert tool.output_schema == envelope_schema
        hints = tool.annotations
        assert hints is not None and hints.open_world_hint is False
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint)
    delete = next(tool for tool in tools if tool.name == "intent_delete")
    assert delete.annotations is not None and delete.annotations.destructive_hint is True


@pytest.mark.parametrize("mode", ERAS)
async def test_success_is_one_envelope_and_the_service_gets_the_canonical_root(
    server: McpServer, service: Any, project: Path, mode: str, connect: Any
) -> None:
    alias = project.parent / "alias"
    alias.symlink_to(project)
    async with Client(connect(server), mode=mode) as client:
        envelope = await _call(client, "intent_get_snapshot", {"project_root": str(alias), "task_id": TASK})
    canonical = str(project.resolve())
    assert envelope == {
        "ok": True,
        "schema_version": 1,
        "operation": "intent_get_snapshot",
        "project_id": project_id_for(canonical),
        "task_id": TASK,
        "result": {"task_id": TASK, "answer": 42},
    }
    (call,) = service.calls
    # The service gets the struct the server decoded (once), not raw arguments to decode again.
    decoded = decode_arguments("intent_get_snapshot", {"project_root": str(alias), "task_id": TASK})
    assert call == {
        "tool": "intent_get_snapshot",
        "arguments": decoded,
        "project_root": canonical,
        "project_id": project_id_for(canonical),
    }


async def test_task_id_falls_back_to_the_result(server: McpServer, service: Any, project: Path, connect: Any) -> None:
    async with Client(connect(server), mode="legacy") as client:
        envelope = await _call(client, "intent_start_task", {"project_root": str(project)})
        assert envelope["task_id"] == TASK
        service.result = [{"task_id": TASK}]
        envelope = await _call(client, "intent_status", {"project_root": str(project)})
        assert envelope["task_id"] is None and envelope["result"] == [{"task_id": TASK}]


async def test_service_errors_keep_their_code_and_the_project(
    server: McpServer, service: Any, project: Path, connect: Any
) -> None:
    service.raises = IntentLoopError("lock busy", code="LOCK_TIMEOUT")
    async with Client(connect(server), mode="legacy") as client:
        envelope = await _call(client, "intent_status", {"project_root": str(project), "task_id": TASK})
    assert envelope["error"] == {"code": "LOCK_TIMEOUT", "message": "lock busy", "retryable": True}
    assert envelope["project_id"] == project_id_for(str(project.resolve()))
    assert envelope["task_id"] == TASK


async def test_unexpected_exceptions_are_internal_errors_without_details(
    server: McpServer, service: Any, project: Path, caplog: pytest.LogCaptureFixture, connect: Any
) -> None:
    service.raises = RuntimeError("secret detail /home/u/.ssh")
    async with Client(connect(server), mode="legacy") as client:
        envelope = await _call(client, "intent_status", {"project_root": str(project)})
    assert error_code(envelope) == "INTERNAL_ERROR"
    assert "secret" not in json.dumps(envelope) and "Traceback" not in json.dumps(envelope)
    assert "secret detail" in caplog.text  # the operator still finds it in the server log


@pytest.mark.parametrize("mode", ERAS)
async def test_an_unknown_tool_is_a_protocol_error(
    server: McpServer, service: Any, project: Path, mode: str, connect: Any
) -> None:
    async with Client(connect(server), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("intent_frobnicate", {"project_root": str(project)})
        assert raised.value.error.code == -32602
        assert raised.value.error.message == "Unknown tool: intent_frobnicate"
        assert service.calls == []
        assert (await _call(client, "intent_status", {"project_root": str(project)}))["ok"] is True  # control


@pytest.mark.parametrize("arguments", [[1, 2], "text", 7, True])
async def test_arguments_that_are_not_an_object_are_a_protocol_error(
    server: McpServer, service: Any, raw: Any, project: Path, arguments: Any
) -> None:
    async with raw(server) as session:
        answer = await session.request("tools/call", {"name": "intent_status", "arguments": arguments})
        assert "result" not in answer
        assert answer["error"] == {
            "code": -32602,
            "message": "Invalid params: tools/call arguments must be an object",
        }
        assert service.calls == []
        # positive control on the same connection: an object goes through
        answer = await session.request(
            "tools/call", {"name": "intent_status", "arguments": {"project_root": str(project)}}
        )
        assert answer["result"]["structuredContent"]["ok"] is True


async def test_absent_arguments_count_as_empty(server: McpServer, raw: Any, project: Path) -> None:
    async with raw(server) as session:
        answer = await session.request("tools/call", {"name": "intent_status"})
        assert error_code(answer["result"]["structuredContent"]) == "PROJECT_ROOT_REQUIRED"
        meta = {META_KEY: {"sandboxCwd": project.as_uri()}}
        answer = await session.request("tools/call", {"name": "intent_status", "_meta": meta})
        assert answer["result"]["structuredContent"]["ok"] is True


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_unknown_top_level_key_on_every_tool(server: McpServer, service: Any, tool: str, connect: Any) -> None:
    async with Client(connect(server), mode="legacy") as client:
        # no project root at all: the unknown key is still what gets reported
        envelope = await _call(client, tool, {"definitely_not_a_field": 1})
        assert error_code(envelope) == "INVALID_ARGUMENTS"
        assert "`definitely_not_a_field`" in envelope["error"]["message"]
        assert envelope["project_id"] is None
        assert service.calls == []


@pytest.mark.parametrize("mode", ERAS)
async def test_arguments_are_decoded_before_the_root_is_resolved(
    server: McpServer, service: Any, project: Path, mode: str, connect: Any
) -> None:
    bad = {"task_id": TASK, "max_characters": "600"}
    async with Client(connect(server), mode=mode, list_roots_callback=roots_callback(project.as_uri())) as client:
        # neither a missing root, nor malformed metadata, nor a client round trip comes first
        envelope = await _call(client, "intent_get_snapshot", bad)
        assert error_code(envelope) == "INVALID_ARGUMENTS"
        assert "`$.max_characters`" in envelope["error"]["message"]
        envelope = await _call(client, "intent_get_snapshot", bad, meta={META_KEY: {"sandboxCwd": 1}})
        assert error_code(envelope) == "INVALID_ARGUMENTS"
        nested = {"task_id": TASK, "request_id": "r", "statement": "s", "facets": ["outcome"], "confidence": 0.5}
        envelope = await _call(client, "intent_add_inference", {**nested, "source_ref": {"kind": "x", "event_id": "e"}})
        assert error_code(envelope) == "INVALID_ARGUMENTS" and "`$.source_ref.kind`" in envelope["error"]["message"]
        assert service.calls == []
        # positive control: the same call with a valid value reaches the service through the client's root
        good = await _call(client, "intent_get_snapshot", {"task_id": TASK, "max_characters": 600})
        assert good["ok"] is True and service.calls[0]["project_root"] == str(project.resolve())


async def test_a_custom_decoder_is_used(make_server: Callable[..., McpServer], project: Path, connect: Any) -> None:
    seen: list[tuple[str, Any]] = []

    def decode(tool: str, arguments: Any) -> object:
        seen.append((tool, arguments))
        if "veto" in arguments:
            raise IntentLoopError("vetoed - at `$.veto`", code="INVALID_ARGUMENTS")
        return arguments

    server = make_server(decode=decode)
    async with Client(connect(server), mode="legacy") as client:
        assert error_code(await _call(client, "intent_status", {"veto": 1})) == "INVALID_ARGUMENTS"
        assert (await _call(client, "intent_status", {"project_root": str(project)}))["ok"] is True
    assert seen == [("intent_status", {"veto": 1}), ("intent_status", {"project_root": str(project)})]


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_wrong_project_root_type_on_every_tool(server: McpServer, service: Any, tool: str, connect: Any) -> None:
    async with Client(connect(server), mode="legacy") as client:
        meta = {META_KEY: {"sandboxCwd": "file:///"}}
        envelope = await _call(client, tool, {"project_root": 42}, meta=meta)
        assert error_code(envelope) == "INVALID_ARGUMENTS"
        assert "`$.project_root`" in envelope["error"]["message"]
        assert service.calls == []


# ----------------------------------------------------------------------------------------------- project root
@pytest.mark.parametrize("mode", ERAS)
async def test_sandbox_cwd_as_uri_and_as_path(
    server: McpServer, service: Any, project: Path, mode: str, connect: Any
) -> None:
    expected = project_id_for(str(project.resolve()))
    async with Client(connect(server), mode=mode) as client:
        for cwd in (project.as_uri(), str(project)):
            meta = {META_KEY: {"sandboxCwd": cwd, "permissionProfile": {"kind": "x"}, "futureKey": [1]}}
            envelope = await _call(client, "intent_status", {}, meta=meta)
            assert envelope["ok"] is True and envelope["project_id"] == expected
        fallback = {"codex/sandbox-state": {"sandboxCwd": project.as_uri()}}
        assert (await _call(client, "intent_status", {}, meta=fallback))["project_id"] == expected
    assert [call["project_root"] for call in service.calls] == [str(project.resolve())] * 3


@pytest.mark.parametrize("mode", ERAS)
async def test_malformed_sandbox_metadata_is_refused_before_the_service(
    server: McpServer, service: Any, project: Path, mode: str, connect: Any
) -> None:
    async with Client(connect(server), mode=mode) as client:
        for bad in ({"sandboxCwd": "relative/dir"}, {"sandboxPolicy": {}}, "file:///x", {"sandboxCwd": 3}):
            envelope = await _call(client, "intent_status", {"project_root": str(project)}, meta={META_KEY: bad})
            assert error_code(envelope) == "PROJECT_ROOT_METADATA_INVALID", bad
            assert envelope["project_id"] is None
    assert service.calls == []


@pytest.mark.parametrize("mode", ERAS)
async def test_explicit_root_must_match_the_sandbox(
    server: McpServer, service: Any, project: Path, other_project: Path, tmp_path: Path, mode: str, connect: Any
) -> None:
    meta = {META_KEY: {"sandboxCwd": project.as_uri()}}
    async with Client(connect(server), mode=mode) as client:
        mismatch = await _call(client, "intent_status", {"project_root": str(other_project)}, meta=meta)
        assert error_code(mismatch) == "PROJECT_ROOT_MISMATCH"
        invalid = await _call(client, "intent_status", {"project_root": str(tmp_path / "nope")}, meta=meta)
        assert error_code(invalid) == "PROJECT_ROOT_INVALID"
        assert service.calls == []
        same = await _call(client, "intent_status", {"project_root": str(project) + "/"}, meta=meta)
        assert same["ok"] is True


@pytest.mark.parametrize("mode", ERAS)
async def test_project_root_argument(
    server: McpServer, service: Any, project: Path, tmp_path: Path, mode: str, connect: Any
) -> None:
    async with Client(connect(server), mode=mode) as client:
        assert (await _call(client, "intent_status", {"project_root": str(project)}))["ok"] is True
        missing = await _call(client, "intent_status", {"project_root": str(tmp_path / "nope")})
        assert error_code(missing) == "PROJECT_ROOT_INVALID"
        relative = await _call(client, "intent_status", {"project_root": "relative/dir"})
        assert error_code(relative) == "PROJECT_ROOT_INVALID"
    assert len(service.calls) == 1


@pytest.mark.parametrize("mode", ERAS)
async def test_exactly_one_client_root(server: McpServer, service: Any, project: Path, mode: str, connect: Any) -> None:
    async with Client(connect(server), mode=mode, list_roots_callback=roots_callback(project.as_uri())) as client:
        envelope = await _call(client, "intent_status", {})
    assert envelope["ok"] is True
    assert envelope["project_id"] == project_id_for(str(project.resolve()))
    assert service.calls[0]["project_root"] == str(project.resolve())


@pytest.mark.parametrize("mode", ERAS)
async def test_two_client_roots_are_ambiguous(
    server: McpServer, service: Any, project: Path, other_project: Path, mode: str, connect: Any
) -> None:
    callback = roots_callback(project.as_uri(), other_project.as_uri())
    async with Client(connect(server), mode=mode, list_roots_callback=callback) as client:
        assert error_code(await _call(client, "intent_status", {})) == "PROJECT_ROOT_REQUIRED"
        # the argument still works beside ambiguous roots
        assert (await _call(client, "intent_status", {"project_root": str(other_project)}))["ok"] is True


@pytest.mark.parametrize("mode", ERAS)
async def test_sandbox_beats_client_roots(
    server: McpServer, service: Any, project: Path, other_project: Path, mode: str, connect: Any
) -> None:
    meta = {META_KEY: {"sandboxCwd": project.as_uri()}}
    async with Client(connect(server), mode=mode, list_roots_callback=roots_callback(other_project.as_uri())) as client:
        envelope = await _call(client, "intent_status", {}, meta=meta)
    assert envelope["project_id"] == project_id_for(str(project.resolve()))


@pytest.mark.parametrize("mode", ERAS)
async def test_no_root_anywhere_is_required_and_does_not_wait(server: McpServer, mode: str, connect: Any) -> None:
    async with Client(connect(server), mode=mode) as client:
        with trio.fail_after(1):
            envelope = await _call(client, "intent_status", {})
    assert error_code(envelope) == "PROJECT_ROOT_REQUIRED"
    assert envelope["project_id"] is None


async def test_a_client_that_never_answers_roots_is_bounded(
    make_server: Callable[..., McpServer], project: Path, connect: Any
) -> None:
    async def never(ctx: Any) -> types.ListRootsResult:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    server = make_server(roots_timeout=0.2)
    async with Client(connect(server), mode="legacy", list_roots_callback=never) as client:
        with trio.fail_after(2):
            envelope = await _call(client, "intent_status", {})
            assert error_code(envelope) == "PROJECT_ROOT_REQUIRED"
            # positive control: the same connection still serves an explicit root
            assert (await _call(client, "intent_status", {"project_root": str(project)}))["ok"] is True


async def test_a_client_whose_roots_fail_gets_root_required(server: McpServer, connect: Any) -> None:
    async def refuse(ctx: Any) -> types.ErrorData:
        return types.ErrorData(code=-32603, message="no roots here")

    async with Client(connect(server), mode="legacy", list_roots_callback=refuse) as client:
        assert error_code(await _call(client, "intent_status", {})) == "PROJECT_ROOT_REQUIRED"


# ---------------------------------------------------------------------------------------------------- outputs
async def test_the_client_validates_answers_against_the_envelope_schema(
    server: McpServer, project: Path, connect: Any
) -> None:
    async with Client(connect(server), mode="legacy") as client:
        good = await client.call_tool("intent_status", {"project_root": str(project)})  # validated by the client
        await client.session.validate_tool_result("intent_status", good)
        bad = types.CallToolResult(content=[], structured_content={"ok": True, "schema_version": 2})
        with pytest.raises(RuntimeError, match="Invalid structured content"):
            await client.session.validate_tool_result("intent_status", bad)


# --------------------------------------------------------------------------------------------------- resource
@pytest.mark.parametrize("mode", ERAS)
async def test_skill_resource_is_listed_and_served(server: McpServer, mode: str, connect: Any) -> None:
    async with Client(connect(server), mode=mode) as client:
        (resource,) = (await client.list_resources()).resources
        assert str(resource.uri) == "intent-loop://skill/intent"
        assert resource.name == "intent-skill" and resource.mime_type == "text/markdown"
        (content,) = (await client.read_resource("intent-loop://skill/intent")).contents
    assert isinstance(content, types.TextResourceContents)
    assert content.mime_type == "text/markdown"
    assert content.text.startswith("---\nname: intent\n")
    repo_skill = Path(__file__).resolve().parents[3] / "skills" / "intent" / "SKILL.md"
    assert content.text == repo_skill.read_text(encoding="utf-8")


async def test_missing_skill_is_skill_not_found(
    make_server: Callable[..., McpServer], tmp_path: Path, connect: Any
) -> None:
    server = make_server(skill_paths=[tmp_path / "nowhere" / "SKILL.md"])
    async with Client(connect(server), mode="legacy") as client:
        with pytest.raises(MCPError) as exc:
            await client.read_resource("intent-loop://skill/intent")
        assert exc.value.error.data["code"] == "SKILL_NOT_FOUND"
        assert "SKILL_NOT_FOUND" in exc.value.error.message


async def test_unknown_resource_uri(server: McpServer, connect: Any) -> None:
    async with Client(connect(server), mode="legacy") as client:
        with pytest.raises(MCPError) as exc:
            await client.read_resource("intent-loop://skill/other")
        assert exc.value.error.code == -32002


class _WarmingService:
    """A service that records what the server asks it to verify ahead of the first call."""

    def __init__(self) -> None:
        self.warmed: list[tuple[str, str]] = []

    async def run(self, tool: str, args: Any, *, project_root: str, project_id: str) -> Any:
        raise AssertionError("no call is made")

    async def warm(self, project_root: str, project_id: str) -> None:
        self.warmed.append((project_root, project_id))


@pytest.mark.parametrize("where", ["project", "missing", "none"])
async def test_the_working_directorys_project_is_warmed_once_the_service_loads(
    project: Path, tmp_path: Path, where: str
) -> None:
    service = _WarmingService()
    warm_root = {"project": str(project), "missing": str(tmp_path / "missing"), "none": None}[where]
    server = McpServer(service, canonicalize=fake_canonicalize, decode=decode_arguments, warm_root=warm_root)
    server.start_loading()
    await server.ready()
    await trio.testing.wait_all_tasks_blocked()
    expected = [(str(project), project_id_for(str(project)))] if where == "project" else []
    assert service.warmed == expected  # a directory that is not one warms nothing, and nothing fails


async def test_a_failure_while_answering_a_list_is_logged_and_answered_without_details(
    server: McpServer, raw: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(method: str, revision: object) -> dict[str, Any]:
        raise RuntimeError("secret detail /home/u/.ssh")

    async with raw(server) as session:
        assert "tools" in (await session.request("tools/list"))["result"]  # control
        monkeypatch.setattr(session_module, "_result", broken)
        answer = await session.request("tools/list")
    assert answer["error"] == {"code": -32603, "message": "Internal error"}
    assert "secret detail" in caplog.text  # the operator still finds it in the server log
