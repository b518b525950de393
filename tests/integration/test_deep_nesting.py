"""JSON nested to any depth gets a structured answer and never ends the server or the hook: the MCP line (a JSON-RPC
parse error past the decoder's depth), a tool's arguments (``INVALID_ARGUMENTS`` past ``MAX_ARGUMENT_DEPTH``), and a
hook's stdin (the fail-open answer)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from intentloop.errors import InvalidInputError
from intentloop.service.args import MAX_ARGUMENT_DEPTH, decode_arguments

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
DEPTHS = (3, MAX_ARGUMENT_DEPTH - 2, MAX_ARGUMENT_DEPTH + 1, 500, 900, 1000, 5000, 100_000)
TASK = "00000000-0000-4000-8000-000000000000"


def _nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTENT_LOOP")} | {"INTENT_LOOP_CATALOG": "off"}
    return {**env, "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}


def _serve(
    tmp_path: Path, lines: list[str], answers_owed: int
) -> tuple[dict[Any, dict[str, Any]], list[dict[str, Any]], str, int]:
    """Send ``lines`` to a real server and close its stdin once it has written ``answers_owed`` answers: a server
    abandons what is still in flight at EOF (docs/MCP.md), so closing early would test the machine's speed."""
    process = subprocess.Popen(
        [*INTENTLOOP, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stdin = process.stdin
    writer = threading.Thread(target=lambda: stdin.write(("\n".join(lines) + "\n").encode()), daemon=True)
    writer.start()  # the answers are read meanwhile: neither side's pipe may fill up and stop the other
    out, deadline = bytearray(), time.monotonic() + 120
    while out.count(b"\n") < answers_owed and time.monotonic() < deadline:
        if select.select([process.stdout], [], [], 1)[0]:
            chunk = os.read(process.stdout.fileno(), 1 << 16)
            if not chunk:
                break
            out += chunk
    writer.join(timeout=10)
    rest, stderr = process.communicate(timeout=60)  # closes stdin: EOF
    answers = [json.loads(line) for line in (bytes(out) + rest).decode().splitlines()]
    return {a.get("id"): a for a in answers if a.get("id") is not None}, answers, stderr.decode(), process.returncode


def test_a_deeply_nested_line_or_argument_never_ends_the_server(tmp_path: Path) -> None:
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": init}),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    for depth in DEPTHS:
        graph = _nested_object(depth)
        arguments = f'{{"project_root":"{tmp_path}","task_id":"{TASK}","request_id":"r-{depth}","graph":{graph}}}'
        lines.append(
            f'{{"jsonrpc":"2.0","id":{depth},"method":"tools/call","params":{{"name":"intent_import",'
            f'"arguments":{arguments}}}}}'
        )
        lines.append(
            f'{{"jsonrpc":"2.0","id":"list-{depth}","method":"tools/list","params":{{"x":'
            f"{'[' * depth + ']' * depth}}}}}"
        )
    lines.append('{"jsonrpc":"2.0","id":"last","method":"ping"}')
    by_id, answers, stderr, code = _serve(tmp_path, lines, answers_owed=len(lines) - 1)  # all but the notification
    assert by_id["last"]["result"] == {} and code == 0  # still up after every line, and ends cleanly
    assert "Traceback" not in stderr and "RecursionError" not in stderr
    parse_errors = [a for a in answers if a.get("id") is None]
    for depth in DEPTHS:
        if depth not in by_id:  # past the decoder's depth: the line itself is refused
            assert f"list-{depth}" not in by_id
            continue
        envelope = json.loads(by_id[depth]["result"]["content"][0]["text"])
        assert envelope["ok"] is False and envelope["error"]["code"] == "INVALID_ARGUMENTS"
        deep = "nest deeper than" in envelope["error"]["message"]
        assert deep == (depth > MAX_ARGUMENT_DEPTH), (depth, envelope["error"]["message"])
    assert {3, MAX_ARGUMENT_DEPTH - 2, MAX_ARGUMENT_DEPTH + 1} <= set(by_id)  # control: shallow lines are answered
    assert 100_000 not in by_id and parse_errors  # and the deepest are refused as lines
    assert all(a["error"]["code"] == -32700 and "nested too deeply" in a["error"]["message"] for a in parse_errors)


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_a_deeply_nested_hook_payload_gets_the_fail_open_answer(tmp_path: Path, depth: int) -> None:
    payload = '{"hook_event_name":"UserPromptSubmit","session_id":"s","cwd":"/tmp","x":' + "[" * depth
    payload += "]" * depth + "}"
    done = subprocess.run(
        [*INTENTLOOP, "hook"], input=payload, capture_output=True, text=True, env=_env(tmp_path), timeout=60
    )
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(done.stdout) == {"continue": True, "suppressOutput": True}
    shallow = payload.replace("[" * depth, "[").replace("]" * depth, "]")  # control: the same payload, flat
    flat = subprocess.run(
        [*INTENTLOOP, "hook"], input=shallow, capture_output=True, text=True, env=_env(tmp_path), timeout=60
    )
    assert flat.returncode == 0 and "additionalContext" in flat.stdout


def test_arguments_at_the_depth_limit_are_decoded_and_one_more_level_is_refused() -> None:
    def status(depth: int) -> dict[str, Any]:
        value: Any = 1
        for _ in range(depth - 1):  # the arguments object itself is the first level
            value = [value]
        return {"project_root": "/tmp", "extra": value}

    with pytest.raises(InvalidInputError) as at_limit:
        decode_arguments("intent_status", status(MAX_ARGUMENT_DEPTH))
    assert "nest deeper" not in at_limit.value.message  # refused for the unknown key, not for its depth
    with pytest.raises(InvalidInputError) as past:
        decode_arguments("intent_status", status(MAX_ARGUMENT_DEPTH + 1))
    assert "nest deeper than" in past.value.message and past.value.code == "INVALID_ARGUMENTS"
