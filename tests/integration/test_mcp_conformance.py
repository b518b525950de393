"""The MCP protocol as the specification words it, for every revision a host may speak, against a real server process.

Three kinds of evidence: the official ``mcp`` client of each era drives the server over stdio; raw JSON-RPC lines check
each rule the client would never break (parse errors, invalid requests, unknown methods, requests before
initialization, batches, the 2026-07-28 envelope, cancellation, fields a revision does not define); and every tool's
answer is compared byte for byte (after normalising ids, times and paths) with the answers of the earlier server built
on the SDK, kept as a fixture. Exit bounds here only catch hangs; the real exit and start-up figures are benchmark
figures (``tools/bench/run.py``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from intentloop.mcp import TOOL_NAMES
from intentloop.store import ProjectStore

from _support import mcp_wire as W
from _support.lock_holder import start_holder

HANG_BOUND_S = 10.0  # only a server that never exits crosses it; the real figure is the benchmark's exit_ms
FIELDS = {
    # What each revision's schema defines for the objects this server sends (from the revisions' changelogs).
    "2024-11-05": {"tool": {"name", "description", "inputSchema"}, "call": {"content", "isError"}, "titles": False},
    "2025-03-26": {
        "tool": {"name", "description", "inputSchema", "annotations"},
        "call": {"content", "isError"},
        "titles": False,
    },
    "2025-06-18": {
        "tool": {"name", "description", "inputSchema", "annotations", "title", "outputSchema"},
        "call": {"content", "isError", "structuredContent"},
        "titles": True,
    },
    "2025-11-25": {
        "tool": {"name", "description", "inputSchema", "annotations", "title", "outputSchema"},
        "call": {"content", "isError", "structuredContent"},
        "titles": True,
    },
}


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    return tmp_path


@pytest.fixture
def wire(tmp: Path) -> Any:
    with W.Wire(W.server_env(tmp / "data"), cwd=tmp) as connection:
        yield connection


def _error_code(answer: dict[str, Any]) -> int:
    assert "error" in answer and "result" not in answer, answer
    return int(answer["error"]["code"])


# ---------------------------------------------------------------------------------------------- the SDK's answers


@pytest.mark.parametrize("era", ["2025-06-18", W.MODERN])
def test_every_answer_is_byte_for_byte_the_sdk_based_servers(tmp: Path, era: str) -> None:
    # The fixture holds what the SDK-based server answers in front of the current service (re-recorded when the
    # service changes on purpose; see tests/_support/mcp_wire.py), so any difference is the protocol layer's.
    expected = json.loads(W.FIXTURE.read_text(encoding="utf-8"))[era]
    got = W.run_scenario(tmp, modern=era == W.MODERN)
    assert len(got) == len(expected)
    for index, (line, old) in enumerate(zip(got, expected, strict=True)):
        assert line == old, f"answer {index} differs from the SDK-based server's"


def test_the_fixture_comparison_notices_a_changed_byte(tmp: Path) -> None:
    # Control for the test above: normalisation keeps real differences (here one character of an error message).
    expected = json.loads(W.FIXTURE.read_text(encoding="utf-8"))["2025-06-18"]
    got = W.run_scenario(tmp, modern=False)
    assert got[-1] == expected[-1]
    assert got[-1].replace("no project root", "no project-root") != expected[-1]


# ------------------------------------------------------------------------------------ the official client, each era


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28", "auto"])
async def test_the_official_client_of_each_era(tmp: Path, mode: str) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "intentloop.mcp"], env=W.server_env(tmp / "data"), cwd=str(tmp)
    )
    async with Client(params, mode=mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == list(TOOL_NAMES)
        # the client validates structuredContent against the declared outputSchema once it has listed the tools
        result = await client.call_tool("intent_status", {"project_root": str(tmp / "project")})
        assert result.structured_content is not None and result.structured_content["ok"] is True
        assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
        resource = await client.read_resource("intent-loop://skill/intent")
        assert "intent_add_explicit" in resource.contents[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_client_gets_the_project_from_its_roots(tmp: Path, mode: str) -> None:
    project = tmp / "project"

    async def roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=project.as_uri())])  # type: ignore[arg-type]

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "intentloop.mcp"], env=W.server_env(tmp / "data"), cwd=str(tmp)
    )
    async with Client(params, mode=mode, list_roots_callback=roots) as client:
        result = await client.call_tool("intent_status", {})
        assert result.structured_content is not None and result.structured_content["ok"] is True
    async with Client(params, mode=mode) as client:  # control: without roots the project is required
        result = await client.call_tool("intent_status", {})
        assert result.structured_content is not None
        assert result.structured_content["error"]["code"] == "PROJECT_ROOT_REQUIRED"


# ------------------------------------------------------------------------------------------------ JSON-RPC framing


def test_a_malformed_line_is_a_parse_error(wire: Any) -> None:
    wire.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"\n')
    answer = wire.read()
    assert answer["id"] is None and _error_code(answer) == -32700
    assert wire.request("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}  # control: serving goes on


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 7},
        {"jsonrpc": "2.0", "id": 7, "params": {}},
        {"jsonrpc": "1.0", "id": 7, "method": "ping"},
        {"id": 7, "method": "ping"},
        {"jsonrpc": "2.0", "id": 7, "method": 12},
    ],
)
def test_a_request_without_a_valid_method_is_an_invalid_request(wire: Any, message: dict[str, Any]) -> None:
    wire.send(message)
    answer = wire.read()
    assert answer["id"] == 7 and _error_code(answer) == -32600
    assert wire.request("ping")["result"] == {}


@pytest.mark.parametrize("message", ["[]", '"ping"', "42", '{"jsonrpc": "2.0", "id": true, "method": "ping"}'])
def test_messages_that_are_not_requests_are_invalid(wire: Any, message: str) -> None:
    wire.send_raw(message.encode() + b"\n")
    answer = wire.read()
    assert answer["id"] is None and _error_code(answer) == -32600


@pytest.mark.parametrize("modern", [False, True])
def test_an_unknown_method_is_method_not_found(wire: Any, modern: bool) -> None:
    if not modern:
        W.initialize(wire)
    era = W.Era(wire, modern)
    assert _error_code(json.loads(era.request_raw("tools/nope"))) == -32601
    assert "tools" in json.loads(era.request_raw("tools/list"))["result"]  # control


@pytest.mark.parametrize("modern", [False, True])
def test_an_unknown_tool_and_non_object_arguments_are_invalid_params(wire: Any, tmp: Path, modern: bool) -> None:
    # The specification lists an unknown tool among the protocol errors; the original answers it, and arguments that
    # are not an object, with -32602. Invalid fields inside an object stay the INVALID_ARGUMENTS envelope.
    if not modern:
        W.initialize(wire)
    era = W.Era(wire, modern)
    root = str(tmp / "project")
    unknown = era.call("intent_nope", {"project_root": root})
    assert _error_code(unknown) == -32602 and unknown["error"]["message"] == "Unknown tool: intent_nope"
    for arguments in ([1], "x", 3, True):
        assert _error_code(era.call("intent_status", arguments)) == -32602, arguments
    field = era.call("intent_status", {"project_root": root, "extra": 1})["result"]
    assert field["isError"] is True and field["structuredContent"]["error"]["code"] == "INVALID_ARGUMENTS"
    assert era.call("intent_status", {"project_root": root})["result"]["structuredContent"]["ok"] is True  # control


@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize("method", ["tools/list", "resources/list", "resources/templates/list"])
def test_a_cursor_is_invalid_params(wire: Any, modern: bool, method: str) -> None:
    # Every list is one page (no nextCursor is ever sent), so no cursor is valid.
    if not modern:
        W.initialize(wire)
    era = W.Era(wire, modern)
    assert _error_code(json.loads(era.request_raw(method, {"cursor": "page-2"}))) == -32602
    assert "result" in json.loads(era.request_raw(method, {}))  # control
    assert "result" in json.loads(era.request_raw(method, {"cursor": None}))  # control: null is no cursor


def test_notifications_get_no_answer(wire: Any) -> None:
    W.initialize(wire)
    wire.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    wire.send({"jsonrpc": "2.0", "method": "notifications/unknown", "params": {"x": 1}})
    assert wire.request("ping")["id"] == 2  # the next line is the ping's answer: the notifications got none


# ------------------------------------------------------------------------------------- the handshake era (≤ 2025-11-25)


def test_only_ping_is_answered_before_initialize(wire: Any) -> None:
    assert _error_code(wire.request("tools/list")) == -32600
    assert _error_code(wire.request("tools/call", {"name": "intent_status", "arguments": {}})) == -32600
    assert wire.request("ping")["result"] == {}
    W.initialize(wire)
    assert len(wire.request("tools/list")["result"]["tools"]) == 15  # control: the same request, initialized


@pytest.mark.parametrize(
    ("asked", "answered"),
    [(version, version) for version in W.HANDSHAKE_VERSIONS]
    + [("1999-01-01", "2025-11-25"), ("2026-07-28", "2025-11-25"), ("draft", "2025-11-25")],
)
def test_version_negotiation(wire: Any, asked: str, answered: str) -> None:
    result = W.initialize(wire, asked)["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"]["experimental"] == {"codex/sandbox-state-meta": {}}


def test_initialize_without_a_version_is_invalid_params_and_only_once(wire: Any) -> None:
    assert _error_code(wire.request("initialize", {"capabilities": {}})) == -32602
    assert "result" in W.initialize(wire)  # control
    assert _error_code(wire.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})) == -32600


@pytest.mark.parametrize("version", W.HANDSHAKE_VERSIONS)
def test_no_revision_is_sent_a_field_it_does_not_define(wire: Any, tmp: Path, version: str) -> None:
    fields = FIELDS[version]
    init = W.initialize(wire, version)["result"]
    assert ("title" in init["serverInfo"]) is fields["titles"]
    for tool in wire.request("tools/list")["result"]["tools"]:
        assert set(tool) == fields["tool"], tool["name"]
    (resource,) = wire.request("resources/list")["result"]["resources"]
    assert ("title" in resource) is fields["titles"]
    answer = wire.request("tools/call", {"name": "intent_status", "arguments": {"project_root": str(tmp / "project")}})
    assert set(answer["result"]) == fields["call"]
    assert json.loads(answer["result"]["content"][0]["text"])["ok"] is True
    assert "resultType" not in answer["result"] and "_meta" not in answer["result"]


def test_structured_content_is_the_text_block_and_declared(wire: Any, tmp: Path) -> None:
    W.initialize(wire, "2025-06-18")
    tools = wire.request("tools/list")["result"]["tools"]
    assert all(
        tool["outputSchema"]["required"] == ["ok", "schema_version", "operation", "project_id", "task_id"]
        for tool in tools
    )
    answer = wire.request("tools/call", {"name": "intent_status", "arguments": {}})["result"]
    assert answer["isError"] is True and json.loads(answer["content"][0]["text"]) == answer["structuredContent"]


def test_batches_are_served_only_in_2025_03_26(tmp: Path) -> None:
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in (10, 11)]
    with W.Wire(W.server_env(tmp / "data")) as wire:
        W.initialize(wire, "2025-03-26")
        wire.send([*pings, {"jsonrpc": "2.0", "method": "notifications/initialized"}])
        batch = wire.read()
        assert sorted(answer["id"] for answer in batch) == [10, 11]
    with W.Wire(W.server_env(tmp / "data")) as wire:
        W.initialize(wire, "2025-06-18")  # batching was removed in 2025-06-18
        wire.send(pings)
        assert _error_code(wire.read()) == -32600


def test_the_2026_envelope_is_refused_on_a_handshake_connection(wire: Any) -> None:
    W.initialize(wire)
    assert _error_code(wire.request("tools/list", {"_meta": W.modern_meta()})) == -32600
    assert "tools" in wire.request("tools/list", {"_meta": {"progressToken": 1}})["result"]  # a plain _meta is fine


# --------------------------------------------------------------------------------------------------- 2026-07-28


def test_server_discover_and_per_request_results(wire: Any) -> None:
    discover = wire.request("server/discover", {"_meta": W.modern_meta()})["result"]
    assert discover["supportedVersions"] == ["2026-07-28"]
    assert discover["capabilities"]["experimental"] == {"codex/sandbox-state-meta": {}}
    assert discover["resultType"] == "complete" and discover["cacheScope"] == "private" and discover["ttlMs"] == 0
    assert discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "intent-loop"
    listed = wire.request("tools/list", {"_meta": W.modern_meta()})["result"]
    assert len(listed["tools"]) == 15 and listed["resultType"] == "complete"


@pytest.mark.parametrize(
    ("meta", "code"),
    [
        ({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, -32602),  # no client capabilities
        ({"io.modelcontextprotocol/protocolVersion": 2026, "io.modelcontextprotocol/clientCapabilities": {}}, -32602),
        (
            {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}},
            -32022,
        ),
    ],
)
def test_a_bad_envelope_is_refused(wire: Any, meta: dict[str, Any], code: int) -> None:
    assert "result" in wire.request("tools/list", {"_meta": W.modern_meta()})  # opens the 2026-07-28 era
    answer = wire.request("tools/list", {"_meta": meta})
    assert _error_code(answer) == code
    if code == -32022:
        assert answer["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2099-01-01"}
    assert _error_code(wire.request("tools/list")) == -32602  # no envelope at all


def test_the_handshake_and_ping_do_not_exist_in_2026(wire: Any) -> None:
    assert "result" in wire.request("tools/list", {"_meta": W.modern_meta()})
    initialize = wire.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert _error_code(initialize) == -32022 and initialize["error"]["data"]["supported"] == ["2026-07-28"]
    assert _error_code(wire.request("ping", {"_meta": W.modern_meta()})) == -32601


@pytest.mark.parametrize(("modern", "code"), [(False, -32002), (True, -32602)])
def test_resource_not_found_has_each_eras_code(wire: Any, modern: bool, code: int) -> None:
    if not modern:
        W.initialize(wire)
    era = W.Era(wire, modern)
    answer = json.loads(era.request_raw("resources/read", {"uri": "intent-loop://nope"}))
    assert _error_code(answer) == code and answer["error"]["data"] == {"uri": "intent-loop://nope"}
    templates = json.loads(era.request_raw("resources/templates/list"))["result"]
    assert templates["resourceTemplates"] == []


# ---------------------------------------------------------------------------------------- cancellation and shutdown


class _LockHolder:
    """Another process holding the project's write lock until released."""

    def __init__(self, data_root: Path, project: Path) -> None:
        from intentloop.model import project_id_for
        from intentloop.store import canonicalize_project_root

        self.project_id = project_id_for(canonicalize_project_root(str(project)))
        self.store = ProjectStore(data_root, self.project_id)
        self.process = start_holder(data_root, self.project_id)

    def release(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        assert self.process.stdout is not None
        self.process.stdout.close()


def _start_task(wire: Any, project: Path) -> str:
    answer = wire.request(
        "tools/call",
        {"name": "intent_start_task", "arguments": {"project_root": str(project), "request_id": "start"}},
    )
    return str(answer["result"]["structuredContent"]["task_id"])


def _add(task: str, project: Path, request_id: str) -> dict[str, Any]:
    arguments = {
        "project_root": str(project),
        "task_id": task,
        "request_id": request_id,
        "statement": "Keep the API stable",
        "source_ref": {"kind": "agent_turn", "event_id": "t1"},
        "facets": ["soft_constraint"],
        "confidence": 0.5,
    }
    return {"name": "intent_add_inference", "arguments": arguments}


def test_a_cancelled_call_sends_no_answer_and_writes_nothing(wire: Any, tmp: Path) -> None:
    project = tmp / "project"
    W.initialize(wire)
    task = _start_task(wire, project)
    holder = _LockHolder(tmp / "data", project)
    try:
        wire.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": _add(task, project, "cancelled")})
        time.sleep(0.5)  # the call is now waiting for the lock
        wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 50}})
        assert wire.request("ping")["id"] != 50  # the next answer is the ping's, not the cancelled call's
    finally:
        holder.release()
    assert wire.quiet_for(1.0), "a cancelled request must get no response"
    # control: the same call, not cancelled, is answered and written once the lock is free
    answer = wire.request("tools/call", _add(task, project, "kept"))
    assert answer["result"]["structuredContent"]["ok"] is True
    request_ids = [event.request_id for event in holder.store.read().events]
    assert "kept" in request_ids and "cancelled" not in request_ids


