"""Hooks never fail silently for a reason the user can fix: a one-line problem log that ``intentloop status`` shows,
while the hook's stdout stays exactly the fail-open line the host requires."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.errors import CODES, StorageError
from intentloop.hooks._problems import FIXABLE_CODES, LOG_NAME, MAX_LOG_BYTES, last_problem, record_problem

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-P", "-m", "intentloop"]
FAIL_OPEN = b'{"continue":true,"suppressOutput":true}\n'
SECRET = "my-prompt-text-that-must-never-be-logged"


class World:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.repo = tmp / "repo"
        self.repo.mkdir()
        self.data = tmp / "data"

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
        }
        env["INTENT_LOOP_DATA_DIR"] = str(self.data)
        env.update(extra)
        return {k: v for k, v in env.items() if v != ""}

    def hook(self, *args: str, env: dict[str, str], event: str = "UserPromptSubmit") -> bytes:
        payload = {"session_id": "s-1", "cwd": str(self.repo), "hook_event_name": event, "prompt": SECRET}
        done = subprocess.run(
            [*INTENTLOOP, "hook", *args], input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=60
        )
        assert (done.returncode, done.stderr) == (0, b"")
        return done.stdout

    def status(self, env: dict[str, str]) -> tuple[int, dict[str, Any], str]:
        js = subprocess.run([*INTENTLOOP, "status", "--json"], capture_output=True, text=True, env=env, timeout=60)
        human = subprocess.run([*INTENTLOOP, "status"], capture_output=True, text=True, env=env, timeout=60)
        return js.returncode, json.loads(js.stdout), human.stdout + human.stderr


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_fixable_codes_are_stable_codes() -> None:
    assert set(CODES) >= FIXABLE_CODES


def test_an_unreadable_ledger_is_logged_under_the_data_root_and_shown_by_status(world: World) -> None:
    env = world.env()
    assert world.hook("user-prompt", env=env) != FAIL_OPEN  # positive control: a healthy hook answers with context
    assert not (world.data / LOG_NAME).exists()  # and logs nothing
    project = next((world.data / "projects").iterdir()) if (world.data / "projects").exists() else None
    if project is None:  # an unlinked session writes nothing: make the ledger exist, then damage it
        from intentloop.model import project_id_for

        project = world.data / "projects" / project_id_for(os.path.realpath(world.repo))
        project.mkdir(parents=True, mode=0o700)
    (project / "ledger.jsonl").write_bytes(b"this is not a ledger line\n")
    os.chmod(project / "ledger.jsonl", 0o600)
    for event_arg, event in (("session-start", "SessionStart"), ("user-prompt", "UserPromptSubmit")):
        assert world.hook(event_arg, env=env, event=event) == FAIL_OPEN  # stdout: exactly the fail-open line
    lines = _lines(world.data / LOG_NAME)
    assert [(r["event"], r["code"]) for r in lines] == [
        ("session-start", "CORRUPT_LEDGER"),
        ("user-prompt", "CORRUPT_LEDGER"),
    ]
    assert lines[0]["data_root"] == str(world.data)
    assert SECRET not in (world.data / LOG_NAME).read_text() and os.stat(world.data / LOG_NAME).st_mode & 0o777 == 0o600
    code, body, human = world.status(env)
    assert code == 0 and body["last_hook_problem"]["code"] == "CORRUPT_LEDGER"
    assert "recover" in body["last_hook_problem"]["remedy"]
    assert body["last_hook_problem"]["log"] == str(world.data / LOG_NAME)
    assert "last hook problem" in human and "CORRUPT_LEDGER" in human


def test_no_data_root_is_logged_in_the_state_directory(world: World) -> None:
    state = world.tmp / "state"
    env = world.env(INTENT_LOOP_DATA_DIR="", HOME="", XDG_STATE_HOME=str(state))
    assert world.hook("session-start", env=env, event="SessionStart") == FAIL_OPEN
    [line] = _lines(state / "intentloop" / LOG_NAME)
    assert line["code"] == "DATA_DIR_REQUIRED" and line["data_root"] is None
    assert os.stat(state / "intentloop").st_mode & 0o777 == 0o700
    code, body, human = world.status(env)
    assert code == 3 and body["error"]["code"] == "DATA_DIR_REQUIRED"
    assert body["last_hook_problem"]["code"] == "DATA_DIR_REQUIRED" and "HOME" in body["last_hook_problem"]["remedy"]
    assert "last hook problem" in human


def test_a_data_root_that_is_a_file_is_logged_in_the_state_directory(world: World) -> None:
    world.data.write_text("not a directory")
    env = world.env()
    assert world.hook("user-prompt", env=env) == FAIL_OPEN
    [line] = _lines(world.home / ".local" / "state" / "intentloop" / LOG_NAME)
    assert line["code"] in ("INVALID_DATA_DIR", "STORAGE_READ_FAILED")
    assert world.status(env)[1]["last_hook_problem"]["code"] == line["code"]


def test_a_broken_installation_is_logged(world: World) -> None:
    env = world.env()
    assert world.hook("--no-such-option", env=env) == FAIL_OPEN  # a hook command line that no release accepts
    broken = world.tmp / "broken"
    broken.mkdir()
    (broken / "msgspec.py").write_text("raise ImportError('msgspec is broken in this environment')\n")
    assert world.hook("session-start", env={**env, "PYTHONPATH": str(broken)}, event="SessionStart") == FAIL_OPEN
    lines = _lines(world.home / ".local" / "state" / "intentloop" / LOG_NAME)  # no data root exists yet
    assert [r["code"] for r in lines] == ["BROKEN_INSTALLATION", "BROKEN_INSTALLATION"]
    assert "command line" in lines[0]["message"] and "msgspec is broken" in lines[1]["message"]
    assert "reinstall" in world.status(env)[1]["last_hook_problem"]["remedy"]


def test_what_the_user_cannot_fix_is_not_logged(world: World) -> None:
    env = world.env()
    world.data.mkdir()
    done = subprocess.run([*INTENTLOOP, "hook"], input=b"not json", capture_output=True, env=env, timeout=60)
    assert done.stdout == FAIL_OPEN  # the host's payload quirk
    gone = world.env(HOME="")
    world.hook("session-start", env=gone, event="SessionStart")  # healthy (data root set), nothing to log
    assert not (world.data / LOG_NAME).exists() and not (world.home / ".local" / "state").exists()
    code, body, _ = world.status(env)
    assert code == 0 and body["last_hook_problem"] is None


def test_the_log_is_capped_and_never_follows_a_symlink(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    env = {"INTENT_LOOP_DATA_DIR": str(root), "HOME": str(tmp_path / "home")}
    error = StorageError("the ledger is damaged at line 1", code="CORRUPT_LEDGER")
    log = root / LOG_NAME
    while not log.exists() or log.stat().st_size < MAX_LOG_BYTES:
        assert record_problem(error, event="stop", env=env) == log
    assert record_problem(error, event="stop", env=env) == log  # rotated: the old lines moved to .1
    assert log.with_name(LOG_NAME + ".1").stat().st_size >= MAX_LOG_BYTES
    assert len(_lines(log)) == 1
    assert last_problem(env) is not None and last_problem(env)["code"] == "CORRUPT_LEDGER"  # type: ignore[index]
    log.unlink()
    log.symlink_to(tmp_path / "elsewhere")
    fallback = record_problem(error, event="stop", env=env)
    assert fallback == tmp_path / "home" / ".local" / "state" / "intentloop" / LOG_NAME
    assert not (tmp_path / "elsewhere").exists()
    assert record_problem(StorageError("busy", code="LOCK_TIMEOUT"), event="stop", env=env) is None
