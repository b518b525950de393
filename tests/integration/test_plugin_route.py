"""The Codex plugin route: the repository's ``.mcp.json`` server and ``hooks/hooks.json`` hooks, started with exactly
the environments Codex gives them, agree on one data root — the same one the CLI and the installers resolve.

Codex starts a plugin's MCP server with only HOME, PATH, USER, LANG, TERM, TMPDIR, the entry's ``env`` and the
variables its ``env_vars`` names; its hooks inherit Codex's whole environment plus PLUGIN_ROOT / PLUGIN_DATA and the
``CLAUDE_PLUGIN_*`` aliases. The server here is started from ``.mcp.json`` as written, the hook from ``hooks.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.store import ROOT_ENV_VARS, resolve_data_root
from intentloop.store.catalog import CATALOG_ENV_VARS

from _support import mcp_client as H

REPO = Path(__file__).resolve().parents[2]
BIN = str(Path(sys.executable).parent)
#: What Codex passes to every MCP server from its own environment (besides the entry's env and env_vars).
CODEX_SERVER_BASE = ("HOME", "PATH", "USER", "LANG", "TERM", "TMPDIR")


def _entry() -> dict[str, Any]:
    entry: dict[str, Any] = json.loads((REPO / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["intent_loop"]
    return entry


def server_env(user_env: dict[str, str], *, forward: bool = True) -> dict[str, str]:
    """The environment Codex gives the plugin's server: the base variables, then env_vars, then the entry's env."""
    entry = _entry()
    env = {k: user_env[k] for k in CODEX_SERVER_BASE if k in user_env}
    if forward:
        env.update({k: user_env[k] for k in entry.get("env_vars", []) if k in user_env})
    env.update(entry.get("env", {}))
    env.setdefault("INTENT_LOOP_CATALOG", "off")  # not Codex's doing: the suite keeps the rule catalog off (conftest)
    return env


def hook_env(user_env: dict[str, str], home: Path) -> dict[str, str]:
    """The environment Codex gives a plugin hook: everything, plus the plugin variables (which must not matter)."""
    data = home / ".codex" / "plugins" / "data" / "intent-loop-local"
    return {
        **user_env,
        "PLUGIN_ROOT": str(REPO),
        "PLUGIN_DATA": str(data),
        "CLAUDE_PLUGIN_ROOT": str(REPO),
        "CLAUDE_PLUGIN_DATA": str(data),
    }


def run_plugin_hook(event: str, env: dict[str, str], payload: dict[str, Any]) -> dict[str, Any]:
    groups = json.loads((REPO / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"][event]
    command = groups[0]["hooks"][0]["command"]
    done = subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 0 and done.stderr == b""
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_mcp_json_forwards_exactly_the_variables_the_rule_and_the_catalog_read() -> None:
    entry = _entry()
    assert entry["command"] == "intentloop" and entry["args"] == ["serve"]
    assert tuple(entry["env_vars"]) == ROOT_ENV_VARS + CATALOG_ENV_VARS
    user = {"HOME": "/h", "INTENT_LOOP_CATALOG": "off", "XDG_CACHE_HOME": "/c", "INTENT_LOOP_CATALOG_CACHE": "/k"}
    assert server_env(user).items() >= {"INTENT_LOOP_CATALOG": "off", "XDG_CACHE_HOME": "/c"}.items()
    assert "XDG_CACHE_HOME" not in server_env(user, forward=False)  # the control: Codex does not pass it by itself
    assert "env" not in entry  # a fixed root here would split the memory from the CLI's and the installers'


def _user_env(tmp_path: Path, case: str) -> tuple[dict[str, str], Path]:
    """A user's environment for ``case`` and the root every process must agree on."""
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "INTENT_LOOP_CATALOG": "off",
        "PATH": f"{BIN}:/usr/bin:/bin",
        "USER": "me",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    env["TMPDIR"] = str(tmp_path)
    env["EDITOR"] = "vi"  # one of many variables a server never sees
    if case == "default":
        return env, home / ".local" / "share" / "intentloop" / "v1"
    if case == "xdg":
        env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
        return env, tmp_path / "xdg" / "intentloop" / "v1"
    if case == "original":  # a user of the original plugin, with a custom CODEX_HOME
        env["CODEX_HOME"] = str(tmp_path / "codex")
        original = tmp_path / "codex" / "plugin-data" / "intent-loop" / "v1"
        (original / "projects").mkdir(parents=True)
        return env, original
    assert case == "override"
    env["INTENT_LOOP_DATA_DIR"] = str(tmp_path / "chosen")
    return env, tmp_path / "chosen"


@pytest.mark.parametrize("case", ["default", "xdg", "original", "override"])
async def test_plugin_server_and_hooks_agree_on_the_root(tmp_path: Path, case: str) -> None:
    user_env, expected = _user_env(tmp_path, case)
    project = tmp_path / "project"
    project.mkdir()
    assert resolve_data_root(user_env) == expected  # the CLI and the installers resolve the same
    async with H.server(None, command=["intentloop", "serve"], env=server_env(user_env), cwd=tmp_path) as client:
        s = H.Surface(client, project)
        task = (await s.ok("intent_start_task", {"request_id": "plugin-1", "host_session_id": "s-plugin"}))["task_id"]
        status = await s.ok("intent_status", {})
    assert status["data_directory"].startswith(str(expected) + "/projects/")
    home = Path(user_env["HOME"])
    payload = {"session_id": "s-plugin", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    answer = run_plugin_hook("SessionStart", hook_env(user_env, home), payload)
    assert f"[Intent Loop linked task_id={task}" in answer["hookSpecificOutput"]["additionalContext"]
    assert not (home / ".codex" / "plugins").exists()  # PLUGIN_DATA decided nothing


async def test_without_env_vars_the_server_would_lose_xdg_data_home(tmp_path: Path) -> None:
    """Why ``env_vars`` is there: Codex does not pass XDG_DATA_HOME by itself (the control of the test above)."""
    user_env, expected = _user_env(tmp_path, "xdg")
    project = tmp_path / "project"
    project.mkdir()
    env = server_env(user_env, forward=False)
    async with H.server(None, command=["intentloop", "serve"], env=env, cwd=tmp_path) as client:
        status = await H.Surface(client, project).ok("intent_status", {})
    assert not status["data_directory"].startswith(str(expected))
    assert status["data_directory"].startswith(str(Path(user_env["HOME"]) / ".local/share/intentloop/v1"))
