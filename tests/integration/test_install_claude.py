"""``intentloop install claude`` against temporary Claude Code folders that already hold the user's settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.cli._install_edit import HostConfigError
from intentloop.cli._install_skill import installed_skill, is_our_skill
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
REPO = Path(__file__).resolve().parents[2]


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
    assert [c.action for c in result.changes] == ["update", "update", "create"]
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
    assert [c.action for c in result.changes] == ["restore", "restore", "delete"]
    assert claude.snapshot() == original
    assert not (claude.dir / "skills").exists()  # the folders the skill needed went with it


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
    assert [c.action for c in result.changes] == ["create", "create", "create"]
    claude.run(uninstall=True)
    assert claude.snapshot() == {}


def test_claude_config_dir_moves_every_file(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    custom = tmp_path / "claude-config"
    result = claude.run(env={"CLAUDE_CONFIG_DIR": str(custom)})
    assert {c.path for c in result.changes} == {
        custom / "settings.json",
        custom / ".claude.json",
        custom / "skills" / "intent" / "SKILL.md",
    }
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
        env={"INTENT_LOOP_CATALOG": "off", "PATH": "/usr/bin:/bin", "HOME": str(claude.home)},
    )
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] == association_context("s-2")


# ------------------------------------------------------------------------------------------- the /intent skill


def _skill(claude: Claude) -> Path:
    return claude.dir / "skills" / "intent" / "SKILL.md"


def test_install_puts_the_bundled_skill_in_place_and_it_is_the_plugin_skill(claude: Claude) -> None:
    claude.run()
    text = _skill(claude).read_text(encoding="utf-8")
    bundled = (REPO / "skills" / "intent" / "SKILL.md").read_text(encoding="utf-8")
    body, mark = text.rsplit("\n<!--", 1)
    assert body + "\n" == bundled  # one source: the plugin route's skill, byte for byte, then the marker line
    assert mark.startswith(" intentloop install claude: sha256=") and text.startswith("---\nname: intent\n")
    assert (_skill(claude).stat().st_mode & 0o777) == 0o600


def test_dry_run_shows_the_skill_and_writes_nothing(claude: Claude) -> None:
    result = claude.run(dry_run=True)
    assert not _skill(claude).parent.exists()
    assert f"+++ {_skill(claude)}" in result.render() and "+name: intent" in result.render()


def test_an_older_installed_skill_is_upgraded_in_place_and_uninstalled(claude: Claude) -> None:
    _skill(claude).parent.mkdir(parents=True)
    _skill(claude).write_bytes(installed_skill("---\nname: intent\ndescription: an older release\n---\nold\n"))
    result = claude.run()
    assert [c.action for c in result.changes][2] == "update"
    assert not (_skill(claude).parent / ("SKILL.md" + BACKUP_SUFFIX)).exists()  # nothing of the user's to keep
    assert "an older release" not in _skill(claude).read_text()
    claude.run(uninstall=True)
    assert not (claude.dir / "skills").exists()


@pytest.mark.parametrize("edit", ["user", "edited"])
def test_a_skill_intentloop_did_not_write_is_refused_replaced_only_on_request_and_restored(
    claude: Claude, edit: str
) -> None:
    _skill(claude).parent.mkdir(parents=True)
    if edit == "user":
        mine = b"---\nname: intent\ndescription: my own intent skill\n---\nmine\n"
    else:  # intentloop's file, changed by the user since: no longer intentloop's
        mine = installed_skill(REPO.joinpath("skills/intent/SKILL.md").read_text()).replace(b"# Intent Loop", b"# Mine")
    _skill(claude).write_bytes(mine)
    before = claude.snapshot()
    with pytest.raises(HostConfigError) as refused:
        claude.run()
    assert refused.value.code == "INSTALL_ENTRY_EXISTS" and str(_skill(claude)) in str(refused.value)
    assert claude.snapshot() == before  # refused before anything was written, the other files too
    result = claude.run(uninstall=True)  # never removes what it did not write, and says so
    assert _skill(claude).read_bytes() == mine and any(str(_skill(claude)) in n for n in result.notes)
    claude.run(replace=True)
    assert is_our_skill(_skill(claude).read_bytes())
    assert (_skill(claude).parent / ("SKILL.md" + BACKUP_SUFFIX)).read_bytes() == mine
    claude.run(uninstall=True)
    assert claude.snapshot() == before


def test_uninstall_keeps_a_skills_folder_that_holds_other_skills(claude: Claude) -> None:
    other = claude.dir / "skills" / "review" / "SKILL.md"
    other.parent.mkdir(parents=True)
    other.write_text("---\nname: review\n---\n")
    claude.run()
    claude.run(uninstall=True)
    assert other.exists() and not _skill(claude).parent.exists()
