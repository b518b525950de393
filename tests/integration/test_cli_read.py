"""`intentloop status` and `intentloop verify` as real subprocesses: every scenario, exit codes and --json shapes.

Scenarios: intact, torn tail, tampered middle, missing project, unknown id, lock held by a live process, empty (and
missing) data root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from intentloop.model import EventDraft, event_line, new_uuid, project_id_for, seal

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]
HOLDER = """
import sys
from pathlib import Path
from intentloop.store import ProjectStore
with ProjectStore(Path(sys.argv[1]), sys.argv[2]).locked(verify=False):
    print("held", flush=True)
    sys.stdin.read()
"""
REPORT_FIELDS = {
    "project_id",
    "ledger_path",
    "project_exists",
    "ledger_exists",
    "status",
    "intact",
    "events",
    "head_hash",
    "ledger_schema_version",
    "byte_length",
    "verified_bytes",
    "damaged_bytes",
    "damaged_sha256",
    "first_bad_line",
    "reason",
    "code",
    "torn_tail",
    "quarantine_records",
    "signature",
    "signed_events",
    "signature_problem",
    "signed_here",
    "adopted_events",
    "adopted",
}
HEAD_FIELDS = {"ok", "command", "exit_code", "schema_version"}
ERROR_FIELDS = {"code", "message", "retryable", "remedy"}


class World:
    """A temporary data root and project folders, the CLI as a subprocess, and real ledgers."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.data_root = tmp_path / "data"
        self.home = tmp_path / "home"
        self.home.mkdir()

    def project(self, name: str = "project") -> tuple[Path, str, Path]:
        """``(project_root, project_id, ledger_path)`` for a new project folder (its ledger is not written)."""
        root = self.tmp / name
        root.mkdir()
        pid = project_id_for(os.path.realpath(root))
        return root, pid, self.data_root / "projects" / pid / "ledger.jsonl"

    def lines(self, pid: str, count: int) -> list[bytes]:
        task, prev, out = new_uuid(), None, []
        for index in range(count):
            event_type = "task_started" if index == 0 else "claim_added"
            payload: dict[str, Any] = {"n": index, "claim": {"statement": f"statement {index}"}}
            draft = EventDraft(
                event_type=event_type, task_id=task, actor="user", request_id=f"r{index}", payload=payload
            )
            event = seal(draft, project_id=pid, prev_hash=prev)
            prev = event.event_hash
            out.append(event_line(event))
        return out

    def write(self, ledger: Path, data: bytes) -> bytes:
        ledger.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        ledger.write_bytes(data)
        return data

    def env(self, *, data_root: bool = True) -> dict[str, str]:
        """With ``data_root=False`` neither INTENT_LOOP_DATA_DIR nor HOME is set: no data root can be resolved."""
        env = {"INTENT_LOOP_CATALOG": "off", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        if data_root:
            env["INTENT_LOOP_DATA_DIR"] = str(self.data_root)
            env["HOME"] = str(self.home)
        return env

    def run(self, *args: str, data_root: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*INTENTLOOP, *args], capture_output=True, text=True, env=self.env(data_root=data_root), timeout=60
        )

    def json(self, *args: str, data_root: bool = True) -> tuple[int, dict[str, Any]]:
        done = self.run(*args, "--json", data_root=data_root)
        return done.returncode, json.loads(done.stdout)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _tampered(world: World, pid: str, ledger: Path) -> list[bytes]:
    lines = world.lines(pid, 5)
    lines[2] = lines[2].replace(b"statement 2", b"statement X")
    world.write(ledger, b"".join(lines))
    return lines


# ------------------------------------------------------------------------------------------------------ verify


def test_verify_intact_exits_0_with_the_full_report(world: World) -> None:
    root, pid, ledger = world.project()
    lines = world.write(ledger, b"".join(world.lines(pid, 4)))
    code, body = world.json("verify", "--project-root", str(root))
    assert code == 0
    assert set(body) == HEAD_FIELDS | REPORT_FIELDS | {"data_root", "project_root"}
    assert body["ok"] is True and body["exit_code"] == 0 and body["command"] == "verify"
    assert body["intact"] is True and body["events"] == 4 and body["byte_length"] == len(lines)
    assert body["project_id"] == pid and body["project_root"] == os.path.realpath(root)
    assert "error" not in body
    assert (body["signature"], body["signed_events"]) == ("unsigned", None)  # written without intentloop's key
    by_id = world.json("verify", "--project-id", pid)
    assert by_id[0] == 0 and by_id[1]["head_hash"] == body["head_hash"]


def test_verify_torn_tail_exits_1_naming_the_line(world: World) -> None:
    _root, pid, ledger = world.project()
    lines = world.lines(pid, 3)
    world.write(ledger, b"".join(lines) + lines[2][:33])
    code, body = world.json("verify", "--project-id", pid)
    assert code == 1 and body["ok"] is False and body["exit_code"] == 1
    assert body["status"] == "torn_tail" and body["torn_tail"] is True
    assert body["first_bad_line"] == 4 and body["events"] == 3 and body["damaged_bytes"] == 33
    assert set(body["error"]) == ERROR_FIELDS
    assert body["error"]["code"] == "CORRUPT_TRAILING_EVENT" and body["error"]["retryable"] is True


