"""Several installations of one shared project on one machine: N data roots, N clones, one bare ``file://`` repo.

Each :class:`Machine` is a data root and a clone of the same project repository at its own path. Tools run in a real
process (the service as the MCP server runs it, one service per batch of calls: a private task lives as long as the
batch); the CLI runs as the installed console script. Everything goes through real git.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "intentloop"]
HOOK = [*INTENTLOOP, "hook"]

_TOOLS = """
import json, sys
from pathlib import Path
import trio
from intentloop.service import IntentService
from intentloop.store import locate_project
data_root, cwd, skew = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
if skew:  # this machine's clock is off by `skew` seconds
    import datetime as _dt
    from intentloop.model import ids
    class _Skewed(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return _dt.datetime.now(tz) + _dt.timedelta(seconds=skew)
    ids.datetime = _Skewed
located = locate_project(cwd, data_root)
service = IntentService(lambda: data_root, resident=False)
async def main():
    return [await service.dispatch(name, arguments, project_root=located.root, project_id=located.project_id)
            for name, arguments in json.loads(sys.stdin.read())]
print(json.dumps(trio.run(main)))
"""


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120)
    return done.stdout


class Machine:
    """One installation (data root) with its clone of the project."""

    def __init__(self, base: Path, name: str, origin: Path, email: str) -> None:
        self.name = name
        self.root = base / f"data-{name}"
        self.clone = base / f"clone-{name}" / "project"
        self.clone.parent.mkdir(parents=True)
        git("clone", "-q", str(origin), str(self.clone))
        git("config", "user.email", email, cwd=self.clone)
        git("config", "user.name", name, cwd=self.clone)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("INTENT_LOOP_")} | {"INTENT_LOOP_CATALOG": "off"}
        env["INTENT_LOOP_DATA_DIR"] = str(self.root)
        return env

    def cli(self, *args: str, check: bool = True, cwd: Path | None = None) -> dict[str, Any]:
        """Run ``intentloop ARGS --json`` in the clone; its JSON answer (exit code in ``exit_code``)."""
        done = subprocess.run(
            [*INTENTLOOP, *args, "--json"],
            cwd=cwd or self.clone,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        answer: dict[str, Any] = json.loads(done.stdout)
        if check:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return answer

    def tools(self, *calls: tuple[str, dict[str, Any]], skew_s: float = 0) -> list[Any]:
        """Run the tool calls in one service in a new process (whose clock is off by ``skew_s`` seconds)."""
        done = subprocess.run(
            [sys.executable, "-c", _TOOLS, str(self.root), str(self.clone), str(skew_s)],
            input=json.dumps(calls),
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        answers: list[Any] = json.loads(done.stdout)
        return answers

    def hook(self, session: str, event: str = "SessionStart", **fields: str) -> dict[str, Any]:
        """Run ``intentloop hook`` as a process in the clone (SessionStart's ``source`` ``startup`` by default); its
        answer, after checking that it exits 0, writes nothing to stderr and continues."""
        payload = {"session_id": session, "cwd": str(self.clone), "hook_event_name": event, "source": "startup"}
        payload.update(fields)
        done = subprocess.run(HOOK, input=json.dumps(payload).encode(), capture_output=True, env=self.env(), timeout=30)
        assert (done.returncode, done.stderr) == (0, b"")
        answer: dict[str, Any] = json.loads(done.stdout)
        assert answer["continue"] is True
        return answer

    def start(self, label: str = "work") -> str:
        task = str(uuid.uuid4())
        self.tools(
            ("intent_start_task", {"task_id": task, "request_id": f"start-{task}", "mode": "on", "label": label})
        )
        return task


def travelling_claim(statement: str, **fields: Any) -> dict[str, Any]:
    """A user-explicit project claim as a stream's put carries it (``_share_publish``), ``fields`` replacing its
    own: for writers made without an installation."""
    claim: dict[str, Any] = {
        "claim_id": str(uuid.uuid4()),
        "statement": statement,
        "role": "user",
        "epistemic_status": "explicit",
        "source_ref": {"kind": "user_event"},
        "scope": "project",
        "valid_from": "2026-01-01T00:00:00.000Z",
        "last_confirmed": None,
        "supersedes": [],
        "facets": ["hard_constraint"],
        "related_claim_ids": [],
    }
    claim.update(fields)
    return claim


def explicit(task: str, statement: str, scope: str = "project", **extra: Any) -> tuple[str, dict[str, Any]]:
    return (
        "intent_add_explicit",
        {
            "task_id": task,
            "request_id": f"r-{uuid.uuid4().hex[:12]}",
            "statement": statement,
            "source_ref": {"kind": "user_event", "event_id": f"turn-{uuid.uuid4().hex[:8]}"},
            "facets": ["hard_constraint"],
            "confirmation_reason": "direct_statement",
            "scope": scope,
            **extra,
        },
    )


def world(base: Path, names: list[str], emails: list[str] | None = None) -> tuple[Path, Path, list[Machine]]:
    """``(origin repo, bare remote, machines)``: the project repository, the bare stream repository and clones."""
    origin = base / "origin"
    git("init", "-q", str(origin))
    git("-c", "user.email=o@x", "-c", "user.name=o", "commit", "-q", "--allow-empty", "-m", "init", cwd=origin)
    remote = base / "streams.git"
    git("init", "-q", "--bare", str(remote))
    machines = [
        Machine(base, name, origin, (emails or ["me@example.org"] * len(names))[i]) for i, name in enumerate(names)
    ]
    return origin, remote, machines


__all__ = ["HOOK", "INTENTLOOP", "Machine", "explicit", "git", "travelling_claim", "world"]


def paired(base: Path, names: list[str], emails: list[str] | None = None) -> tuple[Path, list[Machine], str]:
    """``(remote, machines, shared id)``: machines sharing one project through one bare repository (the first ran
    ``share init``, the others ``share join``), each trusting every other's key under its principal."""
    _origin, remote, machines = world(base, names, emails)
    shared = machines[0].cli("share", "init")["shared_id"]
    for machine in machines[1:]:
        machine.cli("share", "join", shared)
    keys = []
    for machine in machines:
        machine.cli("share", "remote", f"file://{remote}")
        keys.append(machine.cli("share", "keys"))
    for machine, mine in zip(machines, keys, strict=True):
        for other in keys:
            if other["key_id"] != mine["key_id"]:
                machine.cli("share", "trust", other["public_key"], "--principal", other["principal"])
    return remote, machines, shared
