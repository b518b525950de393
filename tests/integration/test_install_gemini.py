"""``intentloop install gemini`` as a real process against a temporary Gemini CLI folder holding the user's settings:
the server and four hooks in one ``settings.json``, dry run, idempotence, the exact uninstall, foreign entries refused,
and the installed hook commands run as Gemini would run them (a shell, Gemini's payloads)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import association_context

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
BACKUP = ".intentloop.bak"
SESSION = "5b7c0f3e-2a41-4c55-9d0e-7f1a2b3c4d5e"
USER_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "general": {"vimMode": True},
    "mcpServers": {"github": {"command": "github-mcp", "args": ["stdio"], "trust": False}},
    "hooks": {
        "BeforeTool": [
            {"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh", "timeout": 500}]}
        ],
        "SessionStart": [{"hooks": [{"type": "command", "name": "hello", "command": "echo '{}'"}]}],
    },
}
EVENTS = ["SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"]
ARGUMENTS = {"SessionStart": "session-start", "BeforeAgent": "before-agent", "AfterAgent": "after-agent"}
ARGUMENTS["SessionEnd"] = "session-end"


class Gemini:
    """A user's home with a Gemini CLI folder, and the installer run as a process in it."""

    def __init__(self, tmp: Path, base: Path | None = None) -> None:
        self.home = tmp / "home"
        self.home.mkdir()
        self.base = base or self.home  # $GEMINI_CLI_HOME, when it is set
        self.dir = self.base / ".gemini"
        self.settings = self.dir / "settings.json"
        self.root = self.home / ".local" / "share" / "intentloop" / "v1"  # the per-user default root

    def environ(self) -> dict[str, str]:
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        if self.base != self.home:
            env["GEMINI_CLI_HOME"] = str(self.base)
        return env

    def install(self, *flags: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run(
            [*INTENTLOOP, "install", "gemini", *flags, "--json"],
            capture_output=True,
            text=True,
            env=self.environ(),
            timeout=60,
        )
        body: dict[str, Any] = json.loads(done.stdout)
        return done.returncode, body

    def files(self) -> dict[str, bytes]:
        if not self.dir.exists():
            return {}
        return {str(p.relative_to(self.dir)): p.read_bytes() for p in sorted(self.dir.rglob("*")) if p.is_file()}

    def doc(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.settings.read_text(encoding="utf-8"))
        return value


@pytest.fixture
def gemini(tmp_path: Path) -> Gemini:
    g = Gemini(tmp_path)
    g.dir.mkdir()
    g.settings.write_text(json.dumps(USER_SETTINGS, indent=2) + "\n", encoding="utf-8")
    return g


def _ours(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        event: [h for g in groups for h in g["hooks"] if " hook " in h["command"]]
        for event, groups in doc.get("hooks", {}).items()
        if any(" hook " in h["command"] for g in groups for h in g["hooks"])
    }


def test_install_adds_the_server_and_four_hooks_and_keeps_the_users_settings(gemini: Gemini) -> None:
    original = gemini.settings.read_bytes()
    code, body = gemini.install()
    assert code == 0, body
    assert [(c["path"], c["action"]) for c in body["changes"]] == [(str(gemini.settings), "update")]
    doc = gemini.doc()
    assert doc["security"] == USER_SETTINGS["security"] and doc["general"] == USER_SETTINGS["general"]
    assert doc["mcpServers"]["github"] == USER_SETTINGS["mcpServers"]["github"]
    assert doc["hooks"]["BeforeTool"] == USER_SETTINGS["hooks"]["BeforeTool"]
    assert doc["hooks"]["SessionStart"][0] == USER_SETTINGS["hooks"]["SessionStart"][0]  # the user's group first
    ours = _ours(doc)
    assert list(ours) == EVENTS  # no PreCompress: Gemini fires it on every compression check
    for event, argument in ARGUMENTS.items():
        assert ours[event] == [
            {
                "type": "command",
                "name": f"intentloop {argument}",
                "command": shlex.join([*INTENTLOOP, "hook", argument, "--data-dir", str(gemini.root)]),
                "timeout": 3000,  # milliseconds in Gemini
            }
        ]
    assert doc["mcpServers"]["intent_loop"] == {
        "command": INTENTLOOP[0],
        "args": [*INTENTLOOP[1:], "serve"],
        "env": {"INTENT_LOOP_DATA_DIR": str(gemini.root)},
    }
    assert (gemini.dir / ("settings.json" + BACKUP)).read_bytes() == original
    assert any("four intentloop hooks" in note for note in body["notes"])


def test_second_install_changes_nothing_and_uninstall_restores_the_bytes(gemini: Gemini) -> None:
    before = gemini.files()
    assert gemini.install()[0] == 0
    installed = gemini.files()
    code, body = gemini.install()
    assert code == 0 and body["changed"] is False and gemini.files() == installed
    code, body = gemini.install("--uninstall")
    assert code == 0 and [c["action"] for c in body["changes"]] == ["restore"]
    assert gemini.files() == before  # the backup is gone too


def test_dry_run_writes_nothing_and_shows_the_diff(gemini: Gemini) -> None:
    before = gemini.files()
    code, body = gemini.install("--dry-run")
    assert code == 0 and body["changed"] is True and gemini.files() == before
    [change] = body["changes"]
    assert '+    "intent_loop": {' in change["diff"] and "before-agent" in change["diff"]
    assert gemini.install()[0] == 0
    installed = gemini.files()
    code, body = gemini.install("--uninstall", "--dry-run")
    assert code == 0 and body["changes"][0]["action"] == "restore" and gemini.files() == installed


def test_without_settings_install_creates_and_uninstall_deletes(tmp_path: Path) -> None:
    g = Gemini(tmp_path)
    code, body = g.install()
    assert code == 0 and body["changes"][0]["action"] == "create"
    assert set(g.doc()) == {"hooks", "mcpServers"}
    code, body = g.install("--uninstall")
    assert code == 0 and body["changes"][0]["action"] == "delete" and g.files() == {}


def test_gemini_cli_home_is_honoured(tmp_path: Path) -> None:
    g = Gemini(tmp_path, base=tmp_path / "gemini-home")
    code, _body = g.install()
    assert code == 0 and g.settings.is_file()
    assert not (g.home / ".gemini").exists()
    assert g.doc()["mcpServers"]["intent_loop"]["env"] == {"INTENT_LOOP_DATA_DIR": str(g.root)}  # root by HOME


def test_uninstall_after_gemini_rewrote_the_file_removes_only_ours(gemini: Gemini) -> None:
    assert gemini.install()[0] == 0
    doc = gemini.doc()
    doc["general"]["vimMode"] = False  # the user changed a setting in /settings since
    doc["hooksConfig"] = {"disabled": ["hello"]}
    gemini.settings.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    code, body = gemini.install("--uninstall")
    assert code == 0 and body["changes"][0]["action"] == "update"
    after = gemini.doc()
    assert after["general"] == {"vimMode": False} and after["hooksConfig"] == {"disabled": ["hello"]}
    assert after["mcpServers"] == USER_SETTINGS["mcpServers"] and after["hooks"] == USER_SETTINGS["hooks"]
    assert not list(gemini.dir.glob("*" + BACKUP))


FOREIGN = {
    # `gemini mcp add intent_loop intentloop serve`, the user's own memory
    "server": ("mcpServers", {"intent_loop": {"command": "intentloop", "args": ["serve"]}}),
    # the extension's hook copied into the user's settings
    "hook": ("hooks", {"BeforeAgent": [{"hooks": [{"type": "command", "command": "intentloop hook before-agent"}]}]}),
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_foreign_entry_is_refused_replaced_on_request_and_given_back(gemini: Gemini, kind: str) -> None:
    key, value = FOREIGN[kind]
    doc = json.loads(json.dumps(USER_SETTINGS))
    doc[key].update(value)
    gemini.settings.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    original, before = gemini.settings.read_bytes(), gemini.files()
    code, body = gemini.install()
    assert code == 2 and body["error"]["code"] == "INSTALL_ENTRY_EXISTS"
    assert str(gemini.settings) in body["error"]["message"] and "--replace" in body["error"]["message"]
    assert gemini.files() == before  # nothing written
    code, body = gemini.install("--uninstall")  # nothing of intentloop's installer there: the entry stays
    assert code == 0 and gemini.files() == before
    code, body = gemini.install("--replace")
    assert code == 0, body
    assert (gemini.dir / ("settings.json" + BACKUP)).read_bytes() == original
    replaced = gemini.doc()
    assert replaced["mcpServers"]["intent_loop"]["env"] == {"INTENT_LOOP_DATA_DIR": str(gemini.root)}
    [hook] = _ours(replaced)["BeforeAgent"]  # the foreign hook made way: one intentloop hook per event
    assert hook["command"].endswith(f"--data-dir {gemini.root}")
    code, body = gemini.install("--uninstall")
    assert code == 0 and gemini.settings.read_bytes() == original and gemini.files() == before


def test_another_installs_entries_for_the_same_root_are_not_foreign(gemini: Gemini) -> None:
    """The positive control of the refusal: intentloop's own entries for this data root are updated in place."""
    assert gemini.install()[0] == 0
    doc = gemini.doc()
    doc["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"] = 60000  # an older install's timeout
    gemini.settings.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    code, body = gemini.install()
    assert code == 0 and body["changed"] is True
    assert _ours(gemini.doc())["AfterAgent"][0]["timeout"] == 3000


def _run_hook(command: str, payload: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Run an installed hook command as Gemini does: through a shell, the payload on stdin, the project as cwd."""
    done = subprocess.run(
        ["bash", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=env,
        cwd=payload["cwd"],
        timeout=30,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout.count(b"\n") == 1 and done.stdout.endswith(b"\n")
    answer: dict[str, Any] = json.loads(done.stdout)
    assert answer["continue"] is True
    return answer


def test_installed_hook_commands_answer_gemini_payloads(gemini: Gemini, tmp_path: Path) -> None:
    assert gemini.install()[0] == 0
    project = tmp_path / "project"
    project.mkdir()
    commands = {event: hooks[0]["command"] for event, hooks in _ours(gemini.doc()).items()}
    base = {"session_id": SESSION, "cwd": str(project), "transcript_path": str(tmp_path / "t.json")}
    env = {**gemini.environ(), "GEMINI_PROJECT_DIR": str(project), "GEMINI_SESSION_ID": SESSION}
    start = _run_hook(commands["SessionStart"], {**base, "hook_event_name": "SessionStart", "source": "startup"}, env)
    assert start["hookSpecificOutput"] == {
        "hookEventName": "SessionStart",
        "additionalContext": association_context(SESSION),
    }
    prompt = f"<hook_context>{association_context(SESSION)}</hook_context>\n\n/intent remember Ship on Tuesdays."
    answer = _run_hook(commands["BeforeAgent"], {**base, "hook_event_name": "BeforeAgent", "prompt": prompt}, env)
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "[Intent Loop receipt IL-" in answer["hookSpecificOutput"]["additionalContext"]
    ledger = next(gemini.root.glob("projects/*/ledger.jsonl")).read_text(encoding="utf-8")  # the pinned root
    assert "Ship on Tuesdays." in ledger
    for event, extra in (("AfterAgent", {"prompt": prompt, "prompt_response": "Noted."}), ("SessionEnd", {})):
        answer = _run_hook(commands[event], {**base, "hook_event_name": event, "reason": "exit", **extra}, env)
        assert answer == {"continue": True, "suppressOutput": True}