def test_verify_tampered_middle_exits_1_with_line_and_reason(world: World) -> None:
    root, pid, ledger = world.project()
    _tampered(world, pid, ledger)
    code, body = world.json("verify", "--project-root", str(root))
    assert code == 1
    assert body["status"] == "corrupt" and body["first_bad_line"] == 3 and body["events"] == 2
    assert "event_hash" in body["reason"]
    assert body["error"]["code"] == "CORRUPT_LEDGER" and "line 3" in body["error"]["message"]
    human = world.run("verify", "--project-root", str(root))
    assert human.returncode == 1
    assert "first bad line" in human.stdout and "event_hash" in human.stdout
    assert "error[CORRUPT_LEDGER]: line 3" in human.stderr and "remedy:" in human.stderr


def test_verify_missing_project_is_not_found(world: World) -> None:
    root, pid, _ledger = world.project()
    world.write(world.project("other")[2], b"")  # the data root exists, this project does not
    code, body = world.json("verify", "--project-root", str(root))
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    assert world.run("verify", "--project-root", str(world.tmp / "no-such-folder")).returncode == 2
    assert not (world.data_root / "projects" / pid).exists()


def test_verify_unknown_id_is_not_found(world: World) -> None:
    code, body = world.json("verify", "--project-id", "../../etc")
    assert code == 2 and body["error"]["code"] == "INVALID_PROJECT_ID"
    code, body = world.json("verify", "--project-id", "a" * 64)
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    code, body = world.json("verify")  # no option: the current directory's project, which has no data here
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    assert "current directory" in body["error"]["message"]


def test_verify_reads_without_the_lock_while_a_live_process_holds_it(world: World) -> None:
    _root, pid, ledger = world.project()
    world.write(ledger, b"".join(world.lines(pid, 3)))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(world.data_root), pid], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        code, body = world.json("verify", "--project-id", pid)
        assert code == 0 and body["events"] == 3
        assert holder.poll() is None
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()


def test_verify_on_an_empty_or_missing_data_root_creates_nothing(world: World) -> None:
    code, body = world.json("verify", "--project-id", "b" * 64)
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    assert not world.data_root.exists()
    world.data_root.mkdir()
    assert world.json("verify", "--project-id", "b" * 64)[0] == 5
    assert list(world.data_root.iterdir()) == []


def test_verify_without_a_data_root_is_an_environment_error(world: World) -> None:
    code, body = world.json("verify", "--project-id", "c" * 64, data_root=False)
    assert code == 3 and body["error"]["code"] == "DATA_DIR_REQUIRED"
    human = world.run("verify", "--project-id", "c" * 64, data_root=False)
    assert human.returncode == 3 and "INTENT_LOOP_DATA_DIR" in human.stderr


# ------------------------------------------------------------------------------------------------------ status


def test_status_shows_each_project_health_and_counts(world: World) -> None:
    good_root, good, good_ledger = world.project("good")
    world.write(good_ledger, b"".join(world.lines(good, 3)))
    torn_root, torn, torn_ledger = world.project("torn")
    lines = world.lines(torn, 2)
    world.write(torn_ledger, b"".join(lines) + b'{"actor"')
    _bad_root, bad, bad_ledger = world.project("bad")
    _tampered(world, bad, bad_ledger)
    code, body = world.json("status")
    assert code == 0 and body["ok"] is True and body["command"] == "status"
    fields = {"versions", "data_root", "project", "projects", "totals", "last_hook_problem", "redaction"}
    assert set(body) == HEAD_FIELDS | fields
    assert body["versions"]["intentloop"] and body["versions"]["ledger_schema"] == 1
    assert body["redaction"]["catalog"] == "off" and body["redaction"]["catalog_version"] == "1.5.0"
    assert body["redaction"]["summary"].startswith("own rules only (catalog off")
    assert body["data_root"] == {
        "path": str(world.data_root),
        "exists": True,
        "source": "INTENT_LOOP_DATA_DIR",
        "reason": "INTENT_LOOP_DATA_DIR is set",
    }
    projects = {p["project_id"]: p for p in body["projects"]}
    assert projects[good]["status"] == "intact" and projects[good]["events"] == 3 and projects[good]["tasks"] == 1
    assert projects[torn]["status"] == "torn_tail" and projects[torn]["first_bad_line"] == 3
    assert projects[bad]["status"] == "corrupt" and projects[bad]["first_bad_line"] == 3
    assert body["totals"]["projects"] == 3 and body["totals"]["damaged"] == 2
    only = world.json("status", "--project-root", str(good_root))[1]
    assert [p["project_id"] for p in only["projects"]] == [good]
    human = world.run("status")
    assert (
        human.returncode == 0
        and good[:12] in human.stdout
        and good not in human.stdout
        and "corrupt at line 3" in human.stdout
    )
    assert str(torn_root) not in human.stdout  # the ledger never stores roots; status shows ids


