"""A running MCP server syncs a shared project in the background once its user turned auto-sync on
(``intentloop share auto-sync EVERY``; docs/SYNC.md, "Background sync"), and never before.

Real ``intentloop serve`` processes driven by the official MCP client, two installations paired through one bare
``file://`` repository; neither runs ``intentloop sync`` after the first round, so whatever crosses did so through
the servers' background syncs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from _support.share_world import INTENTLOOP, Machine, explicit, git, paired

_WAIT_S = 90  # two ticks and a sync take ~10-25 s here; only a server that never syncs reaches this


def _params(machine: Machine) -> StdioServerParameters:
    return StdioServerParameters(
        command=INTENTLOOP[0], args=[*INTENTLOOP[1:], "serve"], env=machine.env(), cwd=str(machine.clone)
    )


async def _call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    answer = (await client.call_tool(tool, args)).structured_content
    assert answer is not None and answer["ok"], answer
    result: dict[str, Any] = answer["result"]
    return result


def _remote_head(remote: Path, shared: str, writer: str) -> str:
    return git("--git-dir", str(remote), "for-each-ref", "--format=%(objectname)", f"refs/intentloop/{shared}/{writer}")


async def _peer_statements(client: Client, machine: Machine, task: str) -> list[str]:
    snap = await _call(
        client, "intent_get_snapshot", {"project_root": str(machine.clone), "task_id": task, "include_peers": True}
    )
    return [c["statement"] for c in snap["peer_claims"]]


async def test_servers_with_auto_sync_publish_and_pull_without_a_sync_command(tmp_path: Path) -> None:
    remote, (a, b), shared = paired(tmp_path, ["m0", "m1"])
    key_a = a.cli("share", "keys")["key_id"]
    for machine in (a, b):
        assert machine.cli("share", "auto-sync", "10s")["sync_every_s"] == 10
    assert b.cli("share", "preview")["sync_every_s"] == 10
    task_a = a.start()
    a.tools(explicit(task_a, "first rule"))
    async with Client(_params(a), mode="legacy") as server_a, Client(_params(b), mode="legacy") as server_b:
        task_b = (await _call(server_b, "intent_start_task", {"project_root": str(b.clone), "request_id": "s"}))[
            "task_id"
        ]
        await _call(
            server_a,
            "intent_add_explicit",
            {"project_root": str(a.clone), **explicit(task_a, "second rule")[1]},
        )
        seen: list[str] = []
        with trio.move_on_after(_WAIT_S):
            while sorted(seen) != ["first rule", "second rule"]:
                await trio.sleep(1)
                seen = await _peer_statements(server_b, b, task_b)
        assert sorted(seen) == ["first rule", "second rule"], seen
    assert _remote_head(remote, shared, key_a).strip()


async def test_without_auto_sync_a_server_never_syncs(tmp_path: Path) -> None:
    """The control: the same servers, auto-sync off (never turned on, or turned off again): nothing is pushed
    for 2.5 ticks' worth of a 10 s period, and the other side sees nothing; a sync command then carries it."""
    remote, (a, b), shared = paired(tmp_path, ["m0", "m1"])
    key_a = a.cli("share", "keys")["key_id"]
    a.cli("share", "auto-sync", "10")
    assert a.cli("share", "auto-sync", "off")["sync_every_s"] is None
    task_a = a.start()
    a.tools(explicit(task_a, "kept here"))
    async with Client(_params(a), mode="legacy") as server_a, Client(_params(b), mode="legacy") as server_b:
        await _call(server_a, "intent_get_snapshot", {"project_root": str(a.clone), "task_id": task_a})
        task_b = (await _call(server_b, "intent_start_task", {"project_root": str(b.clone), "request_id": "s"}))[
            "task_id"
        ]
        await trio.sleep(25)
        assert await _peer_statements(server_b, b, task_b) == []
        assert _remote_head(remote, shared, key_a).strip() == ""
        a.cli("sync")
        b.cli("sync")
        assert await _peer_statements(server_b, b, task_b) == ["kept here"]


@pytest.mark.parametrize("every", ["5", "0", "2d", "ten", "-5m"])
def test_auto_sync_refuses_a_period_outside_ten_seconds_to_a_day(tmp_path: Path, every: str) -> None:
    _remote, (a,), _shared = paired(tmp_path, ["m0"])
    refused = a.cli("share", "auto-sync", every, check=False)
    assert refused["error"]["code"] == "INVALID_ARGUMENTS", refused
    assert a.cli("share", "auto-sync", "1h")["sync_every_s"] == 3600  # the control


def test_auto_sync_needs_a_shared_project(tmp_path: Path) -> None:
    project = tmp_path / "plain"
    project.mkdir()
    done = subprocess.run(
        [*INTENTLOOP, "share", "auto-sync", "60", "--json"],
        cwd=project,
        env={"INTENT_LOOP_CATALOG": "off", "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and '"SHARE_NOT_INITIALIZED"' in done.stdout, (done.stdout, done.stderr)
