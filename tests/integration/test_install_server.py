"""The MCP server entry an installer writes really starts, with only its configured environment, and uses the
data root the installer pinned (Codex gives an MCP server nothing but the ``env`` of its entry)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest

from intentloop.cli.install import install

_SCRIPT = Path(sys.executable).with_name("intentloop")
PROGRAM: tuple[str, ...] = (str(_SCRIPT),) if _SCRIPT.exists() else (sys.executable, "-P", "-m", "intentloop")


def _status(program: list[str], env: dict[str, str], repo: Path) -> dict[str, Any]:
    """Start the server, initialize, call ``intent_status`` for ``repo``; return the result envelope."""
    requests: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "intent_status", "arguments": {"project_root": str(repo)}},
        },
    ]
    answers: dict[Any, dict[str, Any]] = {}
    with subprocess.Popen(program, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        killer = threading.Timer(60, proc.kill)  # a server that never answers must not hang the suite
        killer.start()
        try:
            for request in requests:
                proc.stdin.write(json.dumps(request).encode() + b"\n")
                proc.stdin.flush()
                while "id" in request and request["id"] not in answers:
                    line = proc.stdout.readline()
                    assert line, "the server closed its output"
                    message = json.loads(line)
                    answers[message.get("id")] = message
        finally:
            killer.cancel()
            proc.stdin.close()
            proc.wait(timeout=30)
    assert answers[1]["result"]["serverInfo"]["name"] == "intent-loop"
    envelope: dict[str, Any] = answers[2]["result"]["structuredContent"]
    assert envelope["ok"] is True
    return envelope


@pytest.mark.parametrize("host", ["codex", "claude"])
def test_installed_server_entry_starts_with_the_pinned_data_root(tmp_path: Path, host: str) -> None:
    home = tmp_path / "home"
    result = install(host, env={}, home=home, program=PROGRAM)
    if host == "codex":
        entry = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["intent_loop"]
    else:
        entry = json.loads((home / ".claude.json").read_text())["mcpServers"]["intent_loop"]
        assert entry["type"] == "stdio"
    repo = tmp_path / "repo"
    repo.mkdir()
    envelope = _status(
        [entry["command"], *entry["args"]],
        {"INTENT_LOOP_CATALOG": "off", "PATH": "/usr/bin:/bin", **entry["env"]},
        repo,
    )
    assert envelope["result"]["data_directory"].startswith(str(result.data_root) + os.sep)
    assert not result.data_root.exists()  # status reads only