def test_status_on_a_missing_data_root_creates_nothing(world: World) -> None:
    code, body = world.json("status")
    assert code == 0 and body["data_root"]["exists"] is False and body["projects"] == []
    assert not world.data_root.exists()
    human = world.run("status")
    assert human.returncode == 0 and "nothing was created" in human.stdout
    assert "INTENT_LOOP_DATA_DIR is set" in human.stdout  # how the root was chosen
    assert not world.data_root.exists()


def test_status_without_an_override_shows_the_per_user_default_and_why(world: World) -> None:
    env = {"INTENT_LOOP_CATALOG": "off", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(world.home)}
    done = subprocess.run([*INTENTLOOP, "status", "--json"], capture_output=True, text=True, env=env, timeout=60)
    body = json.loads(done.stdout)
    default = world.home / ".local" / "share" / "intentloop" / "v1"
    assert done.returncode == 0 and body["data_root"]["path"] == str(default)
    assert body["data_root"]["source"] == "default" and "per-user default" in body["data_root"]["reason"]
    human = subprocess.run([*INTENTLOOP, "status"], capture_output=True, text=True, env=env, timeout=60)
    assert human.returncode == 0 and "per-user default" in human.stdout and not default.exists()
    original = world.home / ".codex" / "plugin-data" / "intent-loop" / "v1"
    (original / "projects").mkdir(parents=True)
    body = json.loads(subprocess.run([*INTENTLOOP, "status", "--json"], capture_output=True, env=env).stdout)
    assert body["data_root"]["path"] == str(original) and body["data_root"]["source"] == "original"


def test_status_on_an_empty_data_root_lists_no_projects(world: World) -> None:
    world.data_root.mkdir()
    code, body = world.json("status")
    assert code == 0 and body["projects"] == [] and body["totals"]["projects"] == 0
    assert list(world.data_root.iterdir()) == []


def test_status_for_a_project_without_data(world: World) -> None:
    root, _pid, _ledger = world.project()
    code, body = world.json("status", "--project-root", str(root))
    assert code == 0 and body["projects"][0]["project_exists"] is False
    assert not world.data_root.exists()
    assert world.json("status", "--project-root", "relative/path")[0] == 2


def test_status_without_a_data_root_still_reports_versions(world: World) -> None:
    code, body = world.json("status", data_root=False)
    assert code == 3 and body["error"]["code"] == "DATA_DIR_REQUIRED" and body["versions"]["intentloop"]


def test_status_shows_a_lock_held_by_a_live_process(world: World) -> None:
    _root, pid, ledger = world.project()
    world.write(ledger, b"".join(world.lines(pid, 2)))
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(world.data_root), pid], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        code, body = world.json("status")
        assert code == 0 and body["projects"][0]["lock_held"] is True and body["projects"][0]["intact"] is True
    finally:
        assert holder.stdin is not None and holder.stdout is not None
        holder.stdin.close()
        holder.wait(timeout=10)
        holder.stdout.close()
    assert world.json("status")[1]["projects"][0]["lock_held"] is False


# ------------------------------------------------------------------------------- agreement with intent_status


async def test_status_counts_agree_with_the_servers_intent_status(world: World) -> None:
    """Tasks and candidates written through the real server and a real prompt hook: the CLI's `status` (a
    lock-free read of the file) and the server's `intent_status` see the same numbers."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    root, pid, _ledger = world.project()
    params = StdioServerParameters(command=INTENTLOOP[0], args=[*INTENTLOOP[1:], "serve"], env=world.env())
    async with Client(params, mode="legacy") as client:
        for n in range(2):
            started = await client.call_tool(
                "intent_start_task",
                {"project_root": str(root), "request_id": f"start-{n}", "host_session_id": f"session-{n}"},
            )
            assert started.structured_content["ok"], started.structured_content
        prompt = {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "session-0",
            "cwd": str(root),
            "turn_id": "turn-1",
            "prompt": "please keep the API stable",
        }
        hooked = subprocess.run(
            [*INTENTLOOP, "hook"], input=json.dumps(prompt), capture_output=True, text=True, env=world.env(), timeout=30
        )
        assert hooked.returncode == 0
        served = (await client.call_tool("intent_status", {"project_root": str(root)})).structured_content
    assert served["ok"], served
    code, body = world.json("status", "--project-root", str(root))
    [project] = body["projects"]
    assert code == 0 and project["project_id"] == pid and project["intact"]
    assert (project["tasks"], project["candidates"]) == (2, 1)
    assert (served["result"]["task_count"], served["result"]["candidate_count"]) == (2, 1)
