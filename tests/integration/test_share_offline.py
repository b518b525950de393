"""No network without sharing, and hooks never touch it (docs/SYNC.md, "What leaves when").

Every process runs in a network namespace of its own (``unshare -n``: no interface but a downed loopback) under
``strace -f``, so any network socket (``AF_INET``/``AF_INET6``) any process or child opens is seen. Without ``share
init`` nothing is written under ``R/share`` and ``sync`` refuses; with sharing set up, the hook and the tools still
open no network socket, and only ``sync`` runs git (here over ``file://``, which needs no network either).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from _support.share_world import HOOK, INTENTLOOP, Machine, explicit, world

_TOOLS_SCRIPT = Path(__file__).resolve().parents[1] / "_support" / "share_world.py"
_NET = re.compile(r"socket\((AF_INET|AF_INET6|PF_INET|PF_INET6)\b")


def _isolated(machine: Machine, argv: list[str], log: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["unshare", "-n", "strace", "-f", "-qq", "-e", "trace=socket,execve", "-o", str(log), *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=machine.env(),
        cwd=machine.clone,
        timeout=300,
    )


def _sockets(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if _NET.search(line)]


def _execs(log: Path, program: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if f'execve("{program}' in line or f'/{program}"' in line]


def test_no_network_socket_and_nothing_shared_without_share_init(tmp_path: Path) -> None:
    _origin, _remote, (a,) = world(tmp_path, ["a"])
    session = "sess-" + uuid.uuid4().hex
    task = str(uuid.uuid4())
    script = _tools_program(
        a,
        [
            ("intent_start_task", {"task_id": task, "request_id": "s", "mode": "on", "host_session_id": session}),
            explicit(task, "A rule that stays here"),
        ],
    )
    logs = []
    for name, argv, stdin in (
        ("tools", [sys.executable, "-c", script], ""),
        ("hook", HOOK, json.dumps({"session_id": session, "cwd": str(a.clone), "hook_event_name": "SessionStart"})),
        ("status", [*INTENTLOOP, "status", "--json"], ""),
        ("preview", [*INTENTLOOP, "share", "preview", "--json"], ""),
        ("sync", [*INTENTLOOP, "sync", "--json"], ""),
    ):
        log = tmp_path / f"{name}.strace"
        done = _isolated(a, argv, log, stdin)
        logs.append(log)
        if name == "hook":
            assert "A rule that stays here" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        if name == "sync":
            assert json.loads(done.stdout)["error"]["code"] == "SHARE_NOT_INITIALIZED"
        if name == "preview":
            assert json.loads(done.stdout)["shared_id"] is None
    assert [line for log in logs for line in _sockets(log)] == []
    assert [line for log in logs for line in _execs(log, "git")] == []  # not even a git config lookup
    assert not (a.root / "share").exists()
    control = tmp_path / "control.strace"  # the positive control: a network socket is seen
    _isolated(a, [sys.executable, "-c", "import socket; socket.socket(socket.AF_INET6)"], control)
    assert len(_sockets(control)) == 1


def _tools_program(machine: Machine, calls: list[tuple[str, dict[str, object]]]) -> str:
    return (
        "import json, subprocess, sys\n"
        f"sys.path.insert(0, {str(_TOOLS_SCRIPT.parent.parent)!r})\n"
        "from pathlib import Path\n"
        "from _support.share_world import Machine\n"
        "m = Machine.__new__(Machine)\n"
        f"m.root, m.clone = Path({str(machine.root)!r}), Path({str(machine.clone)!r})\n"
        f"print(json.dumps(m.tools(*{calls!r})))\n"
    )


def test_with_sharing_set_up_only_sync_runs_git_and_hooks_stay_offline(tmp_path: Path) -> None:
    _origin, remote, (a,) = world(tmp_path, ["a"])
    a.cli("share", "init")
    a.cli("share", "remote", f"file://{remote}")
    session = "sess-" + uuid.uuid4().hex
    task = str(uuid.uuid4())
    script = _tools_program(
        a,
        [
            ("intent_start_task", {"task_id": task, "request_id": "s", "mode": "on", "host_session_id": session}),
            explicit(task, "Shared rule"),
        ],
    )
    tools_log, hook_log, sync_log = (tmp_path / f"{n}.strace" for n in ("tools", "hook", "sync"))
    _isolated(a, [sys.executable, "-c", script], tools_log)
    hook = _isolated(
        a, HOOK, hook_log, json.dumps({"session_id": session, "cwd": str(a.clone), "hook_event_name": "SessionStart"})
    )
    assert "Shared rule" in hook.stdout
    done = _isolated(a, [*INTENTLOOP, "sync", "--json"], sync_log)
    assert json.loads(done.stdout)["own"]["pushed"] is True, done.stdout
    assert _sockets(tools_log) == _sockets(hook_log) == _sockets(sync_log) == []
    assert _execs(tools_log, "git") == [] and _execs(hook_log, "git") == []
    assert _execs(sync_log, "git") != []
    assert os.listdir(remote / "refs" / "intentloop")
