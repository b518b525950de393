"""The sans-IO session both loops drive: era, revision, validity rules and what each message asks for, with no I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from intentloop.mcp import session as session_module
from intentloop.mcp.handshake import HAND_OVER, Opening, carry_out
from intentloop.mcp.protocol import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY
from intentloop.mcp.session import Batch, Call, Cancel, Ready, Reply, Response, Session

META = {PROTOCOL_VERSION_META_KEY: "2026-07-28", CLIENT_CAPABILITIES_META_KEY: {"roots": {}}}
SKILL = "intent-loop://skill/intent"


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(request_id: int = 1, version: str = "2025-06-18", capabilities: Any = None) -> dict[str, Any]:
    return request(request_id, "initialize", {"protocolVersion": version, "capabilities": capabilities or {}})


def opened(version: str = "2025-06-18", capabilities: Any = None) -> Session:
    session = Session()
    assert isinstance(session.receive(initialize(1, version, capabilities)), Reply)
    return session


def error_code(decision: object) -> int:
    assert isinstance(decision, Reply | Ready), decision
    message = decision.message
    assert isinstance(message, dict)
    code: int = message["error"]["code"]
    return code


def test_initialize_opens_the_handshake_era_and_only_once() -> None:
    session = Session()
    assert not session.opened
    assert error_code(session.receive(request(1, "tools/list"))) == -32600  # not initialized
    assert not session.opened
    answer = session.receive(initialize(2, "1999-01-01"))
    assert isinstance(answer, Reply) and isinstance(answer.message, dict)
    assert answer.message["result"]["protocolVersion"] == "2025-11-25"  # an unknown version gets the latest
    assert session.revision is not None and not session.modern
    assert error_code(session.receive(initialize(3))) == -32600  # already initialized
    listed = session.receive(request(4, "tools/list"))
    assert isinstance(listed, Ready) and "tools" in listed.message["result"]  # control: the session is open


def test_a_modern_request_opens_the_modern_era_and_then_initialize_is_refused() -> None:
    session = Session()
    listed = session.receive(request(1, "tools/list", {"_meta": META}))
    assert isinstance(listed, Ready) and listed.message["result"]["resultType"] == "complete"
    assert session.modern and session.revision is None
    refused = session.receive(initialize(2))
    assert error_code(refused) == -32022
    assert isinstance(refused, Reply) and isinstance(refused.message, dict)
    assert refused.message["error"]["data"] == {"supported": ["2026-07-28"], "requested": "2025-06-18"}
    assert error_code(session.receive(request(3, "ping", {"_meta": META}))) == -32601  # ping is not modern


def test_each_era_refuses_the_other_eras_requests() -> None:
    handshake = opened()
    assert error_code(handshake.receive(request(2, "tools/list", {"_meta": META}))) == -32600
    assert isinstance(handshake.receive(request(3, "tools/list")), Ready)  # control
    modern = Session()
    bad = {"_meta": {PROTOCOL_VERSION_META_KEY: "2026-07-28"}}  # no client capabilities
    assert error_code(modern.receive(request(1, "tools/list", bad))) == -32602
    assert modern.modern  # a request carrying the envelope decides the era, valid or not
    assert error_code(modern.receive(request(2, "tools/list"))) == -32602  # no envelope at all
    assert isinstance(modern.receive(request(3, "tools/list", {"_meta": META})), Ready)  # control


def test_an_id_in_flight_cannot_be_reused_until_the_driver_finishes_it() -> None:
    session = opened()
    first = session.receive(request(7, "tools/call", {"name": "intent_status"}))
    assert isinstance(first, Call)
    assert error_code(session.receive(request(7, "ping"))) == -32600
    session.finished(7)
    assert isinstance(session.receive(request(7, "ping")), Ready)  # control: free again


def test_a_call_carries_the_revision_and_capabilities_it_was_sent_under() -> None:
    handshake = opened("2024-11-05", {"roots": {"listChanged": True}})
    call = handshake.receive(request(2, "tools/call", {"name": "intent_status", "arguments": {}}))
    assert isinstance(call, Call) and call.target == "intent_status"
    assert call.revision.version == "2024-11-05" and call.capabilities == {"roots": {"listChanged": True}}
    modern = Session()
    call = modern.receive(request(1, "tools/call", {"name": "intent_status", "_meta": META}))
    assert isinstance(call, Call) and call.revision.version == "2026-07-28" and call.capabilities == {"roots": {}}
    answer = call.result({"content": []})
    assert list(answer["result"]) == ["content", "resultType", "_meta"]  # the revision's fields, in SDK order


def test_a_call_is_checked_before_it_reaches_the_driver() -> None:
    session = opened()
    assert error_code(session.receive(request(2, "tools/call", {"name": 3}))) == -32602
    assert error_code(session.receive(request(3, "resources/read", {}))) == -32602
    assert error_code(session.receive(request(4, "resources/read", {"uri": "intent-loop://other"}))) == -32002
    modern = Session()
    assert error_code(modern.receive(request(1, "resources/read", {"uri": "x", "_meta": META}))) == -32602
    read = session.receive(request(5, "resources/read", {"uri": SKILL}))
    assert isinstance(read, Call) and read.target == SKILL  # control


def test_batches_are_accepted_only_in_2025_03_26() -> None:
    status = request(4, "tools/call", {"name": "intent_status"})
    batch = json.dumps([request(2, "ping"), initialize(3), status]).encode()
    assert error_code(opened("2025-06-18").receive_line(batch)) == -32600
    assert error_code(opened("2025-03-26").receive_line(b"[]")) == -32600
    decided = opened("2025-03-26").receive_line(batch)
    assert isinstance(decided, Batch)
    ping, init, call = decided.members
    assert isinstance(ping, Ready) and isinstance(call, Call)
    assert error_code(init) == -32600  # initialize cannot be part of a batch


def test_notifications_and_responses() -> None:
    session = opened()
    assert session.receive({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    assert session.receive({**cancelled, "params": {"requestId": 5}}) == Cancel(5)
    for unusable in ([5], True, None):
        assert session.receive({**cancelled, "params": {"requestId": unusable}}) is None
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}}
    assert session.receive(answer) == Response(1, answer)
    assert session.receive({**answer, "id": True}) is None
    assert error_code(session.receive({"jsonrpc": "2.0", "id": 1})) == -32600  # neither a request nor an answer
    assert session.roots_request() == (1, {"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
    assert session.roots_request()[0] == 2


def test_unreadable_lines_are_answered_without_an_id() -> None:
    session = Session()
    for line in (b"{not json", b'"text"', b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}'):
        decided = session.receive_line(line)
        assert isinstance(decided, Reply) and isinstance(decided.message, dict), line
    assert error_code(session.receive_line(b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}')) == -32600
    assert isinstance(session.receive_line(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'), Reply)  # control


def test_an_unexpected_failure_is_an_internal_error_the_front_loop_leaves_to_the_logging_trio_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(method: str, revision: object) -> dict[str, Any]:
        raise RuntimeError("secret detail")

    session = opened()
    monkeypatch.setattr(session_module, "_result", broken)
    failed = session.receive(request(2, "tools/list"))
    assert isinstance(failed, Ready) and isinstance(failed.failure, RuntimeError)
    assert failed.message["error"] == {"code": -32603, "message": "Internal error"}
    opening = Opening()
    assert carry_out(failed, opening) is HAND_OVER
    monkeypatch.undo()
    fine = opening.session.receive(initialize())
    written = carry_out(fine, opening)
    assert isinstance(written, dict) and "result" in written  # control: an answer the front loop writes itself


@pytest.mark.parametrize("arguments", [[1], "text", 7, True, 1.5])
def test_an_unknown_tool_and_arguments_that_are_not_an_object_are_invalid_params(arguments: Any) -> None:
    # The specification lists an unknown tool among the protocol errors, and the original answers both with -32602:
    # decided here, so the front loop answers them as the trio server does.
    for session, meta in ((opened(), {}), (Session(), {"_meta": META})):
        unknown = session.receive(request(2, "tools/call", {"name": "intent_nope", "arguments": {}, **meta}))
        assert error_code(unknown) == -32602
        assert isinstance(unknown, Ready) and unknown.message["error"]["message"] == "Unknown tool: intent_nope"
        shape = session.receive(request(3, "tools/call", {"name": "intent_status", "arguments": arguments, **meta}))
        assert error_code(shape) == -32602 and "object" in shape.message["error"]["message"]  # type: ignore[union-attr]
        for request_id, absent in ((4, {}), (5, {"arguments": None}), (6, {"arguments": {"x": 1}})):
            call = session.receive(request(request_id, "tools/call", {"name": "intent_status", **absent, **meta}))
            assert isinstance(call, Call), absent  # control: absent, null and any object reach the driver


def test_an_unknown_tool_name_is_cut_in_the_message() -> None:
    answer = opened().receive(request(2, "tools/call", {"name": "x" * 5000}))
    assert isinstance(answer, Ready) and answer.message["error"]["message"] == "Unknown tool: " + "x" * 200


@pytest.mark.parametrize("method", ["tools/list", "resources/list", "resources/templates/list"])
@pytest.mark.parametrize("cursor", ["next", "", 3, {"page": 2}])
def test_a_cursor_on_a_list_is_invalid_params(method: str, cursor: Any) -> None:
    # Every list fits in one page, so no cursor was ever handed out: any cursor is invalid.
    for session, meta in ((opened(), {}), (Session(), {"_meta": META})):
        assert error_code(session.receive(request(2, method, {"cursor": cursor, **meta}))) == -32602
        for request_id, params in ((3, {}), (4, {"cursor": None})):
            listed = session.receive(request(request_id, method, {**params, **meta}))
            assert isinstance(listed, Ready) and "result" in listed.message, params  # control
