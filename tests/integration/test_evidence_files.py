"""Evidence bound to a large file, through a real ``intentloop serve``: an unchanged file is hashed once per server,
a changed one again, and hashing never holds up the server's other answers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from intentloop.service._evidence import RACY_WINDOW_NS

from _support import mcp_wire as W


def _bytes_read(pid: int) -> int:
    """(Reads are counted through Linux's ``/proc/PID/io``, as the rest of the suite reads ``/proc``.) The server's
    ``rchar``: every byte its read() calls returned, page cache included."""
    for line in Path(f"/proc/{pid}/io").read_text(encoding="ascii").splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)


def _settle(path: Path) -> None:
    st = path.stat()
    while time.time_ns() <= max(st.st_mtime_ns, st.st_ctime_ns) + RACY_WINDOW_NS:
        time.sleep(0.1)


def _settled_log(tmp_path: Path, size: int = 128 << 20) -> tuple[Path, Path, int]:
    """A project holding ``build.log``, a sparse file of ``size`` bytes whose last change is past the racy window (so
    its digest may be remembered): (project, log, size)."""
    project = tmp_path / "project"
    project.mkdir()
    log = project / "build.log"
    _sparse(log, size)
    _settle(log)
    return project, log, size


def _call(wire: W.Wire, tool: str, **arguments: Any) -> dict[str, Any]:
    answer = wire.request("tools/call", {"name": tool, "arguments": arguments})
    envelope: dict[str, Any] = answer["result"]["structuredContent"]
    assert envelope["ok"] is True, envelope
    return envelope["result"]  # type: ignore[no-any-return]


def _bind(wire: W.Wire, project: Path, path: str) -> str:
    task = _call(wire, "intent_start_task", project_root=str(project), request_id="start")["task_id"]
    _call(
        wire,
        "intent_add_evidence",
        project_root=str(project),
        task_id=task,
        request_id="ev-1",
        statement="the build log shows the failure",
        source_ref={"kind": "tool_result", "event_id": "ci-1"},
        facets=["result_feedback"],
        evidence_path=path,
    )
    return str(task)


def _stale(snapshot: dict[str, Any]) -> bool:
    [claim] = [c for c in snapshot["active_claims"] if "evidence_file" in c]
    return bool(claim["evidence_stale"])


def test_a_server_hashes_an_unchanged_evidence_file_once(tmp_path: Path) -> None:
    project, log, size = _settled_log(tmp_path)
    with W.Wire(W.server_env(tmp_path / "data"), cwd=project) as wire:
        W.initialize(wire)
        task = _bind(wire, project, "build.log")  # hashes the file once
        snapshot = {"project_root": str(project), "task_id": task}
        _call(wire, "intent_get_snapshot", **snapshot)
        before = _bytes_read(wire.process.pid)
        for _ in range(3):
            assert _stale(_call(wire, "intent_get_snapshot", **snapshot)) is False
        assert _bytes_read(wire.process.pid) - before < size // 8  # three snapshots, the file not read again
        with log.open("r+b") as handle:  # control: a change is hashed again and seen
            handle.write(b"FAILED")
        before = _bytes_read(wire.process.pid)
        assert _stale(_call(wire, "intent_get_snapshot", **snapshot)) is True
        assert _bytes_read(wire.process.pid) - before >= size


def test_the_server_answers_while_it_hashes_a_large_evidence_file(tmp_path: Path) -> None:
    project, size = tmp_path / "project", 2 << 30  # sparse: no disk space, seconds of hashing
    project.mkdir()
    log = project / "build.log"
    log.write_bytes(b"ok\n")
    with W.Wire(W.server_env(tmp_path / "data"), cwd=project) as wire:
        W.initialize(wire)
        task = _bind(wire, project, "build.log")
        _sparse(log, size)  # changed: the next snapshot must hash 2 GiB
        start = _bytes_read(wire.process.pid)
        wire.send(
            {
                "jsonrpc": "2.0",
                "id": 100,
                "method": "tools/call",
                "params": {
                    "name": "intent_get_snapshot",
                    "arguments": {"project_root": str(project), "task_id": task},
                },
            }
        )
        deadline = time.monotonic() + 60
        while _bytes_read(wire.process.pid) - start < 64 << 20:  # the hash is under way
            assert time.monotonic() < deadline, "the snapshot never started hashing"
            time.sleep(0.01)
        wire.send({"jsonrpc": "2.0", "id": 101, "method": "tools/list"})
        first = wire.read(timeout=120)
        assert first is not None and first["id"] == 101, "tools/list waited for the hash"
        assert len(first["result"]["tools"]) == 15
        assert _bytes_read(wire.process.pid) - start < size  # answered while the hash was still running
        second = wire.read(timeout=300)
        assert second is not None and second["id"] == 100
        assert _stale(second["result"]["structuredContent"]["result"]) is True


@pytest.mark.parametrize("how", ["eof", "cancel"])
def test_a_hash_under_way_never_holds_a_request_or_the_exit(tmp_path: Path, how: str) -> None:
    # docs/MCP.md: the server ends at any moment, and a cancelled request is let go at once. A hash is read-only, so
    # a cancelled call leaves its thread behind rather than wait for gigabytes to be read.
    project, size = tmp_path / "project", 8 << 30
    project.mkdir()
    log = project / "build.log"
    log.write_bytes(b"ok\n")
    wire = W.Wire(W.server_env(tmp_path / "data"), cwd=project)
    try:
        W.initialize(wire)
        task = _bind(wire, project, "build.log")
        _sparse(log, size)
        pid = wire.process.pid
        start = _bytes_read(pid)
        arguments = {"project_root": str(project), "task_id": task}
        params = {"name": "intent_get_snapshot", "arguments": arguments}
        wire.send({"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": params})
        while _bytes_read(pid) - start < 64 << 20:
            time.sleep(0.01)
        if how == "cancel":
            wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 100}})
            # the request is let go at once: its id is free again (a request reusing it is accepted, no longer
            # refused as in flight) while the abandoned hash is still reading
            for _ in range(100):
                wire.send({"jsonrpc": "2.0", "id": 100, "method": "tools/list"})
                answer = wire.read(timeout=60)
                assert answer is not None and answer["id"] == 100, answer
                if "result" in answer:
                    break
                time.sleep(0.02)
            assert answer is not None and "result" in answer, answer
            assert _bytes_read(pid) - start < size
            return
        assert wire.process.stdin is not None
        wire.process.stdin.close()
        read = 0
        while wire.process.poll() is None:
            try:
                read = _bytes_read(pid) - start
            except (OSError, AssertionError):
                break
            time.sleep(0.01)
        assert wire.process.wait(timeout=300) == 0
        assert read < size, "the server read the whole file before it exited"
    finally:
        wire.close()


_SHOW_READS = (
    "import runpy, sys\n"
    "sys.argv = ['intentloop', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('intentloop', run_name='__main__')\n"
    "finally:\n"
    "    rchar = [l for l in open('/proc/self/io') if l.startswith('rchar:')][0].split()[1]\n"
    "    print('RCHAR', rchar, file=sys.stderr)\n"
)


def _cli_reads(env: dict[str, str], project: Path, *args: str) -> tuple[int, str]:
    """Run ``intentloop ARGS`` in a fresh process; its exit code and stdout, after checking what it read."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _SHOW_READS, *args], capture_output=True, text=True, env=env, cwd=project, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stderr.rsplit("RCHAR", 1)[1].split()[0]), proc.stdout


def test_each_cli_process_hashes_an_unchanged_evidence_file_only_the_first_time(tmp_path: Path) -> None:
    """The project's digest cache, shared by every process: a second ``intentloop show`` does not read the file
    again; a file changed since is read again, and a cache entry edited without the key is not trusted."""
    import json
    import os

    project, log, size = _settled_log(tmp_path)
    with W.Wire(W.server_env(tmp_path / "data"), cwd=project) as wire:
        W.initialize(wire)
        task = _bind(wire, project, "build.log")
    env = {**os.environ, "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    # the server's bind did not persist: this process hashes (JSON: an 80-column table may fold the file's name away)
    first, shown = _cli_reads(env, project, "show", task, "--json")
    assert first >= size and "build.log" in shown
    second, _ = _cli_reads(env, project, "show", task)
    assert second < size // 8  # remembered by the project's cache
    [cache] = (tmp_path / "data").rglob("evidence-digests.json")
    entries = json.loads(cache.read_bytes())
    entries[0][5] = "0" * 64  # another digest, the seal left as it was: a forged entry
    cache.write_bytes(json.dumps(entries).encode())
    third, shown = _cli_reads(env, project, "show", task, "--json")
    assert third >= size  # not trusted: hashed again
    assert '"evidence_stale":false' in shown.replace(" ", "")  # and judged from the file: unchanged
    with log.open("r+b") as handle:  # a change: another stat, hashed again, now stale
        handle.write(b"changed")
    fourth, _ = _cli_reads(env, project, "show", task)
    assert fourth >= size
