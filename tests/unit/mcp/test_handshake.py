"""The front loop that answers before trio is imported: what it answers itself, and a hand-over that loses nothing.

Each script is served twice: once by the trio server alone, once by the front loop (over real descriptors) followed
by the trio server from the hand-over on. Both drive one :class:`~intentloop.mcp.session.Session`, so the answers
are the same by construction; what these tests check is the hand-over (no message lost, none answered twice, the
handed-over decision carried out under the state it was made in) and that the front loop answers what it is meant
to, in arrival order (else the comparison would pass with a front loop that handed everything over).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from intentloop.mcp.handshake import Opening, WireFds, answer_front, carry_out
from intentloop.mcp.protocol import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from intentloop.mcp.server import McpServer
from intentloop.mcp.session import Call
from intentloop.mcp.stdio import serve_streams

INFO = {"name": "front-test", "version": "0"}
META = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {}}


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(request_id: int, version: str = "2025-06-18", capabilities: dict[str, Any] | None = None) -> Any:
    return request(
        request_id, "initialize", {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": INFO}
    )


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call_status(request_id: int, project: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "intent_status", "arguments": {"project_root": project}}
    if meta is not None:
        params["_meta"] = meta
    return request(request_id, "tools/call", params)


def lines(*messages: Any) -> bytes:
    return b"".join(
        (message if isinstance(message, bytes) else json.dumps(message).encode()) + b"\n" for message in messages
    )


async def trio_answers(server: McpServer, data: bytes, opening: Opening | None = None) -> list[bytes]:
    """What the trio server writes for ``data`` (after ``opening``, when given), until it has read everything."""
    to_send, to_receive = trio.testing.memory_stream_one_way_pair()
    from_send, from_receive = trio.testing.memory_stream_one_way_pair()
    received = bytearray()
    # Loaded first: the script ends with EOF, after which a call has only the server's short grace to finish, which
    # the service's first import in this process can outlast on a loaded machine.
    await server.ready()

    async def serve() -> None:
        async with from_send:
            await serve_streams(server, to_receive, from_send, watch_signals=False, opening=opening)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        await to_send.send_all(data)
        await to_send.aclose()
        while chunk := await from_receive.receive_some(1 << 20):
            received += chunk
    return bytes(received).splitlines()


def front_answers(tmp_path: Path, data: bytes) -> tuple[list[bytes], Opening, bool]:
    """What the front loop writes for ``data`` read from a real descriptor, its opening, and whether it handed over."""
    script, out = tmp_path / "script", tmp_path / "answers"
    script.write_bytes(data)
    read_fd = os.open(script, os.O_RDONLY)
    write_fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        opening = Opening()
        handed_over = answer_front(WireFds(read_fd=read_fd, write_fd=write_fd), opening)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    return out.read_bytes().splitlines(), opening, handed_over


def by_id(answers: list[bytes]) -> list[tuple[str, bytes]]:
    """Answers keyed by their id (the trio server answers concurrent requests in completion order); a batch by its
    members' ids."""
    keyed = []
    for line in answers:
        answer = json.loads(line)
        if isinstance(answer, list):  # a batch's members, too, come in completion order
            members = sorted(answer, key=lambda item: json.dumps(item.get("id")))
            keyed.append((json.dumps([item.get("id") for item in members]), json.dumps(members).encode()))
        else:
            keyed.append((json.dumps(answer.get("id")), line))
    return sorted(keyed)


SCRIPTS: dict[str, tuple[Callable[[str], bytes], int]] = {
    # name: (script over a project path, how many answers the front loop itself must give)
    **{
        f"handshake {version}": (
            lambda project, version=version: lines(  # type: ignore[misc]
                initialize(1, version),
                INITIALIZED,
                request(2, "tools/list"),
                request(3, "ping"),
                call_status(4, project),
                request(5, "tools/list"),
                request(6, "resources/list"),
            ),
            3,
        )
        for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01")
    },
    "modern": (
        lambda project: lines(
            request(1, "server/discover", {"_meta": META}),
            request(2, "tools/list", {"_meta": META}),
            call_status(3, project, META),
            request(4, "server/discover", {"_meta": META}),
        ),
        2,
    ),
    "the resource lists in both eras": (
        lambda project: lines(
            initialize(1, "2024-11-05"),
            request(2, "resources/list"),
            request(3, "resources/templates/list"),
            request(4, "resources/read", {"uri": "intent-loop://skill/intent"}),
        ),
        3,
    ),
    "modern resource lists": (
        lambda project: lines(
            request(1, "resources/list", {"_meta": META}),
            request(2, "resources/templates/list", {"_meta": META}),
            request(3, "ping", {"_meta": META}),
        ),
        3,
    ),
    "ping first, then tools/list before initialize": (
        lambda project: lines(request(1, "ping"), request(2, "tools/list"), initialize(3)),
        3,
    ),
    "malformed first line": (lambda project: lines(b"{not json", initialize(1), request(2, "tools/list")), 3),
    "initialize twice": (lambda project: lines(initialize(1), initialize(2), request(3, "tools/list")), 3),
    "initialize without a version": (lambda project: lines(request(1, "initialize", {}), initialize(2)), 2),
    "initialize as a notification": (
        lambda project: lines({"jsonrpc": "2.0", "method": "initialize", "params": {}}, initialize(1)),
        1,
    ),
    "batch in 2025-03-26": (
        lambda project: lines(initialize(1, "2025-03-26"), [request(2, "ping"), request(3, "tools/list")]),
        1,
    ),
    "the modern envelope on a handshake connection": (
        lambda project: lines(initialize(1), request(2, "tools/list", {"_meta": META}), request(3, "ping")),
        3,
    ),
    "a bad modern envelope": (
        lambda project: lines(request(1, "tools/list", {"_meta": {PROTOCOL_VERSION_META_KEY: "2026-07-28"}})),
        1,
    ),
    "initialize on a modern connection": (
        lambda project: lines(request(1, "server/discover", {"_meta": META}), initialize(2)),
        2,
    ),
    "params not an object, an invalid id, a response": (
        lambda project: lines(
            initialize(1),
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": [1]},
            {"jsonrpc": "2.0", "id": True, "method": "ping"},
            {"jsonrpc": "2.0", "id": 9, "result": {}},
        ),
        3,
    ),
    "an unknown method": (lambda project: lines(initialize(1), request(2, "no/such"), request(3, "ping")), 3),
    "a last line without its newline": (
        lambda project: lines(initialize(1)) + json.dumps(request(2, "tools/list")).encode(),
        2,
    ),
    "notifications only, then EOF": (
        lambda project: lines(INITIALIZED, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}),
        0,
    ),
}


