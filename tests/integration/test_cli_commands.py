"""`intentloop serve`, `hook`, `install` and the CLI's own usage handling, as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        **extra,
    }


def _run(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*INTENTLOOP, *args], capture_output=True, text=True, env=env, input=stdin, timeout=60)


# ------------------------------------------------------------------------------------------------------- serve


def test_serve_answers_initialize_over_stdio_and_exits_0_on_eof(tmp_path: Path) -> None:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
    }
    done = _run(["serve"], _env(tmp_path, INTENT_LOOP_DATA_DIR=str(tmp_path / "data")), json.dumps(request) + "\n")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "intent-loop"
    assert not (tmp_path / "data").exists()  # starting and initializing create nothing


# -------------------------------------------------------------------------------------------------------- hook


def _hook_payload(cwd: Path) -> str:
    return json.dumps(
        {"hook_event_name": "SessionStart", "session_id": "s-1", "cwd": str(cwd), "source": "startup", "model": "m"}
    )


def test_hook_prints_one_json_line_and_exits_0(tmp_path: Path) -> None:
    env = _env(tmp_path, INTENT_LOOP_DATA_DIR=str(tmp_path / "data"))
    done = _run(["hook"], env, _hook_payload(tmp_path))
    assert done.returncode == 0
    [line] = done.stdout.splitlines()
    assert json.loads(line)["continue"] is True
    forced = _run(["hook", "session-start"], env, _hook_payload(tmp_path))
    assert forced.returncode == 0 and json.loads(forced.stdout)["continue"] is True


def test_hook_fails_open_without_a_data_root_and_on_garbage(tmp_path: Path) -> None:
    state = tmp_path / "state"  # the problem is logged here, never in the real user's ~/.local/state
    no_home = {k: v for k, v in _env(tmp_path, XDG_STATE_HOME=str(state)).items() if k != "HOME"}
    for stdin in (_hook_payload(tmp_path), "not json at all"):
        done = _run(["hook"], no_home, stdin)
        assert done.returncode == 0
        assert json.loads(done.stdout) == {"continue": True, "suppressOutput": True}
    [logged] = (state / "intentloop" / "hook-problems.log").read_text().splitlines()  # garbage is no user problem
    assert json.loads(logged)["code"] == "DATA_DIR_REQUIRED"


# ----------------------------------------------------------------------------------------------------- install


def test_install_codex_dry_run_writes_nothing_then_install_and_uninstall(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    env = _env(tmp_path, CODEX_HOME=str(codex))
    done = _run(["install", "codex", "--dry-run", "--json"], env)
    assert done.returncode == 0, done.stderr
    body: dict[str, Any] = json.loads(done.stdout)
    assert body["ok"] is True and body["dry_run"] is True and body["changed"] is True and body["host"] == "codex"
    assert {c["action"] for c in body["changes"]} == {"create"}
    assert all(c["diff"] for c in body["changes"])
    assert not codex.exists()
    assert _run(["install", "codex"], env).returncode == 0
    config = (codex / "config.toml").read_text()
    assert "mcp_servers.intent_loop = {" in config and "serve" in config
    again = json.loads(_run(["install", "codex", "--json"], env).stdout)
    assert again["changed"] is False
    assert _run(["install", "codex", "--uninstall"], env).returncode == 0
    leftover = (codex / "config.toml").read_text() if (codex / "config.toml").exists() else ""
    assert "intent_loop" not in leftover


def test_install_claude_dry_run(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    done = _run(["install", "claude", "--dry-run"], _env(tmp_path, CLAUDE_CONFIG_DIR=str(claude)))
    assert done.returncode == 0 and "dry run" in done.stdout
    assert not claude.exists()


def test_install_unknown_host_is_a_usage_error(tmp_path: Path) -> None:
    done = _run(["install", "emacs"], _env(tmp_path))
    assert done.returncode == 2 and "error[INVALID_ARGUMENTS]" in done.stderr


# ------------------------------------------------------------------------------------------------------- usage


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--help"], 0),
        (["recover", "--help"], 0),
        ([], 2),
        (["frobnicate"], 2),
        (["verify", "--project-id"], 2),
        (["recover", "export", "--project-id", "a" * 64], 2),
    ],
)
def test_usage_exit_codes(tmp_path: Path, args: list[str], code: int) -> None:
    done = _run(args, _env(tmp_path, INTENT_LOOP_DATA_DIR=str(tmp_path / "data")))
    assert done.returncode == code
    if code == 2 and args:
        assert "error[INVALID_ARGUMENTS]" in done.stderr and "remedy:" in done.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("module_form", [["-m", "intentloop"], ["-P", "-m", "intentloop"]])
def test_python_dash_m_intentloop_is_the_same_program(tmp_path: Path, module_form: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, *module_form, "status", "--json"],
        capture_output=True,
        text=True,
        env=_env(tmp_path, INTENT_LOOP_DATA_DIR=str(tmp_path / "data")),
        timeout=60,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["command"] == "status"


def test_install_json_reports_a_backup_removed_by_uninstall(tmp_path: Path) -> None:
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text('model = "o3"\n')
    env = _env(tmp_path, CODEX_HOME=str(codex))
    assert _run(["install", "codex"], env).returncode == 0
    assert (codex / "config.toml.intentloop.bak").exists()
    with (codex / "config.toml").open("a") as fh:
        fh.write("\n[tui]\nanimations = false\n")  # a later edit: the original bytes cannot simply come back
    body = json.loads(_run(["install", "codex", "--uninstall", "--json"], env).stdout)
    config = next(c for c in body["changes"] if c["path"].endswith("config.toml"))
    assert config["action"] == "update" and config["backup_removed"] == str(codex / "config.toml.intentloop.bak")
    assert not (codex / "config.toml.intentloop.bak").exists()
    assert (codex / "config.toml").read_text() == 'model = "o3"\n\n[tui]\nanimations = false\n'
