"""Entries that were there before the installer: never taken over without a word, never removed by an uninstall.

Seen as a user: an ``mcpServers.intent_loop`` made with ``claude mcp add`` (or pointing at the user's own
``INTENT_LOOP_DATA_DIR``) was rewritten to another data root, backed up as ``{}`` and deleted by ``--uninstall``; a
Codex ``hooks.json`` holding the plugin's five hooks lost all five after install and uninstall. Every step here runs the
real ``intentloop install`` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
PLUGIN_HOOKS = (Path(__file__).parents[2] / "hooks" / "hooks.json").read_bytes()  # the plugin's own five hooks
BACKUP = ".intentloop.bak"


class Home:
    """A user's home folder with Claude Code's and Codex's files, and the installer run as a process in it."""

    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.home.mkdir()
        self.state = self.home / ".claude.json"
        self.codex = self.home / ".codex"
        self.root = self.home / ".local" / "share" / "intentloop" / "v1"  # the per-user default root

    def install(self, host: str, *flags: str) -> tuple[int, dict[str, Any]]:
        env = {"INTENT_LOOP_CATALOG": "off", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)}
        done = subprocess.run(
            [*INTENTLOOP, "install", host, *flags, "--json"], capture_output=True, text=True, env=env, timeout=60
        )
        body: dict[str, Any] = json.loads(done.stdout)
        return done.returncode, body

    def files(self) -> dict[str, bytes]:
        return {
            str(p.relative_to(self.home)): p.read_bytes()
            for p in sorted(self.home.rglob("*"))
            if p.is_file() and ".local" not in p.parts
        }


@pytest.fixture
def user(tmp_path: Path) -> Home:
    return Home(tmp_path)


def _state_with(entry: dict[str, Any]) -> bytes:
    return json.dumps({"numStartups": 7, "mcpServers": {"intent_loop": entry}, "theme": "dark"}).encode()


OWN_ENTRIES = {
    # `claude mcp add intent_loop -- intentloop serve`
    "claude-mcp-add": {"type": "stdio", "command": "intentloop", "args": ["serve"], "env": {}},
    # the same with the user's own memory: `claude mcp add -e INTENT_LOOP_DATA_DIR=... -- <abs program> serve`
    "own-data-dir": {"type": "stdio", "command": INTENTLOOP[0], "args": [*INTENTLOOP[1:], "serve"], "env": {}},
}


@pytest.mark.parametrize("kind", sorted(OWN_ENTRIES))
def test_a_users_own_claude_server_entry_is_refused_by_name_and_survives_uninstall(user: Home, kind: str) -> None:
    entry = json.loads(json.dumps(OWN_ENTRIES[kind]))
    if kind == "own-data-dir":
        entry["env"] = {"INTENT_LOOP_DATA_DIR": str(user.home / "my-memory")}
    original = _state_with(entry)
    user.state.write_bytes(original)
    before = user.files()
    code, body = user.install("claude")
    assert code == 2 and body["error"]["code"] == "INSTALL_ENTRY_EXISTS"
    message = body["error"]["message"]
    assert str(user.state) in message and "mcpServers.intent_loop" in message and "--replace" in message
    assert entry["command"] in message
    if kind == "own-data-dir":
        assert str(user.home / "my-memory") in message  # where the user's memory is
    assert user.files() == before  # nothing written, not even the hooks
    # an uninstall finds nothing of intentloop's there: the user's entry stays
    code, body = user.install("claude", "--uninstall")
    assert code == 0 and user.state.read_bytes() == original and user.files() == before
    assert any(str(user.state) in note and "mcpServers.intent_loop" in note for note in body["notes"])  # named
    # explicitly replaced: the backup holds the file's real earlier bytes, and an uninstall brings the entry back
    code, body = user.install("claude", "--replace")
    assert code == 0, body
    installed = json.loads(user.state.read_bytes())["mcpServers"]["intent_loop"]
    assert installed["env"] == {"INTENT_LOOP_DATA_DIR": str(user.root)}
    assert (user.home / (".claude.json" + BACKUP)).read_bytes() == original
    code, body = user.install("claude", "--uninstall")
    assert code == 0 and user.state.read_bytes() == original
    assert not list(user.home.glob("*" + BACKUP)) and not (user.home / ".claude" / "settings.json").exists()


def test_a_users_entry_changed_after_replace_comes_back_on_uninstall(user: Home) -> None:
    """The file changed since the install (Claude Code rewrites it): uninstall cannot restore the bytes, so it puts
    the user's own entry back in place of intentloop's and keeps everything else."""
    entry = OWN_ENTRIES["claude-mcp-add"]
    user.state.write_bytes(_state_with(entry))
    assert user.install("claude", "--replace")[0] == 0
    doc = json.loads(user.state.read_bytes())
    doc["numStartups"] = 8
    user.state.write_text(json.dumps(doc, indent=2))
    code, _body = user.install("claude", "--uninstall")
    assert code == 0
    left = json.loads(user.state.read_bytes())
    assert left["mcpServers"]["intent_loop"] == entry and left["numStartups"] == 8


