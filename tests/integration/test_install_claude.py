"""``intentloop install claude`` against temporary Claude Code folders that already hold the user's settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.cli._install_edit import HostConfigError
from intentloop.cli.install import BACKUP_SUFFIX, install
from intentloop.model import association_context

USER_SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "SessionStart": [{"matcher": "", "hooks": [{"type": "command", "command": "echo welcome", "timeout": 30}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "npx prettier -w"}]}],
    },
    "model": "opus",
}
USER_STATE = {
    "numStartups": 42,
    "theme": "dark",
    "mcpServers": {
        "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
    },
    "projects": {"/home/me/app": {"allowedTools": [], "mcpServers": {}}},
}
PROGRAM = (str(Path(sys.executable).with_name("intentloop")),)


class Claude:
    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.dir = self.home / ".claude"
        self.dir.mkdir(parents=True)
        self.settings = self.dir / "settings.json"
        self.state = self.home / ".claude.json"

    def run(self, env: dict[str, str] | None = None, **kw: Any) -> Any:
        return install("claude", env=env or {}, home=self.home, program=PROGRAM, **kw)

    def snapshot(self) -> dict[str, bytes]:
        files = [p for p in sorted(self.dir.rglob("*")) if p.is_file()] + sorted(self.home.glob(".claude.json*"))
        return {str(p.relative_to(self.home)): p.read_bytes() for p in files}


@pytest.fixture
def claude(tmp_path: Path) -> Claude:
    c = Claude(tmp_path)
    c.settings.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n")
    c.state.write_text(json.dumps(USER_STATE))  # Claude Code writes it compactly at times: bytes must survive
    return c


def _ours(settings: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        event: [h for g in groups for h in g["hooks"] if " hook " in h["command"]]
        for event, groups in settings.get("hooks", {}).items()
        if any(" hook " in h["command"] for g in groups for h in g["hooks"])
    }


def test_install_adds_hooks_and_user_scope_server_and_keeps_user_settings(claude: Claude) -> None:
    result = claude.run()
    assert [c.action for c in result.changes] == ["update", "update"]
    root = claude.home / ".local" / "share" / "intentloop" / "v1"  # the per-user default, shared with Codex
    settings = json.loads(claude.settings.read_text())
    for key in ("$schema", "permissions", "env", "model"):
        assert settings[key] == USER_SETTINGS[key]
    assert settings["hooks"]["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]
    assert settings["hooks"]["PostToolUse"] == USER_SETTINGS["hooks"]["PostToolUse"]
    ours = _ours(settings)
    assert set(ours) == {"SessionStart", "UserPromptSubmit", "PostCompact", "Stop", "SessionEnd"}
    assert ours["UserPromptSubmit"] == [
        {"type": "command", "command": f"{PROGRAM[0]} hook user-prompt --data-dir {root}", "timeout": 3}
    ]
    state = json.loads(claude.state.read_text())
    assert state["mcpServers"]["intent_loop"] == {
        "type": "stdio",
        "command": PROGRAM[0],
        "args": ["serve"],
        "env": {"INTENT_LOOP_DATA_DIR": str(root)},
    }
    del state["mcpServers"]["intent_loop"]
    assert state == USER_STATE
    assert (claude.dir / ("settings.json" + BACKUP_SUFFIX)).exists()
    assert (claude.home / (".claude.json" + BACKUP_SUFFIX)).read_text() == json.dumps(USER_STATE)


def test_second_install_changes_nothing_and_uninstall_restores_bytes(claude: Claude) -> None:
    original = claude.snapshot()
    claude.run()
    installed = claude.snapshot()
    assert not claude.run().changed
    assert claude.snapshot() == installed
    result = claude.run(uninstall=True)
    assert [c.action for c in result.changes] == ["restore", "restore"]
    assert claude.snapshot() == original


def test_dry_run_writes_nothing(claude: Claude) -> None:
    original = claude.snapshot()
    result = claude.run(dry_run=True)
    assert result.changed and claude.snapshot() == original
    assert '"intent_loop"' in result.render()


def test_uninstall_after_claude_rewrote_its_state_removes_only_ours(claude: Claude) -> None:
    claude.run()
    state = json.loads(claude.state.read_text())
    state["numStartups"] = 43
    state["mcpServers"]["notes"] = {"type": "stdio", "command": "notes-mcp"}
    claude.state.write_text(json.dumps(state, indent=2))
    claude.run(uninstall=True)
    left = json.loads(claude.state.read_text())
    assert "intent_loop" not in left["mcpServers"]
    assert left["numStartups"] == 43 and "notes" in left["mcpServers"] and "memory" in left["mcpServers"]
    assert claude.settings.read_bytes() == (json.dumps(USER_SETTINGS, indent=2) + "\n").encode()


def test_fresh_claude_folders_are_created_and_removed(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    result = claude.run()
    assert [c.action for c in result.changes] == ["create", "create"]
    claude.run(uninstall=True)
    assert claude.snapshot() == {}


def test_claude_config_dir_moves_both_files(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    custom = tmp_path / "claude-config"
    result = claude.run(env={"CLAUDE_CONFIG_DIR": str(custom)})
    assert {c.path for c in result.changes} == {custom / "settings.json", custom / ".claude.json"}
    assert result.data_root == claude.home / ".local" / "share" / "intentloop" / "v1"  # not under CLAUDE_CONFIG_DIR
    assert claude.snapshot() == {}


def test_explicit_data_dir_wins(claude: Claude, tmp_path: Path) -> None:
    result = claude.run(env={"INTENT_LOOP_DATA_DIR": str(tmp_path / "shared")})
    assert result.data_root == tmp_path / "shared"
    assert f"--data-dir {tmp_path / 'shared'}" in claude.settings.read_text()


def test_foreign_server_entry_is_refused(claude: Claude) -> None:
    state = {**USER_STATE, "mcpServers": {"intent_loop": {"type": "stdio", "command": "something-else"}}}
    claude.state.write_text(json.dumps(state))
    before = claude.snapshot()
    with pytest.raises(HostConfigError):
        claude.run()
    assert claude.snapshot() == before


def test_invalid_settings_are_refused(claude: Claude) -> None:
    claude.settings.write_text("{ not json")
    before = claude.snapshot()
    with pytest.raises(HostConfigError):
        claude.run()
    assert claude.snapshot() == before


def test_symlinked_settings_are_written_through(claude: Claude, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "settings.json"
    target.write_bytes(claude.settings.read_bytes())
    claude.settings.unlink()
    claude.settings.symlink_to(target)
    claude.run()
    assert claude.settings.is_symlink()
    assert "user-prompt" in target.read_text()
    claude.run(uninstall=True)
    assert claude.settings.is_symlink() and target.read_text() == json.dumps(USER_SETTINGS, indent=2) + "\n"


def test_installed_hook_command_runs(claude: Claude, tmp_path: Path) -> None:
    program: tuple[str, ...] = PROGRAM if Path(PROGRAM[0]).exists() else (sys.executable, "-P", "-m", "intentloop")
    install("claude", env={}, home=claude.home, program=program)
    repo = tmp_path / "repo"
    repo.mkdir()
    command = _ours(json.loads(claude.settings.read_text()))["SessionStart"][0]["command"]
    payload = {"session_id": "s-2", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    proc = subprocess.run(
        ["/bin/bash", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(claude.home)},
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] == association_context("s-2")