@pytest.mark.parametrize("name", list(SCRIPTS))
async def test_the_front_loop_and_the_trio_server_give_the_same_answers(
    name: str, make_server: Callable[..., McpServer], project: Path, tmp_path: Path
) -> None:
    build, front_count = SCRIPTS[name]
    data = build(str(project))
    alone = await trio_answers(make_server(), data)

    front, opening, handed_over = await trio.to_thread.run_sync(front_answers, tmp_path, data)
    assert len(front) == front_count, front
    rest = await trio_answers(make_server(), b"", opening) if handed_over else []
    assert by_id(front + rest) == by_id(alone)
    front_ids = [json.loads(line)["id"] for line in front]
    numbered = [request_id for request_id in front_ids if request_id is not None]  # an unreadable id is echoed as null
    assert numbered == sorted(numbered)  # in arrival order (every script numbers its requests in order)


def test_a_handed_over_call_is_carried_out_once_under_the_state_it_was_decided_in(tmp_path: Path) -> None:
    data = lines(initialize(1, "2024-11-05"), call_status(2, "/tmp"), request(2, "ping"), request(3, "ping"))
    front, opening, handed_over = front_answers(tmp_path, data)
    assert handed_over and len(front) == 1
    decision = opening.decision
    assert isinstance(decision, Call) and (decision.request_id, decision.method) == (2, "tools/call")
    assert decision.revision.version == "2024-11-05"  # negotiated by the message before the call
    assert opening.pending == lines(request(2, "ping"), request(3, "ping"))  # what follows is read by the trio server
    # The call is still in flight in the session the trio server goes on with: its id cannot be reused yet.
    reused = opening.session.receive(request(2, "ping"))
    assert carry_out(reused, opening) == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32600, "message": "Invalid Request: this id is already in use by a request"},
    }
    assert carry_out(opening.session.receive(request(3, "ping")), opening) == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_the_front_loop_needs_neither_trio_nor_the_service() -> None:
    code = (
        "import sys, json\n"
        "from intentloop.mcp.handshake import Opening, carry_out\n"
        "opening = Opening()\n"
        f"carry_out(opening.session.receive({initialize(1)!r}), opening)\n"
        "answer = carry_out(opening.session.receive({'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list'}), opening)\n"
        "assert len(answer['result']['tools']) == 15, answer\n"
        "print(json.dumps(sorted(n for n in ('trio', 'intentloop.service.intent_service', 'intentloop.store') "
        "if n in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == []
    control = subprocess.run(
        [sys.executable, "-c", "import sys, intentloop.mcp.server; print('trio' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert control.stdout.strip() == "True"  # the trio server does load trio: the check above can see it


def _front_with_ready(tmp_path: Path, data: bytes, *, ready: bool, eof: bool) -> tuple[bool, Opening, list[bytes]]:
    """The front loop over a pipe to which the client has sent ``data``, then closed (``eof``) or kept open and quiet,
    with the trio server ready or not."""
    in_read, in_write = os.pipe()
    ready_read, ready_write = os.pipe()
    out = tmp_path / "answers"
    write_fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(in_write, data)
    if ready:
        os.write(ready_write, b"\0")
    if eof:
        os.close(in_write)
    opening = Opening()
    try:
        outcome = answer_front(WireFds(read_fd=in_read, write_fd=write_fd), opening, ready_fd=ready_read)
    finally:
        for fd in (in_read, ready_read, ready_write, write_fd, *([] if eof else [in_write])):
            os.close(fd)
    return outcome, opening, out.read_bytes().splitlines()


def test_the_front_loop_hands_over_when_the_trio_server_is_ready_and_the_client_quiet(tmp_path: Path) -> None:
    half = json.dumps(request(3, "ping")).encode()[:10]
    listed = lines(initialize(1), request(2, "tools/list"))
    handed_over, opening, answers = _front_with_ready(tmp_path, listed + half, ready=True, eof=False)
    assert handed_over and opening.pending == half  # what had arrived was answered first; the half line goes on
    assert len(answers) == 2 and opening.session.revision is not None and opening.listed
    # Controls: not ready, the loop keeps reading (to EOF here); ready before the tools were listed, too.
    handed_over, opening, answers = _front_with_ready(tmp_path, listed, ready=False, eof=True)
    assert not handed_over and len(answers) == 2
    unlisted = lines(initialize(1), request(2, "ping"))
    handed_over, opening, answers = _front_with_ready(tmp_path, unlisted, ready=True, eof=True)
    assert not handed_over and len(answers) == 2
