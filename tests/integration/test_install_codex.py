"""``intentloop install codex`` against temporary Codex homes that already hold the user's own settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from intentloop.cli._install_edit import (
    TOML_BEGIN,
    TOML_END,
    HostConfigError,
    appended_settings_land_in_our_table,
    toml_server_table,
)
from intentloop.cli.install import BACKUP_SUFFIX, install
from intentloop.model import association_context

USER_TOML = """\
# Codex configuration: hand-written, comments matter
model = "gpt-5-codex"
approval_policy = "on-request"   # ask me first

[features]
hooks = true

[mcp_servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "placeholder" }

[projects."/home/me/src/app"]
trust_level = "trusted"

[hooks.state."/home/me/.codex/hooks.json:session_start:0:0"]
trusted_hash = "sha256:0000"
"""
USER_HOOKS = {
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}],
    }
}
PROGRAM = (str(Path(sys.executable).with_name("intentloop")),)


class Codex:
    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.dir = self.home / ".codex"
        self.dir.mkdir(parents=True)
        self.config = self.dir / "config.toml"
        self.hooks = self.dir / "hooks.json"

    def run(self, **kw: Any) -> Any:
        return install("codex", env={}, home=self.home, program=PROGRAM, **kw)

    def snapshot(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.dir.iterdir()) if p.is_file()}


@pytest.fixture
def codex(tmp_path: Path) -> Codex:
    c = Codex(tmp_path)
    c.config.write_text(USER_TOML)
    c.hooks.write_text(json.dumps(USER_HOOKS, indent=4))  # the user's own layout: kept on every edit
    return c


def _our_hooks(doc: dict[str, Any]) -> dict[str, list[str]]:
    """Event -> our hook commands, for the events that have any."""
    found = {
        event: [h["command"] for g in groups for h in g["hooks"] if " hook " in h["command"]]
        for event, groups in doc.get("hooks", {}).items()
    }
    return {event: commands for event, commands in found.items() if commands}


def test_install_adds_server_and_hooks_and_keeps_every_user_byte(codex: Codex) -> None:
    original = codex.snapshot()
    result = codex.run()
    assert [c.action for c in result.changes] == ["update", "update"]
    text = codex.config.read_text()
    head, rest = USER_TOML.split("\n[features]", 1)  # our block: one line above the first table
    assert text.startswith(head + "\n" + TOML_BEGIN + "\nmcp_servers.intent_loop = { command = ")
    assert text.endswith(TOML_END + "\n\n[features]" + rest)
    doc = tomllib.loads(text)
    root = codex.home / ".local" / "share" / "intentloop" / "v1"  # the per-user default, not Codex's folder
    assert doc["mcp_servers"]["intent_loop"] == {
        "command": PROGRAM[0],
        "args": ["serve"],
        "env": {"INTENT_LOOP_DATA_DIR": str(root)},
    }
    del doc["mcp_servers"]["intent_loop"]
    assert doc == tomllib.loads(USER_TOML)
    hooks = json.loads(codex.hooks.read_text())
    assert hooks["hooks"]["SessionStart"][0] == USER_HOOKS["hooks"]["SessionStart"][0]  # user groups keep their place
    assert hooks["hooks"]["PreToolUse"] == USER_HOOKS["hooks"]["PreToolUse"]
    ours = _our_hooks(hooks)
    assert set(ours) == {"SessionStart", "UserPromptSubmit", "PostCompact", "Stop", "SessionEnd"}
    for event, arg in (("SessionStart", "session-start"), ("UserPromptSubmit", "user-prompt"), ("Stop", "stop")):
        assert ours[event] == [f"{PROGRAM[0]} hook {arg} --data-dir {root}"]
    ours_start = hooks["hooks"]["SessionStart"][1]
    assert ours_start["matcher"] == "startup|resume|clear|compact"
    assert ours_start["hooks"][0]["timeout"] == 3
    assert ours_start["hooks"][0]["statusMessage"] == "Loading compact intent context"
    assert (codex.dir / ("config.toml" + BACKUP_SUFFIX)).read_bytes() == original["config.toml"]
    assert (codex.dir / ("hooks.json" + BACKUP_SUFFIX)).read_bytes() == original["hooks.json"]
    assert any("/hooks" in note and "trust" in note for note in result.notes)


def test_second_install_changes_nothing(codex: Codex) -> None:
    codex.run()
    after_first = codex.snapshot()
    result = codex.run()
    assert not result.changed
    assert [c.action for c in result.changes] == ["unchanged", "unchanged"]
    assert codex.snapshot() == after_first


def test_uninstall_restores_the_original_bytes(codex: Codex) -> None:
    original = codex.snapshot()
    codex.run()
    result = codex.run(uninstall=True)
    assert [c.action for c in result.changes] == ["restore", "restore"]
    assert codex.snapshot() == original  # backups are gone too
    assert not codex.run(uninstall=True).changed


def test_dry_run_writes_nothing(codex: Codex) -> None:
    original = codex.snapshot()
    result = codex.run(dry_run=True)
    assert result.changed and codex.snapshot() == original
    rendered = result.render()
    assert "dry run" in rendered and "+mcp_servers.intent_loop = {" in rendered and "hook session-start" in rendered
    codex.run()
    installed = codex.snapshot()
    assert codex.run(uninstall=True, dry_run=True).changed
    assert codex.snapshot() == installed


def test_fresh_codex_home_is_created_and_removed(tmp_path: Path) -> None:
    codex = Codex(tmp_path)
    result = codex.run()
    assert [c.action for c in result.changes] == ["create", "create"]
    assert codex.config.read_text().startswith(TOML_BEGIN)
    assert not list(codex.dir.glob("*" + BACKUP_SUFFIX))
    assert codex.run(uninstall=True).changed
    assert codex.snapshot() == {}


def test_uninstall_after_user_edits_removes_only_ours(codex: Codex) -> None:
    codex.run()
    with codex.config.open("a") as fh:
        fh.write('\n[profiles.fast]\nmodel = "gpt-5-mini"\n')
    hooks = json.loads(codex.hooks.read_text())
    hooks["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "notify-send done"}]})
    codex.hooks.write_text(json.dumps(hooks, indent=2))
    result = codex.run(uninstall=True)
    assert [c.action for c in result.changes] == ["update", "update"]
    doc = tomllib.loads(codex.config.read_text())
    assert "intent_loop" not in doc["mcp_servers"] and doc["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert TOML_BEGIN not in codex.config.read_text()
    assert codex.config.read_text().startswith(USER_TOML)
    left = json.loads(codex.hooks.read_text())
    assert _our_hooks(left) == {}
    assert left["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    assert left["hooks"]["PreToolUse"] == USER_HOOKS["hooks"]["PreToolUse"]


def test_an_older_block_at_the_end_is_migrated_and_tables_inside_it_survive(codex: Codex) -> None:
    server = {"command": PROGRAM[0], "args": ["serve"], "env": {"INTENT_LOOP_DATA_DIR": "/old"}}
    trust = '[hooks.state."/home/me/.codex/hooks.json:user_prompt_submit:0:0"]\ntrusted_hash = "sha256:abcd"\n'
    old = f"{USER_TOML}\n{TOML_BEGIN}\n{toml_server_table(server)}{trust}{TOML_END}\n"  # the earlier layout
    codex.config.write_text(old)
    assert codex.run().changed
    text = codex.config.read_text()
    assert text.count(TOML_BEGIN) == 1 and "[mcp_servers.intent_loop]" not in text and trust in text
    assert not appended_settings_land_in_our_table(old[: -len(TOML_END) - 1])  # the trust table was last there
    assert appended_settings_land_in_our_table(f"{USER_TOML}\n{TOML_BEGIN}\n{toml_server_table(server)}{TOML_END}\n")
    assert not codex.run().changed  # idempotent in the new layout
    codex.run(uninstall=True)
    doc = tomllib.loads(codex.config.read_text())
    assert doc["hooks"]["state"]["/home/me/.codex/hooks.json:user_prompt_submit:0:0"] == {"trusted_hash": "sha256:abcd"}
    assert "intent_loop" not in doc["mcp_servers"]


def test_reinstall_with_another_program_updates_in_place(codex: Codex) -> None:
    codex.run()
    original_backup = (codex.dir / ("config.toml" + BACKUP_SUFFIX)).read_bytes()
    result = install("codex", env={}, home=codex.home, program=("/opt/other/bin/intentloop",))
    assert [c.action for c in result.changes] == ["update", "update"]
    assert (
        tomllib.loads(codex.config.read_text())["mcp_servers"]["intent_loop"]["command"] == "/opt/other/bin/intentloop"
    )
    assert codex.config.read_text().count(TOML_BEGIN) == 1
    hooks = json.loads(codex.hooks.read_text())
    assert [len(cmds) for cmds in _our_hooks(hooks).values()] == [1, 1, 1, 1, 1]
    assert (codex.dir / ("config.toml" + BACKUP_SUFFIX)).read_bytes() == original_backup == USER_TOML.encode()


@pytest.mark.parametrize(
    "config",
    [
        pytest.param('[mcp_servers.intent_loop]\ncommand = "mine"\n', id="foreign-entry"),
        pytest.param("model = \n", id="invalid-toml"),
        pytest.param('mcp_servers = { github = { command = "npx" } }\n', id="inline-table"),
    ],
)
def test_unsafe_configs_are_refused_and_nothing_is_written(codex: Codex, config: str) -> None:
    codex.config.write_text(config)
    before = codex.snapshot()
    with pytest.raises(HostConfigError):
        codex.run()
    assert codex.snapshot() == before


def test_crlf_and_missing_final_newline_are_kept(codex: Codex) -> None:
    user = 'model = "o3"\r\n[tui]\r\nanimations = false'
    codex.config.write_bytes(user.encode())
    codex.run()
    data = codex.config.read_bytes()
    assert data.startswith(b'model = "o3"\r\n' + TOML_BEGIN.encode() + b"\r\nmcp_servers.intent_loop = {")
    assert data.endswith(TOML_END.encode() + b"\r\n\r\n[tui]\r\nanimations = false")
    codex.run(uninstall=True)
    assert codex.config.read_bytes() == user.encode()


def test_codex_home_comes_from_the_environment(tmp_path: Path) -> None:
    home = tmp_path / "custom-codex"
    result = install("codex", env={"CODEX_HOME": str(home)}, home=tmp_path / "h", program=PROGRAM)
    assert {c.path for c in result.changes} == {home / "config.toml", home / "hooks.json"}
    assert result.data_root == tmp_path / "h" / ".local" / "share" / "intentloop" / "v1"


def test_the_original_plugins_data_is_pinned_when_it_is_all_there_is(tmp_path: Path) -> None:
    codex_home = tmp_path / "custom-codex"
    original = codex_home / "plugin-data" / "intent-loop" / "v1"
    (original / "projects").mkdir(parents=True)
    result = install("codex", env={"CODEX_HOME": str(codex_home)}, home=tmp_path / "h", program=PROGRAM)
    assert result.data_root == original
    assert any("original intent-loop plugin" in note for note in result.notes)
    entry = tomllib.loads((codex_home / "config.toml").read_text())["mcp_servers"]["intent_loop"]
    assert entry["env"] == {"INTENT_LOOP_DATA_DIR": str(original)}


def test_both_installers_pin_the_same_root_for_one_user(tmp_path: Path) -> None:
    home = tmp_path / "h"
    codex = install("codex", env={}, home=home, program=PROGRAM)
    claude = install("claude", env={}, home=home, program=PROGRAM)
    assert codex.data_root == claude.data_root == home / ".local" / "share" / "intentloop" / "v1"
    xdg = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    for host in ("codex", "claude"):
        with pytest.raises(HostConfigError) as info:  # the installed entries would move to another memory
            install(host, env=xdg, home=home, program=PROGRAM, dry_run=True)
        assert info.value.code == "INSTALL_ENTRY_EXISTS" and str(tmp_path / "xdg/intentloop/v1") in info.value.message
        moved = install(host, env=xdg, home=home, program=PROGRAM, dry_run=True, replace=True)
        assert moved.data_root == tmp_path / "xdg/intentloop/v1"


def test_installed_hook_commands_run(codex: Codex, tmp_path: Path) -> None:
    program: tuple[str, ...] = PROGRAM if Path(PROGRAM[0]).exists() else (sys.executable, "-P", "-m", "intentloop")
    install("codex", env={}, home=codex.home, program=program)
    repo = tmp_path / "repo"
    repo.mkdir()
    hooks = json.loads(codex.hooks.read_text())["hooks"]
    clean_env = {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": "/usr/bin:/bin",
        "HOME": str(codex.home),
    }  # no data root in the environment
    for event in ("SessionStart", "UserPromptSubmit"):
        command = hooks[event][-1]["hooks"][0]["command"]
        payload = {"session_id": "s-1", "cwd": str(repo), "hook_event_name": event, "prompt": "hi"}
        proc = subprocess.run(
            ["/bin/sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True, env=clean_env
        )
        assert (proc.returncode, proc.stderr) == (0, b"")
        assert json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"] == association_context("s-1")


def test_backups_and_new_files_are_private(tmp_path: Path) -> None:
    codex = Codex(tmp_path)
    codex.config.write_text(USER_TOML)
    os.chmod(codex.config, 0o640)
    codex.run()
    assert os.stat(codex.config).st_mode & 0o777 == 0o640  # the user's mode is kept
    assert os.stat(codex.hooks).st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    "user",
    [
        pytest.param('model = "o3"\n', id="only-top-level-keys"),
        pytest.param(USER_TOML, id="tables"),
        pytest.param(
            'model = "o3"\n\n[mcp_servers]\n\n[mcp_servers.github]\ncommand = "npx"\n', id="mcp_servers-table"
        ),
        pytest.param("", id="empty"),
    ],
)
def test_a_setting_appended_later_never_lands_in_our_entry(tmp_path: Path, user: str) -> None:
    codex = Codex(tmp_path)
    codex.config.write_text(user)
    result = codex.run()
    text = codex.config.read_text()
    assert not appended_settings_land_in_our_table(text)
    assert not any("Warning" in note for note in result.notes)
    doc = tomllib.loads(text + '\nnotify = ["say", "done"]\n')  # what a user appends at the end, later
    assert set(doc["mcp_servers"]["intent_loop"]) == {"command", "args", "env"}
    without_us = tomllib.loads(user + '\nnotify = ["say", "done"]\n')
    del doc["mcp_servers"]["intent_loop"]
    if not doc["mcp_servers"]:
        del doc["mcp_servers"]
    assert doc == without_us  # the appended key belongs exactly where it would without intentloop
    codex.run(uninstall=True)
    assert (codex.config.read_text() if codex.config.exists() else "") == user


def _codex_trusts(codex: Codex, positions: list[tuple[str, int]]) -> str:
    """Trust tables as Codex 0.171 appended them to a config without any (tools/e2e): an empty [hooks.state], then
    one table per hook."""
    out = "\n[hooks.state]\n"
    for event, group in positions:
        out += f'\n[hooks.state."{codex.hooks}:{event}:{group}:0"]\ntrusted_hash = "sha256:{event}"\n'
    return out


def test_uninstall_removes_the_trust_records_codex_wrote_for_our_hooks_and_the_backups(codex: Codex) -> None:
    original = codex.snapshot()
    codex.run()
    ours = [("session_start", 1), ("user_prompt_submit", 0), ("post_compact", 0), ("stop", 0), ("session_end", 0)]
    theirs = [("session_start", 0), ("pre_tool_use", 0)]  # the user's own hooks, trusted too
    with codex.config.open("a") as fh:
        fh.write(_codex_trusts(codex, ours + theirs))
    result = codex.run(uninstall=True)
    assert [c.action for c in result.changes] == ["update", "restore"]
    doc = tomllib.loads(codex.config.read_text())
    assert sorted(doc["hooks"]["state"]) == sorted(
        [f"{codex.hooks}:{e}:{g}:0" for e, g in theirs] + ["/home/me/.codex/hooks.json:session_start:0:0"]
    )
    assert "intent_loop" not in doc["mcp_servers"]
    assert codex.config.read_text().startswith(original["config.toml"].decode())  # the user's bytes, then theirs
    assert not list(codex.dir.glob("*" + BACKUP_SUFFIX))  # nothing needs the backups any more
    assert "backup no longer needed" in result.render()


def test_uninstall_restores_the_original_when_codex_trusted_only_our_hooks(codex: Codex) -> None:
    original = codex.snapshot()
    codex.run()
    with codex.config.open("a") as fh:
        fh.write(_codex_trusts(codex, [("session_start", 1), ("stop", 0)]))
    result = codex.run(uninstall=True)
    assert [c.action for c in result.changes] == ["restore", "restore"]
    assert codex.snapshot() == original


def test_a_refused_uninstall_names_the_lines_and_what_to_do(codex: Codex) -> None:
    codex.run()
    text = codex.config.read_text()
    codex.config.write_text(text.replace(TOML_END + "\n", ""))  # the end marker was deleted by hand
    before = codex.snapshot()
    with pytest.raises(HostConfigError) as info:
        codex.run(uninstall=True)
    begin = text.splitlines().index(TOML_BEGIN) + 1
    assert f"line {begin} opens intentloop's block" in info.value.message and TOML_END in info.value.message
    assert codex.snapshot() == before
    codex.config.write_text(text.replace(TOML_BEGIN + "\n", "").replace(TOML_END + "\n", ""))  # markers gone
    with pytest.raises(HostConfigError) as info:
        codex.run(uninstall=True)
    assert f"(line {begin})" in info.value.message and "Delete that entry by hand" in info.value.message
    foreign = text.replace(TOML_END, 'model_reasoning_effort = "high"\n' + TOML_END)  # a user line inside the block
    codex.config.write_text(foreign)
    codex.run(uninstall=True)  # a top-level key stays where it was: not a refusal
    assert tomllib.loads(codex.config.read_text())["model_reasoning_effort"] == "high"
    codex.config.write_text(text)  # positive control: the intact block uninstalls
    assert codex.run(uninstall=True).changed


def test_json_keeps_the_users_layout(codex: Codex) -> None:
    codex.run()
    text = codex.hooks.read_text()
    assert text.startswith('{\n    "hooks": {\n        "SessionStart": [')  # four spaces, as the user wrote it
    assert not text.endswith("\n")  # json.dumps(indent=4) wrote no final newline: none is added
    codex.hooks.write_text(json.dumps(USER_HOOKS, indent="\t").replace("\n", "\r\n") + "\r\n")
    codex.run()
    assert codex.hooks.read_bytes().startswith(b'{\r\n\t"hooks": {\r\n\t\t"SessionStart"')
    assert codex.hooks.read_bytes().endswith(b"}\r\n")
