"""The front loop that answers the handshake before trio is imported: same bytes as the trio server, clean hand-over.

Each script is served twice: once by the trio server alone, once by the front loop (over real descriptors) followed
by the trio server from the hand-over on. The two must write the same answers, and the front loop must have answered
the messages it is meant to (else the comparison would pass with a front loop that handed everything over).
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

from intentloop.mcp.handshake import HAND_OVER, Opening, WireFds, answer_early, answer_front
from intentloop.mcp.protocol import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from intentloop.mcp.server import McpServer
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
        2,
    ),
    "ping first, then tools/list before initialize": (
        lambda project: lines(request(1, "ping"), request(2, "tools/list"), initialize(3)),
        1,
    ),
    "malformed first line": (lambda project: lines(b"{not json", initialize(1), request(2, "tools/list")), 0),
    "initialize twice": (lambda project: lines(initialize(1), initialize(2), request(3, "tools/list")), 1),
    "initialize without a version": (lambda project: lines(request(1, "initialize", {}), initialize(2)), 0),
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
        1,
    ),
    "a bad modern envelope": (
        lambda project: lines(request(1, "tools/list", {"_meta": {PROTOCOL_VERSION_META_KEY: "2026-07-28"}})),
        0,
    ),
    "initialize on a modern connection": (
        lambda project: lines(request(1, "server/discover", {"_meta": META}), initialize(2)),
        1,
    ),
    "params not an object, an invalid id, a response": (
        lambda project: lines(
            initialize(1),
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": [1]},
            {"jsonrpc": "2.0", "id": True, "method": "ping"},
            {"jsonrpc": "2.0", "id": 9, "result": {}},
        ),
        1,
    ),
    "an unknown method": (lambda project: lines(initialize(1), request(2, "no/such"), request(3, "ping")), 1),
    "a last line without its newline": (
        lambda project: lines(initialize(1)) + json.dumps(request(2, "tools/list")).encode(),
        1,
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
    assert front_ids == sorted(front_ids)  # in arrival order (every script numbers its requests in order)


def test_a_handed_over_message_leaves_the_opening_as_it_was() -> None:
    opening = Opening()
    assert answer_early(initialize(1), opening) is not HAND_OVER
    revision = opening.revision
    assert revision is not None and revision.version == "2025-06-18"
    for message in (
        call_status(2, "/tmp"),
        initialize(3, "2024-11-05"),
        request(4, "tools/list", {"_meta": META}),
        request(5, "resources/read", {"uri": "x"}),
    ):
        assert answer_early(message, opening) is HAND_OVER
        assert (opening.revision, opening.modern, opening.client_capabilities) == (revision, False, {})
    fresh = Opening()
    assert answer_early(request(1, "tools/list", {"_meta": {PROTOCOL_VERSION_META_KEY: "2026-07-28"}}), fresh) is (
        HAND_OVER
    )
    assert not fresh.modern  # the trio server decides the era of a message it answers
    assert answer_early(request(1, "tools/list", {"_meta": META}), fresh) is not HAND_OVER  # control
    assert fresh.modern


def test_the_front_loop_needs_neither_trio_nor_the_service() -> None:
    code = (
        "import sys, json\n"
        "from intentloop.mcp.handshake import Opening, answer_early\n"
        "opening = Opening()\n"
        f"answer_early({initialize(1)!r}, opening)\n"
        "answer = answer_early({'jsonrpc': '2.0', 'id': 2, 'method': 'tools/list'}, opening)\n"
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


def _front_with_ready(tmp_path: Path, data: bytes, *, ready: bool) -> tuple[bool, Opening, list[bytes]]:
    """The front loop over a pipe the client keeps open (it has sent ``data`` and is quiet), with the trio server
    ready or not; when not ready, the client then closes its end (EOF)."""
    in_read, in_write = os.pipe()
    ready_read, ready_write = os.pipe()
    out = tmp_path / "answers"
    write_fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.write(in_write, data)
    if ready:
        os.write(ready_write, b"\0")
    else:
        os.close(in_write)  # the loop must read on to EOF, not hand over
    opening = Opening()
    try:
        outcome = answer_front(WireFds(read_fd=in_read, write_fd=write_fd), opening, ready_fd=ready_read)
    finally:
        for fd in (in_read, ready_read, ready_write, write_fd, *([in_write] if ready else [])):
            os.close(fd)
    return outcome, opening, out.read_bytes().splitlines()


def test_the_front_loop_hands_over_when_the_trio_server_is_ready_and_the_client_quiet(tmp_path: Path) -> None:
    half = json.dumps(request(2, "tools/list")).encode()[:10]
    handed_over, opening, answers = _front_with_ready(tmp_path, lines(initialize(1)) + half, ready=True)
    assert handed_over and opening.pending == half  # what had arrived was answered first; the half line goes on
    assert len(answers) == 1 and opening.revision is not None
    # Control: not ready, the loop keeps reading (to EOF here) instead of handing over.
    handed_over, opening, answers = _front_with_ready(tmp_path, lines(initialize(1), request(2, "ping")), ready=False)
    assert not handed_over and len(answers) == 2