def test_an_earlier_installers_claude_entry_is_upgraded_in_place_but_never_moved_to_another_root(user: Home) -> None:
    earlier = {
        "type": "stdio",
        "command": "/opt/old-venv/bin/intentloop",
        "args": ["serve"],
        "env": {"INTENT_LOOP_DATA_DIR": str(user.root)},
    }
    user.state.write_bytes(_state_with(earlier))
    code, body = user.install("claude")
    assert code == 0, body
    assert json.loads(user.state.read_bytes())["mcpServers"]["intent_loop"]["command"] == INTENTLOOP[0]
    assert user.install("claude", "--uninstall")[0] == 0
    assert "intent_loop" not in json.loads(user.state.read_bytes()).get("mcpServers", {})
    # the same entry pointing at another data root: installing would move the user's memory, so it is refused
    moved = {**earlier, "env": {"INTENT_LOOP_DATA_DIR": str(user.home / "elsewhere")}}
    user.state.write_bytes(_state_with(moved))
    code, body = user.install("claude")
    assert code == 2 and body["error"]["code"] == "INSTALL_ENTRY_EXISTS"
    assert str(user.home / "elsewhere") in body["error"]["message"] and str(user.root) in body["error"]["message"]
    assert user.state.read_bytes() == _state_with(moved)


def test_codex_hooks_json_holding_the_plugins_hooks_is_refused_and_kept(user: Home) -> None:
    user.codex.mkdir()
    hooks = user.codex / "hooks.json"
    hooks.write_bytes(PLUGIN_HOOKS)
    before = user.files()
    code, body = user.install("codex")
    assert code == 2 and body["error"]["code"] == "INSTALL_ENTRY_EXISTS"
    message = body["error"]["message"]
    assert str(hooks) in message and "intentloop hook session-start" in message and "--replace" in message
    assert user.files() == before
    code, body = user.install("codex", "--uninstall")
    assert code == 0 and hooks.read_bytes() == PLUGIN_HOOKS  # all five stay
    (note,) = [n for n in body["notes"] if n.startswith("Left in")]
    assert note.count("intentloop hook ") == 5
    code, body = user.install("codex", "--replace")
    assert code == 0, body
    commands = [h["command"] for g in json.loads(hooks.read_bytes())["hooks"].values() for x in g for h in x["hooks"]]
    assert len(commands) == 5 and all(c.startswith(INTENTLOOP[0]) and "--data-dir" in c for c in commands)
    assert (user.codex / ("hooks.json" + BACKUP)).read_bytes() == PLUGIN_HOOKS
    assert user.install("codex", "--uninstall")[0] == 0
    assert hooks.read_bytes() == PLUGIN_HOOKS and not (user.codex / "config.toml").exists()
    # replaced, then the file changed: the plugin's five come back beside the later change
    assert user.install("codex", "--replace")[0] == 0
    doc = json.loads(hooks.read_bytes())
    doc["hooks"]["PreToolUse"] = [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]
    hooks.write_text(json.dumps(doc, indent=2))
    assert user.install("codex", "--uninstall")[0] == 0
    left = json.loads(hooks.read_bytes())
    plugin = json.loads(PLUGIN_HOOKS)["hooks"]
    assert {event: groups for event, groups in left["hooks"].items() if event != "PreToolUse"} == plugin
    assert left["hooks"]["PreToolUse"] == doc["hooks"]["PreToolUse"]


def test_codex_hooks_json_from_an_earlier_install_is_upgraded_and_removed(user: Home) -> None:
    """Positive control: hooks an intentloop installer wrote (absolute program, ``--data-dir``) are intentloop's."""
    assert user.install("codex")[0] == 0
    hooks = user.codex / "hooks.json"
    earlier = hooks.read_text().replace(INTENTLOOP[0], "/opt/old-venv/bin/intentloop")
    hooks.write_text(earlier)
    (user.codex / "config.toml").unlink()
    code, body = user.install("codex")
    assert code == 0, body
    assert "/opt/old-venv" not in hooks.read_text()
    assert user.install("codex", "--uninstall")[0] == 0
    assert not hooks.exists() or "intentloop" not in hooks.read_text()


def test_a_users_own_intent_skill_is_refused_by_name_and_comes_back_after_replace(user: Home) -> None:
    """Claude Code's ``/intent`` may already be the user's own skill: the process exits 2 with INSTALL_ENTRY_EXISTS
    naming the file, writes nothing, and only ``--replace`` installs intentloop's (the backup keeps the user's)."""
    skill = user.home / ".claude" / "skills" / "intent" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    mine = b"---\nname: intent\ndescription: my own\n---\nmine\n"
    skill.write_bytes(mine)
    before = user.files()
    code, body = user.install("claude")
    assert code == 2 and body["error"]["code"] == "INSTALL_ENTRY_EXISTS"
    assert str(skill) in body["error"]["message"] and "--replace" in body["error"]["message"]
    assert user.files() == before
    code, body = user.install("claude", "--replace")
    assert code == 0 and skill.read_bytes() != mine
    assert skill.with_name("SKILL.md" + BACKUP).read_bytes() == mine
    code, body = user.install("claude", "--uninstall")
    assert code == 0 and user.files() == before
