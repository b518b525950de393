"""The real stdio server as a subprocess (``python -m intentloop.mcp``), driven by the official MCP client and by raw
JSON-RPC lines: capabilities in both eras, the tool list, the resource, every project-root branch, a clean stdout,
and a prompt exit on stdin EOF, SIGINT and SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import trio
from mcp import Client

from intentloop.mcp import TOOL_NAMES
from intentloop.model import project_id_for

from _support.mcp_client import META_KEY, SERVE_MODULE, envelope_of, error_code, roots_callback, server_params
from _support.mcp_wire import Wire, server_env

SERVE = SERVE_MODULE
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
# The real service behind a wrapper that writes to stdout in every way a careless library could.
NOISY_SERVER = """
import os, subprocess, sys
from intentloop.mcp.server import build_server
from intentloop.mcp.stdio import serve_stdio
from intentloop.service import IntentService

class Noisy:
    def __init__(self):
        self.inner = IntentService()

    async def run(self, tool, args, **kwargs):
        print("stray print from a handler")
        sys.stdout.flush()
        os.write(1, b"stray write to fd 1\\n")
        subprocess.run(["echo", "stray output of a child"], check=True)
        return await self.inner.run(tool, args, **kwargs)

raise SystemExit(serve_stdio(build_server(Noisy())))
"""

# A bound only a hang crosses (a server that never exits); how fast it really exits (≤ 0.2 s) is a benchmark figure
# (tools/bench/run.py: exit_ms), not a timed assertion that a loaded machine could fail.
HANG_BOUND_S = 10.0


async def _status(client: Client, arguments: dict[str, Any], meta: Any = None) -> dict[str, Any]:
    return envelope_of(await client.call_tool("intent_status", arguments, meta=meta))


# ---------------------------------------------------------------------------------------- through the SDK client
async def test_handshake_era_capabilities_tools_and_resource(data_root: Path) -> None:
    async with Client(server_params(data_root), mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_capabilities.experimental == {META_KEY: {}}
        assert client.server_info is not None and client.server_info.name == "intent-loop"
        tools = (await client.list_tools()).tools
        assert [tool.name for tool in tools] == list(TOOL_NAMES)
        for tool in tools:
            _assert_closed(tool.input_schema, tool.name)
            assert tool.output_schema is not None and tool.output_schema["additionalProperties"] is False
            assert set(tool.output_schema["required"]) == {"ok", "schema_version", "operation", "project_id", "task_id"}
            hints = tool.annotations
            assert hints is not None and hints.open_world_hint is False
            assert isinstance(hints.read_only_hint, bool) and isinstance(hints.destructive_hint, bool)
            assert isinstance(hints.idempotent_hint, bool)
        (content,) = (await client.read_resource("intent-loop://skill/intent")).contents
        assert isinstance(content, types.TextResourceContents) and content.mime_type == "text/markdown"
        assert "/intent forget" in content.text


def _assert_closed(schema: Any, where: str) -> None:
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            assert schema.get("additionalProperties") is False, where
        for key, value in schema.items():
            _assert_closed(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            _assert_closed(value, f"{where}[{index}]")


async def test_discover_era_capabilities_and_a_call(data_root: Path, project: Path) -> None:
    async with Client(server_params(data_root)) as client:  # mode "auto": server/discover, then the 2026-07-28 era
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.experimental == {META_KEY: {}}
        envelope = await _status(client, {}, meta={META_KEY: {"sandboxCwd": project.as_uri()}})
        assert envelope["ok"] is True
        assert envelope["project_id"] == project_id_for(str(project.resolve()))


async def test_root_from_sandbox_metadata(data_root: Path, project: Path, other_project: Path, tmp_path: Path) -> None:
    expected = project_id_for(str(project.resolve()))
    async with Client(server_params(data_root), mode="legacy") as client:
        for cwd in (project.as_uri(), str(project)):
            meta = {META_KEY: {"sandboxCwd": cwd, "permissionProfile": {}, "useLegacyLandlock": False, "new": 1}}
            envelope = await _status(client, {}, meta=meta)
            assert envelope["ok"] is True and envelope["project_id"] == expected, cwd
        uri_meta = {META_KEY: {"sandboxCwd": project.as_uri()}}
        assert (await _status(client, {"project_root": str(project)}, meta=uri_meta))["ok"] is True
        # rejections, each beside the positive controls above
        for bad in ({"sandboxCwd": "relative"}, {"sandboxCwd": "https://x/y"}, {"permissionProfile": {}}, "file:///"):
            assert error_code(await _status(client, {}, meta={META_KEY: bad})) == "PROJECT_ROOT_METADATA_INVALID"
        mismatch = await _status(client, {"project_root": str(other_project)}, meta=uri_meta)
        assert error_code(mismatch) == "PROJECT_ROOT_MISMATCH"
        invalid = await _status(client, {"project_root": str(tmp_path / "missing")}, meta=uri_meta)
        assert error_code(invalid) == "PROJECT_ROOT_INVALID"


async def test_root_from_argument_and_none(data_root: Path, project: Path, tmp_path: Path) -> None:
    async with Client(server_params(data_root), mode="legacy") as client:
        envelope = await _status(client, {"project_root": str(project)})
        assert envelope["ok"] is True and envelope["project_id"] == project_id_for(str(project.resolve()))
        assert error_code(await _status(client, {"project_root": str(tmp_path / "missing")})) == "PROJECT_ROOT_INVALID"
        assert error_code(await _status(client, {"project_root": 5})) == "INVALID_ARGUMENTS"
        with trio.fail_after(1):  # no roots capability: answered at once, not after the roots timeout
            none = await _status(client, {})
        assert error_code(none) == "PROJECT_ROOT_REQUIRED" and none["project_id"] is None


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_root_from_exactly_one_client_root(
    data_root: Path, project: Path, other_project: Path, mode: str
) -> None:
    async with Client(
        server_params(data_root), mode=mode, list_roots_callback=roots_callback(project.as_uri())
    ) as client:
        envelope = await _status(client, {})
        assert envelope["ok"] is True and envelope["project_id"] == project_id_for(str(project.resolve()))
    two = roots_callback(project.as_uri(), other_project.as_uri())
    async with Client(server_params(data_root), mode=mode, list_roots_callback=two) as client:
        assert error_code(await _status(client, {})) == "PROJECT_ROOT_REQUIRED"


# ------------------------------------------------------------------------------------------------- raw wire
class RawServer(Wire):
    """The shared wire driver, plus every stdout line kept and an answer picked out from among other lines."""

    def __init__(self, command: list[str], data_root: Path) -> None:
        super().__init__(server_env(data_root), cwd=data_root.parent, command=command)
        self.stdout_lines: list[bytes] = []

    def send(self, message: dict[str, Any] | bytes) -> None:
        if isinstance(message, bytes):
            self.send_raw(message)
        else:
            super().send(message)

    def answer(self, request_id: int, timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (line := self.read_line(max(0.0, deadline - time.monotonic()))) is not None:
            self.stdout_lines.append(line + b"\n")
            message = json.loads(line)
            if message.get("id") == request_id:
                return dict(message)
        raise AssertionError(f"no answer to request {request_id}")

    def initialize(self) -> None:
        self.send(INIT)
        assert "result" in self.answer(1)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def finish(self, timeout: float = 5) -> tuple[int, bytes]:
        """Wait for the exit; the exit code and stderr (every stdout byte left is kept in ``stdout_lines``)."""
        assert self.process.stdout is not None and self.process.stderr is not None
        code = self.process.wait(timeout)
        self.stdout_lines.extend(self.take_rest().splitlines(keepends=True))
        return code, self.process.stderr.read()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def raw_server(data_root: Path) -> Any:
    started: list[RawServer] = []

    def start(command: list[str] = SERVE) -> RawServer:
        server = RawServer(command, data_root)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def _call(name: str, arguments: Any, request_id: int) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_stdout_carries_only_json_rpc_even_when_a_handler_prints(raw_server: Any, project: Path) -> None:
    server = raw_server([sys.executable, "-c", NOISY_SERVER])
    server.initialize()
    server.send(_call("intent_status", {"project_root": str(project)}, 2))
    envelope = server.answer(2)["result"]["structuredContent"]
    assert envelope["ok"] is True
    server.process.stdin.close()
    code, stderr = server.finish()
    assert code == 0
    for line in server.stdout_lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0" and ("id" in message or "method" in message), line
    # positive control: the handler really printed, and it all went to stderr
    assert b"stray print from a handler" in stderr
    assert b"stray write to fd 1" in stderr and b"stray output of a child" in stderr


@pytest.mark.parametrize("arguments", [[1], "x", 3, None])
def test_arguments_that_are_not_an_object_over_the_wire(raw_server: Any, project: Path, arguments: Any) -> None:
    server = raw_server()
    server.initialize()
    server.send(_call("intent_status", arguments, 2))
    answer = server.answer(2)
    if arguments is None:  # null counts as {}
        assert error_code(answer["result"]["structuredContent"]) == "PROJECT_ROOT_REQUIRED"
    else:  # a protocol error, as the specification and the original answer it
        assert "result" not in answer and answer["error"]["code"] == -32602
    server.send(_call("intent_status", {"project_root": str(project)}, 3))
    assert server.answer(3)["result"]["structuredContent"]["ok"] is True


def test_a_malformed_line_does_not_end_the_session(raw_server: Any, project: Path) -> None:
    server = raw_server()
    server.initialize()
    server.send(b"this is not json\n")
    server.send(_call("intent_status", {"project_root": str(project)}, 2))
    assert server.answer(2)["result"]["structuredContent"]["ok"] is True


def test_intentloop_serve_is_the_same_server(raw_server: Any, project: Path) -> None:
    console_script = Path(sys.executable).with_name("intentloop")
    assert console_script.exists(), "the project must be installed (pip install -e .) for its console script"
    server = raw_server([str(console_script), "serve"])
    server.send(INIT)
    init = server.answer(1)["result"]
    assert init["serverInfo"]["name"] == "intent-loop"
    assert init["capabilities"]["experimental"] == {META_KEY: {}}
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    server.send(_call("intent_status", {"project_root": str(project)}, 2))
    assert server.answer(2)["result"]["structuredContent"]["ok"] is True
    started = time.monotonic()
    server.process.stdin.close()
    code, stderr = server.finish()
    assert time.monotonic() - started < HANG_BOUND_S
    assert code == 0, stderr
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in server.stdout_lines)


@pytest.mark.parametrize("how", ["eof", "SIGINT", "SIGTERM", "SIGINT+SIGTERM"])
def test_server_exits_promptly(raw_server: Any, how: str) -> None:
    server = raw_server()
    server.initialize()
    started = time.monotonic()
    if how == "eof":
        server.process.stdin.close()
    else:
        for index, name in enumerate(how.split("+")):
            if index:
                time.sleep(0.1)  # Claude Code sends SIGINT, then SIGTERM about 100 ms later
            if server.process.poll() is None:
                server.process.send_signal(getattr(signal, name))
    code, stderr = server.finish(timeout=HANG_BOUND_S + 5)
    elapsed = time.monotonic() - started
    assert elapsed < HANG_BOUND_S, f"{how}: exited after {elapsed:.2f} s"
    assert code == 0, stderr
    assert b"Traceback" not in stderr
