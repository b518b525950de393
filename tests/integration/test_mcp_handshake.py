"""``intentloop serve`` answers the handshake before importing trio, and hands the connection over losing no byte.

The proof that the handshake needs no trio: a server whose ``import trio`` never finishes (a stand-in package that
sleeps on import, first on ``PYTHONPATH``) still answers ``initialize``, ``tools/list`` and ``ping``, and still ends at
once on EOF, SIGINT or SIGTERM, also while a tool call waits for the trio server that never comes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from intentloop.mcp import TOOL_NAMES

from _support.mcp_wire import Wire, server_env

HANG_BOUND_S = 10.0  # only a server that never answers or never exits crosses it; real figures: tools/bench
INFO = {"name": "handshake-test", "version": "0"}


def finish(wire: Wire) -> tuple[int, bytes]:
    """Wait for the server to exit by itself (killed after the hang bound); its exit code and stderr."""
    try:
        code = wire.process.wait(timeout=HANG_BOUND_S)
    except subprocess.TimeoutExpired:
        wire.process.kill()
        wire.close()
        raise AssertionError("the server did not exit") from None
    assert wire.process.stderr is not None
    stderr = wire.process.stderr.read()
    wire.close()
    return code, stderr


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


INITIALIZE = request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": INFO})
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def environment(tmp_path: Path, *, stuck_trio: bool) -> dict[str, str]:
    env = server_env(tmp_path / "data")
    if stuck_trio:
        stand_in = tmp_path / "stuck" / "trio"
        stand_in.mkdir(parents=True)
        (stand_in / "__init__.py").write_text("import time\ntime.sleep(3600)\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(stand_in.parent), env.get("PYTHONPATH")]))
    return env


@pytest.mark.parametrize("end", ["eof", "SIGTERM", "SIGINT", "SIGTERM during a tool call"])
def test_the_handshake_is_answered_while_trio_is_still_importing(tmp_path: Path, end: str) -> None:
    server = Wire(environment(tmp_path, stuck_trio=True), tmp_path)
    server.send(INITIALIZE)
    initialized = server.read()
    assert initialized is not None and initialized["result"]["protocolVersion"] == "2025-06-18", initialized
    server.send_raw(request_lines(INITIALIZED, request(2, "tools/list"), request(3, "ping")))
    listed, pong = server.read(), server.read()
    assert listed is not None and [tool["name"] for tool in listed["result"]["tools"]] == list(TOOL_NAMES)
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}
    if end == "SIGTERM during a tool call":
        server.send(request(4, "tools/call", {"name": "intent_status", "arguments": {"project_root": str(tmp_path)}}))
        assert server.quiet_for(0.5)  # the call waits for the trio server, whose import never ends
    if end == "eof":
        assert server.process.stdin is not None
        server.process.stdin.close()
    else:
        server.process.send_signal(signal.SIGINT if end == "SIGINT" else signal.SIGTERM)
    code, stderr = finish(server)
    assert code == 0, stderr
    assert b"Traceback" not in stderr


def test_a_stuck_import_is_what_holds_a_tool_call(tmp_path: Path) -> None:
    """Control for the test above: without the stand-in, the same tool call is answered."""
    (tmp_path / "project").mkdir()
    server = Wire(environment(tmp_path, stuck_trio=False), tmp_path)
    server.send_raw(request_lines(INITIALIZE, INITIALIZED))
    assert server.read() is not None
    arguments = {"project_root": str(tmp_path / "project")}
    server.send(request(4, "tools/call", {"name": "intent_status", "arguments": arguments}))
    answer = server.read()
    assert answer is not None and answer["id"] == 4 and answer["result"]["isError"] is False, answer
    server.process.send_signal(signal.SIGTERM)
    assert finish(server)[0] == 0


def test_pipelined_requests_cross_the_hand_over_intact(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    server = Wire(environment(tmp_path, stuck_trio=False), tmp_path)
    call = json.dumps(request(4, "tools/call", {"name": "intent_status", "arguments": {"project_root": str(project)}}))
    head = request_lines(INITIALIZE, INITIALIZED, request(2, "tools/list"))
    # One write holds the handshake, the tool list and the first half of a tool call; the rest follows later.
    server.send_raw(head + request_lines(request(3, "ping")) + call[:25].encode())
    time.sleep(0.2)
    server.send_raw(
        call[25:].encode() + b"\n" + request_lines(request(5, "resources/read", {"uri": "intent-loop://skill/intent"}))
    )
    answers = {}
    for _ in range(5):
        answer = server.read()
        assert answer is not None, answers
        answers[answer["id"]] = answer
    assert answers[1]["result"]["protocolVersion"] == "2025-06-18"
    assert len(answers[2]["result"]["tools"]) == len(TOOL_NAMES)
    assert answers[3]["result"] == {}
    assert json.loads(answers[4]["result"]["content"][0]["text"])["ok"] is True
    assert answers[5]["result"]["contents"][0]["uri"] == "intent-loop://skill/intent"
    assert server.process.stdin is not None
    server.process.stdin.close()
    assert finish(server)[0] == 0


def request_lines(*messages: Any) -> bytes:
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)