@pytest.mark.parametrize("how", ["eof", "SIGINT", "SIGTERM"])
def test_the_server_stops_during_a_lock_wait_and_abandons_the_write(tmp: Path, how: str) -> None:
    project = tmp / "project"
    wire = W.Wire(W.server_env(tmp / "data"), cwd=tmp)
    W.initialize(wire)
    task = _start_task(wire, project)
    holder = _LockHolder(tmp / "data", project)
    try:
        wire.send({"jsonrpc": "2.0", "id": 60, "method": "tools/call", "params": _add(task, project, "abandoned")})
        time.sleep(0.5)
        started = time.monotonic()
        if how == "eof":
            assert wire.process.stdin is not None
            wire.process.stdin.close()
        else:
            wire.process.send_signal(getattr(signal, how))
        code = wire.process.wait(timeout=HANG_BOUND_S + 5)
        assert time.monotonic() - started < HANG_BOUND_S and code == 0
    finally:
        holder.release()
        wire.close()
    request_ids = [event.request_id for event in holder.store.read().events]
    assert request_ids == ["start"]  # the abandoned write left nothing, and the chain still verifies
    assert not (holder.store.project_dir / "ledger.lock").exists()


@pytest.mark.parametrize("how", ["eof", "SIGTERM"])
def test_the_server_stops_right_after_spawn(tmp: Path, how: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "intentloop.mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=W.server_env(tmp / "data"),
    )
    started = time.monotonic()
    if how == "SIGTERM":
        process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(b"", timeout=HANG_BOUND_S + 5)  # b"": close stdin at once
    assert time.monotonic() - started < HANG_BOUND_S
    # SIGTERM before Python has installed any handler kills the process (-15); once serving, it exits 0
    assert process.returncode in (0, -signal.SIGTERM), stderr
    assert b"Traceback" not in stderr


_ENTRY = """
import os, sys
def report():
    names = ("typer", "rich", "click", "mcp", "mcp_types", "pydantic", "anyio")
    print("heavy:", sorted(name for name in names if name in sys.modules), file=sys.stderr, flush=True)
leave = os._exit  # the server leaves through os._exit while its background import still runs
os._exit = lambda code: (report(), leave(code))
sys.argv = ["intentloop", *sys.argv[1:]]
from intentloop.cli.entry import main
try:
    main()
except SystemExit:
    pass
report()
"""


def test_intentloop_serve_branches_before_typer_and_never_loads_the_sdk(tmp: Path) -> None:
    def heavy(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", _ENTRY, *args],
            input=b"",
            capture_output=True,
            env=W.server_env(tmp / "data"),
            timeout=60,
        )
        line = [text for text in done.stderr.decode().splitlines() if text.startswith("heavy:")]
        assert line, done.stderr
        return line[-1]

    assert heavy("serve") == "heavy: []"
    assert "typer" in heavy("serve", "--help")  # control: the typer app is what answers anything else
