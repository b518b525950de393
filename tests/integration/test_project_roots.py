"""A subfolder belongs to its project on every face: a hook, the server and the CLI run from ``repo/backend`` find
what was recorded from ``repo``, and a first write from a subfolder of a git work tree lands in the work tree's
project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from intentloop.model import project_id_for
from intentloop.store import ProjectStore

from _support.hook_world import HOOK, HookWorld
from _support.mcp_client import Surface, server

SESSION = "0f9d1c3b-7a52-4e88-b1c4-5d6e7f8a9b0c"
RULE = "Keep the public API stable"
CLI = [str(Path(sys.executable).with_name("intentloop"))]


class World(HookWorld):
    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, SESSION)
        self.repo = Path(self.root)
        self.sub = self.repo / "backend" / "api"
        self.sub.mkdir(parents=True)
        self.env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp),
            "INTENT_LOOP_DATA_DIR": str(self.data),
        }

    def hook_from(self, directory: Path, event: str, **fields: object) -> dict[str, object]:
        payload = {"session_id": SESSION, "cwd": str(directory), "hook_event_name": event, "transcript_path": "/t"}
        proc = subprocess.run(
            HOOK, input=json.dumps({**payload, **fields}).encode(), capture_output=True, env=self.env, timeout=30
        )
        assert (proc.returncode, proc.stderr) == (0, b"")
        answer: dict[str, object] = json.loads(proc.stdout)
        assert answer["continue"] is True
        return answer

    def cli(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLI, *args], capture_output=True, text=True, env=self.env, cwd=cwd, timeout=60)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _context(answer: dict[str, object]) -> str:
    output = answer.get("hookSpecificOutput")
    return str(output.get("additionalContext", "")) if isinstance(output, dict) else ""


async def test_hooks_and_the_cli_in_a_subfolder_find_the_projects_memory(world: World) -> None:
    await world.call("intent_start_task", host_session_id=SESSION, label="mine", initial_explicit=[RULE])
    assert RULE in _context(world.hook_from(world.repo, "SessionStart"))  # control: from the root itself
    assert RULE in _context(world.hook_from(world.sub, "SessionStart"))  # no .git: found through its memory
    shown = world.cli("tasks", "--json", cwd=world.sub)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["project_id"] == world.pid
    status = json.loads(world.cli("status", "--json", cwd=world.sub).stdout)
    assert status["project"]["root"] == str(world.repo) and status["project"]["reason"] == "memory"
    assert status["project"]["directory"] == str(world.sub)


async def test_a_first_write_from_a_subfolder_of_a_work_tree_lands_in_the_work_trees_project(world: World) -> None:
    subprocess.run(["git", "init", "-q", str(world.repo)], check=True, timeout=30)
    answer = world.hook_from(world.sub, "UserPromptSubmit", prompt=f"/intent remember {RULE}", turn_id="turn-1")
    assert "receipt" in json.dumps(answer)
    assert ProjectStore(world.data, world.pid).ledger_path.exists()
    assert not ProjectStore(world.data, project_id_for(str(world.sub))).project_dir.exists()
    assert RULE in _context(world.hook_from(world.repo, "SessionStart"))
    status = json.loads(world.cli("status", "--json", cwd=world.sub).stdout)
    assert status["project"]["reason"] == "memory" and status["project"]["root"] == str(world.repo)


async def test_the_server_resolves_a_subfolder_root_to_its_project(world: World) -> None:
    await world.call("intent_start_task", label="from the root", initial_explicit=[RULE])
    async with server(world.data, env={"HOME": str(world.data.parent)}) as client:
        envelope = await Surface(client, world.sub).call("intent_status", {})  # project_root names the subfolder
        assert envelope["ok"] and envelope["project_id"] == world.pid and envelope["result"]["task_count"] == 1
        other = await Surface(client, world.data.parent).ok("intent_status", {})  # control: an unrelated folder
        assert other["project_id"] != world.pid and other["task_count"] == 0
