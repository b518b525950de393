"""The plugin wiring shipped in the repository: manifest, MCP registration, hooks.json, and their agreement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import intentloop
from intentloop.cli._install_edit import HOOK_ARGS
from intentloop.cli.install import hook_groups
from intentloop.hooks._payload import FORCED_EVENTS
from intentloop.store import ROOT_ENV_VARS
from intentloop.store.catalog import CATALOG_ENV_VARS

REPO = Path(__file__).resolve().parents[2]
EVENTS = ["SessionStart", "UserPromptSubmit", "PostCompact", "Stop", "SessionEnd"]
# SessionEnd has none: Claude Code's reasons (clear, resume, logout, prompt_input_exit, other, ...) all end a session,
# and a matcher "other" missed every ordinary exit.
MATCHERS = {"SessionStart": "startup|resume|clear|compact", "PostCompact": "manual|auto"}


def _json(path: str) -> Any:
    return json.loads((REPO / path).read_text(encoding="utf-8"))


def test_codex_plugin_manifest() -> None:
    manifest = _json(".codex-plugin/plugin.json")
    assert manifest["name"] == "intent-loop"
    assert manifest["version"] == intentloop.__version__
    assert manifest["description"].strip()
    for key in ("skills", "mcpServers", "hooks"):
        assert manifest[key].startswith("./"), key
        assert (REPO / manifest[key]).exists(), key
    assert (manifest["mcpServers"], manifest["hooks"]) == ("./.mcp.json", "./hooks/hooks.json")
    skill = (REPO / manifest["skills"] / "intent" / "SKILL.md").read_text(encoding="utf-8")
    assert skill.startswith("---\n") and "\nname: intent\n" in skill
    interface = manifest["interface"]
    for key in ("displayName", "shortDescription", "longDescription", "developerName", "category"):
        assert isinstance(interface[key], str) and interface[key].strip(), key
    assert all(isinstance(c, str) for c in interface["capabilities"])
    assert [p for p in os.listdir(REPO / ".codex-plugin")] == ["plugin.json"]  # the folder holds only the manifest


def test_the_repository_is_a_codex_marketplace_of_its_own_plugin() -> None:
    """``codex plugin marketplace add <clone>`` reads ``.agents/plugins/marketplace.json``; its one plugin is the
    repository's root, whose ``.codex-plugin/plugin.json`` names the same plugin (``codex plugin add
    intent-loop@intentloop``). tools/e2e runs both commands with the real Codex CLI."""
    market = _json(".agents/plugins/marketplace.json")
    assert market["name"] == "intentloop"
    [plugin] = market["plugins"]
    assert plugin["source"] == {"source": "local", "path": "./"}
    root = (REPO / plugin["source"]["path"]).resolve()
    assert root == REPO.resolve()
    assert plugin["name"] == json.loads((root / ".codex-plugin" / "plugin.json").read_text(encoding="utf-8"))["name"]
    assert os.listdir(REPO / ".agents") == ["plugins"] and os.listdir(REPO / ".agents" / "plugins") == [
        "marketplace.json"
    ]


def test_claude_code_plugin_manifest_matches_the_codex_one() -> None:
    """``claude --plugin-dir <repo>`` loads the same .mcp.json and hooks/hooks.json (Claude Code's default paths)."""
    claude, codex = _json(".claude-plugin/plugin.json"), _json(".codex-plugin/plugin.json")
    assert claude["name"] == codex["name"] == "intent-loop"
    assert claude["version"] == intentloop.__version__ and claude["description"] == codex["description"]
    assert os.listdir(REPO / ".claude-plugin") == ["plugin.json"]


def test_mcp_json_registers_intent_loop() -> None:
    entry = {"command": "intentloop", "args": ["serve"], "env_vars": [*ROOT_ENV_VARS, *CATALOG_ENV_VARS]}
    assert _json(".mcp.json") == {"mcpServers": {"intent_loop": entry}}


def test_hooks_json_shape() -> None:
    doc = _json("hooks/hooks.json")
    assert set(doc) == {"description", "hooks"}
    assert list(doc["hooks"]) == EVENTS
    for event, groups in doc["hooks"].items():
        assert len(groups) == 1
        [group] = groups
        assert group.get("matcher") == MATCHERS.get(event)
        assert set(group) == ({"matcher", "hooks"} if event in MATCHERS else {"hooks"})
        [handler] = group["hooks"]
        expected = {"type": "command", "command": f"intentloop hook {HOOK_ARGS[event]}", "timeout": 3}
        if event == "SessionStart":
            expected["statusMessage"] = "Loading compact intent context"
        assert handler == expected


def test_event_tables_agree() -> None:
    assert {v: k for k, v in FORCED_EVENTS.items() if k in HOOK_ARGS.values()} == HOOK_ARGS
    doc = _json("hooks/hooks.json")["hooks"]
    installed = hook_groups(("/opt/bin/intentloop",), Path("/data"))
    for event in EVENTS:
        plugin_group = doc[event][0]
        ours = installed[event]
        assert {k: v for k, v in ours.items() if k != "hooks"} == {
            k: v for k, v in plugin_group.items() if k != "hooks"
        }
        strip = lambda h: {k: v for k, v in h.items() if k != "command"}  # noqa: E731
        assert strip(ours["hooks"][0]) == strip(plugin_group["hooks"][0])


def _intentloop_on_path(tmp_path: Path) -> Path:
    """A folder holding an ``intentloop`` to put on PATH: the console script's, or a shim running the module."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "intentloop").exists():
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "intentloop"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -P -m intentloop "$@"\n')
        shim.chmod(0o755)
    return bin_dir


def test_plugin_hook_commands_run_through_a_shell(tmp_path: Path) -> None:
    bin_dir = _intentloop_on_path(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"),
    }
    for event, groups in _json("hooks/hooks.json")["hooks"].items():
        payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": event}
        proc = subprocess.run(
            ["/bin/sh", "-c", groups[0]["hooks"][0]["command"]],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
        )
        assert (proc.returncode, proc.stderr) == (0, b"")
        answer = json.loads(proc.stdout)
        assert answer["continue"] is True
        assert ("hookSpecificOutput" in answer) == (event in ("SessionStart", "UserPromptSubmit"))


def test_the_plugin_hooks_json_is_the_hook_event_table() -> None:
    from intentloop.model.hook_events import HOOK_EVENTS, HOOK_TIMEOUT_S

    doc = _json("hooks/hooks.json")["hooks"]
    assert list(doc) == [event.name for event in HOOK_EVENTS]
    for event in HOOK_EVENTS:
        [group] = doc[event.name]
        assert group.get("matcher") == event.matcher
        [handler] = group["hooks"]
        assert handler["command"] == f"intentloop hook {event.argument}"
        assert handler["timeout"] == HOOK_TIMEOUT_S
        assert handler.get("statusMessage") == event.status_message


def test_every_observed_event_is_a_hook_event() -> None:
    from intentloop.model.hook_events import HOOK_EVENT_NAMES, HOOK_EVENTS

    observed = {event.name for event in HOOK_EVENTS if event.records is not None}
    assert observed and observed <= HOOK_EVENT_NAMES
    assert HOOK_EVENT_NAMES - observed == {"SessionStart"}  # the one event that only reads


def test_gemini_extension_manifest_and_hooks_are_the_installers_wiring() -> None:
    """``gemini-extension/``: the server from PATH, and the hooks the installer writes without ``--data-dir`` (the
    user's environment names the data root, as in the plugin routes)."""
    from intentloop.cli._install_gemini import gemini_hook_groups

    manifest = _json("gemini-extension/gemini-extension.json")
    assert manifest["name"] == "intent-loop" and manifest["version"] == intentloop.__version__
    assert manifest["mcpServers"] == {"intent_loop": {"command": "intentloop", "args": ["serve"]}}
    groups = gemini_hook_groups(("intentloop",), Path("/data"))
    for group in groups.values():
        for handler in group["hooks"]:
            handler["command"] = handler["command"].removesuffix(" --data-dir /data")
    assert _json("gemini-extension/hooks/hooks.json") == {"hooks": {event: [g] for event, g in groups.items()}}


def test_gemini_extension_hook_commands_run_through_a_shell(tmp_path: Path) -> None:
    bin_dir = _intentloop_on_path(tmp_path)
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "INTENT_LOOP_CATALOG": "off",
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "HOME": str(tmp_path),
    }
    for event, groups in _json("gemini-extension/hooks/hooks.json")["hooks"].items():
        payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": event, "prompt": "p", "prompt_response": "r"}
        proc = subprocess.run(
            ["/bin/sh", "-c", groups[0]["hooks"][0]["command"]],
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=env,
        )
        assert (proc.returncode, proc.stderr) == (0, b"")
        answer = json.loads(proc.stdout)
        assert answer["continue"] is True
        spec = answer.get("hookSpecificOutput")
        assert (spec or {}).get("hookEventName") == (event if event in ("SessionStart", "BeforeAgent") else None)
