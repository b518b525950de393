"""The admin CLI for people, as real `intentloop` subprocesses: projects, tasks, show, export and forget.

The memory is written through the real service (the MCP tools' code) and read back only through the CLI. Read-only
commands must leave the data root byte-for-byte and entry-for-entry as it was.
"""

from __future__ import annotations

import json
import os
import pty
import select
import stat
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from intentloop.errors import IntentLoopError
from intentloop.model import project_id_for
from intentloop.service import IntentService

_SCRIPT = Path(sys.executable).with_name("intentloop")
INTENTLOOP = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cli"]


class Memory:
    """A project folder with two tasks written through the service, and the CLI run from inside the folder."""

    def __init__(self, tmp: Path, name: str = "project") -> None:
        self.tmp = tmp
        self.data_root = tmp / "data"
        self.root = tmp / name
        self.root.mkdir(exist_ok=True)
        self.canonical = os.path.realpath(self.root)
        self.pid = project_id_for(self.canonical)
        self.dir = self.data_root / "projects" / self.pid
        self.env = {
            "INTENT_LOOP_CATALOG": "off",
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp),
            "INTENT_LOOP_DATA_DIR": str(self.data_root),
        }
        self.service = IntentService(lambda: self.data_root)

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        async def run() -> Any:
            return await self.service.dispatch(tool, arguments, project_root=self.canonical, project_id=self.pid)

        return trio.run(run)

    def populate(self) -> dict[str, str]:
        """Task A (label with markup characters): 3 claims, one superseded, one invalidated; task B: 1 claim."""
        a = self.call(
            "intent_start_task", {"request_id": "s1", "label": "Ship [the] CLI", "initial_explicit": ["Use typer"]}
        )
        task_a = a["task_id"]
        first = self.claim(task_a, "r1", "Keep the ledger v1")
        second = self.call(
            "intent_replace_claim",
            {
                "task_id": task_a,
                "request_id": "r2",
                "statement": "Keep the ledger v1 and readable by the original",
                "source_ref": {"kind": "user_event", "event_id": "turn-2"},
                "facets": ["hard_constraint"],
                "replacement_kind": "explicit",
                "confirmation_reason": "direct_statement",
                "supersedes": [first],
            },
        )["claim_id"]
        gone = self.claim(task_a, "r3", "Print a banner")
        self.call(
            "intent_invalidate",
            {
                "task_id": task_a,
                "request_id": "r4",
                "claim_id": gone,
                "reason": "changed my mind",
                "source_ref": {"kind": "user_event", "event_id": "turn-4"},
            },
        )
        b = self.call("intent_start_task", {"request_id": "s2", "label": "Second"})
        other = self.claim(b["task_id"], "r5", "Nothing else")
        return {"a": task_a, "b": b["task_id"], "first": first, "second": second, "gone": gone, "other": other}

    def claim(self, task: str, request: str, statement: str) -> str:
        claim = self.call(
            "intent_add_explicit",
            {
                "task_id": task,
                "request_id": request,
                "statement": statement,
                "source_ref": {"kind": "user_event", "event_id": f"turn-{request}"},
                "facets": ["hard_constraint"],
                "confirmation_reason": "direct_statement",
            },
        )
        return str(claim["claim_id"])

    def run(self, *args: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*INTENTLOOP, *args],
            capture_output=True,
            text=True,
            env=self.env,
            input=stdin,
            timeout=60,
            cwd=cwd or self.root,
        )

    def json(self, *args: str, cwd: Path | None = None) -> tuple[int, dict[str, Any]]:
        done = self.run(*args, "--json", cwd=cwd)
        return done.returncode, json.loads(done.stdout)

    def tree(self) -> dict[str, tuple[int, int, bytes]]:
        """Every entry under the data root with its mode, mtime and bytes (to prove a read changed nothing)."""
        out: dict[str, tuple[int, int, bytes]] = {}
        for path in sorted(self.data_root.rglob("*")):
            st = path.lstat()
            out[str(path)] = (st.st_mode, st.st_mtime_ns, path.read_bytes() if path.is_file() else b"")
        return out


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    return Memory(tmp_path)


# ------------------------------------------------------------------------------------------------- see


def test_projects_tasks_and_show_read_the_memory_and_create_nothing(memory: Memory) -> None:
    ids = memory.populate()
    other = Memory(memory.tmp, "elsewhere")
    other.call("intent_start_task", {"request_id": "x", "label": "elsewhere"})
    before = memory.tree()

    code, body = memory.json("projects")
    assert code == 0
    rows = {row["project_id"]: row for row in body["projects"]}
    assert set(rows) == {memory.pid, other.pid}
    assert rows[memory.pid]["project_root"] == memory.canonical  # the current directory's project shows its folder
    assert rows[other.pid]["project_root"] is None  # the root is never stored: unknown for the others
    assert (rows[memory.pid]["tasks"], rows[memory.pid]["claims"], rows[memory.pid]["intact"]) == (2, 5, True)
    human = memory.run("projects")
    assert human.returncode == 0 and memory.pid[:12] in human.stdout and "2 projects." in human.stdout

    code, body = memory.json("tasks")  # default: the current directory's project
    assert code == 0 and body["project_id"] == memory.pid
    tasks = {row["task_id"]: row for row in body["tasks"]}
    assert tasks[ids["a"]]["claims"] == {"active": 2, "superseded": 1, "invalidated": 1}
    assert tasks[ids["a"]]["label"] == "Ship [the] CLI" and tasks[ids["a"]]["mode"] == "on"
    assert tasks[ids["b"]]["claims"] == {"active": 1, "superseded": 0, "invalidated": 0}
    human = memory.run("tasks", "--project-id", memory.pid[:10].upper())  # a prefix, in the other case
    assert human.returncode == 0 and "Ship [the] CLI" in human.stdout and "2 tasks." in human.stdout

    code, body = memory.json("show", ids["a"][:8].upper())
    assert code == 0 and body["snapshot"]["task_id"] == ids["a"]
    active = {c["claim_id"] for c in body["snapshot"]["active_claims"]}
    assert ids["second"] in active and ids["first"] not in active and ids["gone"] not in active
    human = memory.run("show", ids["a"][:8], "--project-root", memory.canonical, cwd=memory.tmp)
    assert human.returncode == 0, human.stderr
    assert "Keep the ledger v1 and readable by the original" in human.stdout and "Print a banner" not in human.stdout
    assert (
        memory.run("export", ids["a"]).returncode == 0 and memory.json("export", ids["b"], "--format", "json")[0] == 0
    )
    status = memory.run("status")
    assert (
        status.returncode == 0 and "2 projects, 3 tasks, 0 candidates, 0 private controls, 0 damaged." in status.stdout
    )
    assert memory.tree() == before  # nothing created or touched by any of the reads


@pytest.mark.parametrize("damage", ["checkpoint", "index", "summaries"])
def test_reads_through_the_task_index_answer_what_a_whole_read_answers(memory: Memory, damage: str) -> None:
    """With the checkpoint vouching, the read commands answer from the task index and its summaries; without them
    (removed: the whole ledger is read, or each task folded from its lines) every answer is the same."""
    import shutil

    ids = memory.populate()
    memory.call(
        "intent_add_evidence",
        {  # a candidate-free write after the last rebuild: summaries advanced in place
            "task_id": ids["b"],
            "request_id": "r6",
            "statement": "The CLI tests pass",
            "source_ref": {"kind": "tool_result", "event_id": "run-6"},
            "facets": ["result_feedback"],
        },
    )

    def answers() -> list[Any]:
        found = []
        for args in (("projects",), ("tasks",), ("status",), ("show", ids["a"]), ("show", ids["b"], "--history")):
            code, body = memory.json(*args)
            assert code == 0, body
            if args[0] == "show":
                body["snapshot"].pop("generated_at")
            if args[0] == "status":
                body.pop("last_hook_problem", None)
            found.append(body)
        exported = memory.run("export", ids["a"], "--format", "markdown")
        assert exported.returncode == 0, exported.stderr
        found.append([line for line in exported.stdout.splitlines() if not line.startswith("- exported at")])
        return found

    indexed = answers()
    index = next(memory.dir.glob("index-*"))
    assert (index / "counts.json").exists() and list(index.glob("s-*"))  # positive control: there was an index
    if damage == "checkpoint":
        (memory.dir / "ledger.checkpoint.json").unlink()
    elif damage == "index":
        shutil.rmtree(index)
    else:
        for summary in index.glob("s-*"):
            summary.write_bytes(summary.read_bytes().replace(b'"active":', b'"active":9'))
    assert answers() == indexed


def test_ids_are_unique_prefixes_ambiguity_and_absence_have_their_own_codes(memory: Memory) -> None:
    ids = memory.populate()
    started = [ids["a"], ids["b"]]
    started += [memory.call("intent_start_task", {"request_id": f"t{i}"})["task_id"] for i in range(15)]
    shared = next(c for c in "0123456789abcdef" if sum(t.startswith(c) for t in started) >= 2)  # 17 ids, 16 digits
    code, body = memory.json("show", shared.upper())
    assert code == 2 and body["error"]["code"] == "AMBIGUOUS_ID" and "is the start of " in body["error"]["message"]
    assert all(t in body["error"]["message"] for t in sorted(t for t in started if t.startswith(shared))[:5])
    code, body = memory.json("show", "ffffffff-ffff")
    wanted = "TASK_NOT_FOUND" if not (ids["a"].startswith("ffff") or ids["b"].startswith("ffff")) else "AMBIGUOUS_ID"
    assert body["error"]["code"] == wanted and code == (5 if wanted == "TASK_NOT_FOUND" else 2)
    for bad in ("not-hex!", ""):
        code, body = memory.json("show", bad)
        assert code == 2 and body["error"]["code"] == "INVALID_ID"
    code, body = memory.json("show", ids["a"])  # positive control: the full id
    assert code == 0 and body["snapshot"]["task_id"] == ids["a"]
    code, body = memory.json("tasks", cwd=memory.tmp)  # a folder without memory
    assert (
        code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND" and "current directory" in body["error"]["message"]
    )
    human = memory.run("tasks", cwd=memory.tmp)
    assert human.returncode == 5 and "remedy: `intentloop projects`" in human.stderr
    assert memory.run("tasks", "--bogus").returncode == 2  # a usage error is not "not found"


def test_show_and_export_read_an_off_task_that_the_tools_refuse(memory: Memory) -> None:
    ids = memory.populate()
    memory.call("intent_set_mode", {"task_id": ids["b"], "request_id": "off", "mode": "off"})
    code, body = memory.json("show", ids["b"])
    assert code == 0 and body["snapshot"]["mode"] == "off"
    assert [c["statement"] for c in body["snapshot"]["active_claims"]] == ["Nothing else"]
    code, body = memory.json("export", ids["b"], "--format", "json")
    assert code == 0 and [c["statement"] for c in body["document"]["claims"]] == ["Nothing else"]
    code, body = memory.json("tasks")
    assert {row["task_id"]: row["mode"] for row in body["tasks"]}[ids["b"]] == "off"
    # control: an agent's semantic read through the tool is still refused
    with pytest.raises(IntentLoopError) as refused:
        memory.call("intent_get_snapshot", {"task_id": ids["b"]})
    assert refused.value.code == "MODE_OFF"


def test_mode_turns_a_task_off_and_on_through_the_tools_event(memory: Memory) -> None:
    ids = memory.populate()
    code, body = memory.json("mode", ids["a"][:8], "off")
    assert code == 0 and body["mode"] == "off" and body["previous_mode"] == "on" and body["changed"]
    with pytest.raises(IntentLoopError) as refused:
        memory.call("intent_get_snapshot", {"task_id": ids["a"]})
    assert refused.value.code == "MODE_OFF"
    ledger = (memory.dir / "ledger.jsonl").read_bytes()
    again = memory.run("mode", ids["a"][:8], "OFF")
    assert again.returncode == 0 and "it already was" in again.stdout
    assert (memory.dir / "ledger.jsonl").read_bytes() == ledger  # the same mode writes nothing
    code, body = memory.json("mode", ids["a"][:8], "on")
    assert code == 0 and body["mode"] == "on"
    assert memory.call("intent_get_snapshot", {"task_id": ids["a"]})["mode"] == "on"
    # private needs a running server; any other word is a usage error
    for word in ("private", "maybe"):
        code, body = memory.json("mode", ids["a"][:8], word)
        assert code == 2 and body["error"]["code"] == "INVALID_ARGUMENTS"


def test_show_history_and_as_of(memory: Memory) -> None:
    ids = memory.populate()
    code, body = memory.json("show", ids["a"], "--history")
    assert code == 0
    history = body["snapshot"]["history"]
    assert {entry["status"] for entry in history} == {"superseded", "invalidated"}
    superseded = next(entry for entry in history if entry["status"] == "superseded")
    assert superseded["claim"]["statement"] == "Keep the ledger v1" and superseded["by"]
    table = memory.run("show", ids["a"], "--history")
    assert table.returncode == 0 and "History (2)" in table.stdout and "superseded" in table.stdout
    # control: without --history there is no history, in either form
    assert "history" not in memory.json("show", ids["a"])[1]["snapshot"]
    assert "History" not in memory.run("show", ids["a"]).stdout
    # --as-of one millisecond before the replacement was recorded: the first statement is still active
    replaced_at = datetime.strptime(superseded["at"], "%Y-%m-%dT%H:%M:%S.%fZ")
    before = (replaced_at - timedelta(milliseconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    code, body = memory.json("show", ids["a"], "--as-of", before)
    assert code == 0 and "Keep the ledger v1" in [c["statement"] for c in body["snapshot"]["active_claims"]]
    code, body = memory.json("show", ids["a"], "--as-of", "2000-01-01T00:00:00Z")  # before the task started
    assert code == 5 and body["error"]["code"] == "TASK_NOT_FOUND"


def test_tasks_on_a_damaged_ledger_shows_the_verified_prefix_and_says_so(memory: Memory) -> None:
    ids = memory.populate()
    ledger = memory.dir / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    last = len(lines)
    lines[-1] = lines[-1].replace(b"Nothing else", b"Nothing ELSE")
    ledger.write_bytes(b"".join(lines))
    done = memory.run("tasks")
    assert (
        done.returncode == 0 and f"damaged at line {last}" in done.stderr and "warning[CORRUPT_LEDGER]" in done.stderr
    )
    code, body = memory.json("tasks")
    assert code == 0 and body["damage"]["line"] == last
    assert {r["task_id"]: r["claims"]["active"] for r in body["tasks"]}[ids["b"]] == 0  # its claim was the bad line


# ------------------------------------------------------------------------------------------------- export


def test_export_markdown_and_json_to_stdout_and_to_a_private_file(memory: Memory) -> None:
    ids = memory.populate()
    done = memory.run("export", ids["a"][:6])
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert text.startswith("# Intent record: Ship [the] CLI")
    assert "## Active claims (2)" in text and "## Superseded claims (1)" in text and "## Invalidated claims (1)" in text
    superseded = text.split("## Superseded claims (1)")[1].split("## Invalidated")[0]
    assert "Keep the ledger v1" in superseded and ids["first"] in superseded
    invalidated = text.split("## Invalidated claims (1)")[1]
    assert "Print a banner" in invalidated and "changed my mind" in invalidated
    assert "provenance: user_event (event `turn-2`)" in text and f"supersedes: `{ids['first']}`" in text

    graph = json.loads(memory.run("export", ids["a"], "--format", "json").stdout)
    assert graph["format"] == "intent-loop-export" and graph["source_task_id"] == ids["a"]
    assert {c["claim_id"] for c in graph["claims"]} == {ids["first"], ids["second"], ids["gone"]} | {
        c["claim_id"] for c in graph["claims"] if c["statement"] == "Use typer"
    }
    assert graph["invalidated_claim_ids"] == [ids["gone"]]

    out = memory.tmp / "task.md"
    code, body = memory.json("export", ids["a"], "--out", str(out))
    assert code == 0 and body["out"] == str(out) and out.read_text().startswith("# Intent record")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    code, body = memory.json("export", ids["a"], "--out", str(out))
    assert code == 2 and body["error"]["code"] == "OUTPUT_EXISTS"
    assert memory.json("export", ids["a"], "--out", str(out), "--overwrite")[0] == 0
    code, body = memory.json("export", ids["a"], "--format", "yaml")
    assert code == 2 and body["error"]["code"] == "INVALID_ARGUMENTS"
    # a copy inside the data root would outlive a later `forget` there: refused, and nothing is written
    for inside in (memory.data_root / "task.md", memory.dir / "task.json"):
        code, body = memory.json("export", ids["a"], "--out", str(inside))
        assert code == 2 and body["error"]["code"] == "OUTPUT_INSIDE_DATA_ROOT" and not inside.exists()


def test_show_and_export_name_the_bound_file_and_whether_it_is_stale(memory: Memory) -> None:
    log = memory.root / "logs" / "build.log"
    log.parent.mkdir()
    log.write_bytes(b"FAILED test_login\n")
    task = memory.call("intent_start_task", {"request_id": "s1", "label": "evidence"})["task_id"]
    for request, statement, extra in (
        ("e1", "CI failed on test_login", {"evidence_path": "logs/build.log"}),
        ("e2", "A reviewer approved", {}),
    ):
        memory.call(
            "intent_add_evidence",
            {
                "task_id": task,
                "request_id": request,
                "statement": statement,
                "source_ref": {"kind": "tool_result", "event_id": f"ci-{request}"},
                "facets": ["result_feedback"],
                **extra,
            },
        )
    memory.env["COLUMNS"] = "200"  # one table row per claim

    def shown() -> dict[str, str]:
        done = memory.run("show", task)
        assert done.returncode == 0, done.stderr
        rows = [line for line in done.stdout.splitlines() if "CI failed" in line or "A reviewer" in line]
        return {("bound" if "CI failed" in row else "plain"): row for row in rows}

    def exported() -> str:
        done = memory.run("export", task)
        assert done.returncode == 0, done.stderr
        return done.stdout

    rows = shown()
    assert "logs/build.log (current)" in rows["bound"] and "logs/build.log" not in rows["plain"]
    assert "- evidence file: `logs/build.log` (current)" in exported()
    assert exported().count("- evidence file:") == 1  # only the bound claim has the line
    log.write_bytes(b"passed\n")
    assert "logs/build.log (stale)" in shown()["bound"]
    assert "- evidence file: `logs/build.log` (stale)" in exported()
    # Named by id from another folder, the project's root is unknown: the file is not checked (never against the
    # working directory, which here holds a file of that name with the recorded bytes).
    elsewhere = memory.tmp / "elsewhere"
    (elsewhere / "logs").mkdir(parents=True)
    (elsewhere / "logs" / "build.log").write_bytes(b"FAILED test_login\n")
    done = memory.run("show", task, "--project-id", memory.pid, cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert "logs/build.log (not checked)" in done.stdout
    done = memory.run("export", task, "--project-id", memory.pid, cwd=elsewhere)
    assert done.returncode == 0 and "- evidence file: `logs/build.log` (not checked)" in done.stdout, done.stderr
    code, body = memory.json("show", task, "--project-id", memory.pid, cwd=elsewhere)
    [bound] = [c for c in body["snapshot"]["active_claims"] if "evidence_file" in c]
    assert code == 0 and "evidence_stale" not in bound
    code, body = memory.json("show", task)  # control: from the project, the mark is there
    [bound] = [c for c in body["snapshot"]["active_claims"] if "evidence_file" in c]
    assert code == 0 and bound["evidence_stale"] is True


# ------------------------------------------------------------------------------------------------- forget


def _bytes_under(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


def test_forget_claim_deletes_every_byte_of_it_with_yes(memory: Memory) -> None:
    ids = memory.populate()
    assert ids["first"].encode() in _bytes_under(memory.dir)
    code, body = memory.json("forget", "claim", ids["first"][:8], "--yes")
    assert code == 0 and body["action"] == "deleted" and body["claim_id"] == ids["first"]
    assert body["task_id"] == ids["a"] and body["persistent_files_scanned"] >= 1
    assert ids["first"].encode() not in _bytes_under(memory.dir)
    assert ids["second"].encode() in _bytes_under(memory.dir)  # positive control: the rest is still there
    assert memory.run("verify").returncode == 0
    code, body = memory.json("forget", "claim", ids["first"], "--yes")
    assert code == 5 and body["error"]["code"] == "CLAIM_NOT_FOUND"


def test_forget_claim_of_a_replacement_never_brings_back_what_it_replaced(memory: Memory) -> None:
    """``second`` superseded ``first``: after forgetting ``second``, ``first`` stays out of every current view with a
    content-free reason, and the history says so."""
    ids = memory.populate()
    code, body = memory.json("forget", "claim", ids["second"], "--yes")
    assert code == 0 and body["action"] == "deleted"
    code, body = memory.json("show", ids["a"], "--history")
    assert code == 0
    assert [c["statement"] for c in body["snapshot"]["active_claims"]] == ["Use typer"]
    (entry,) = [e for e in body["snapshot"]["history"] if e["claim"]["claim_id"] == ids["first"]]
    assert entry["status"] == "invalidated" and entry["reason"] == "superseded by a deleted claim"
    human = memory.run("show", ids["a"])
    assert human.returncode == 0 and "Use typer" in human.stdout and "Keep the ledger v1" not in human.stdout
    code, body = memory.json("tasks")
    tasks = {t["task_id"]: t for t in body["tasks"]}
    assert tasks[ids["a"]]["claims"] == {"active": 1, "superseded": 0, "invalidated": 2}
    assert memory.run("verify").returncode == 0
    assert ids["second"].encode() not in _bytes_under(memory.dir)


def test_forget_task_prints_what_was_scanned(memory: Memory) -> None:
    ids = memory.populate()
    done = memory.run("forget", "task", ids["b"][:8], "--yes")
    assert done.returncode == 0, done.stderr
    assert f"Deleted task {ids['b']}." in done.stdout and "no byte of its id remains" in done.stdout
    assert "Scanned 2 files under" in done.stdout  # the ledger, and the tombstones of its claim's statement
    assert ids["b"].encode() not in _bytes_under(memory.dir) and ids["a"].encode() in _bytes_under(memory.dir)


def test_forget_without_a_terminal_needs_yes_and_changes_nothing(memory: Memory) -> None:
    ids = memory.populate()
    before = memory.tree()
    code, body = memory.json("forget", "task", ids["a"])
    assert code == 2 and body["error"]["code"] == "CONFIRMATION_REQUIRED"
    done = memory.run("forget", "claim", ids["second"], stdin=f"DELETE CLAIM {ids['second']}\n")  # piped: no terminal
    assert done.returncode == 2 and "--yes" in done.stderr
    assert memory.tree() == before


def _on_terminal(memory: Memory, args: list[str], answer: bytes, prompt: bytes) -> tuple[int, str, bytes]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*INTENTLOOP, *args], stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=memory.env, cwd=memory.root
    )
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    while prompt not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            seen += os.read(master, 4096)
    os.write(master, answer)
    stdout, _ = proc.communicate(timeout=60)
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if not ready:
                break
            chunk = os.read(master, 4096)
            if not chunk:
                break
            seen += chunk
    except OSError:
        pass
    os.close(master)
    return proc.returncode, stdout.decode(), seen


def test_forget_on_a_terminal_asks_for_the_tools_confirmation_text(memory: Memory) -> None:
    ids = memory.populate()
    wrong = _on_terminal(memory, ["forget", "task", ids["b"]], b"yes\n", b"to confirm:")
    assert wrong[0] == 1 and f"Type DELETE TASK {ids['b']} to confirm" in wrong[2].decode()
    assert ids["b"].encode() in _bytes_under(memory.dir)  # "yes" is not the confirmation text
    right = _on_terminal(memory, ["forget", "task", ids["b"]], f"DELETE TASK {ids['b']}\n".encode(), b"to confirm:")
    assert right[0] == 0 and "no byte of its id remains" in right[1]
    assert ids["b"].encode() not in _bytes_under(memory.dir)


# ------------------------------------------------------------------------------------------------- salvage


def _fields(line: bytes) -> tuple[Any, ...]:
    event = json.loads(line)
    return (
        event["event_type"],
        event["task_id"],
        event["actor"],
        event["request_id"],
        event["occurred_at"],
        json.dumps(event["payload"], sort_keys=True),
    )


@pytest.mark.parametrize("where", ["first", "middle", "last", "torn"])
def test_one_damaged_line_costs_one_event_after_quarantine_and_salvage(memory: Memory, where: str) -> None:
    from intentloop.model import EVENT_TYPES
    from intentloop.store import verify_ledger_bytes

    memory.populate()
    ledger = memory.dir / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    count = len(lines)
    index = {"first": 0, "middle": count // 2, "last": count - 1, "torn": count - 1}[where]
    if where == "torn":
        damaged = [*lines[:index], lines[index][:40]]
    else:
        damaged = list(lines)
        damaged[index] = lines[index].replace(b'"occurred_at":"2026-', b'"occurred_at":"2025-', 1)
        assert damaged[index] != lines[index]
    ledger.write_bytes(b"".join(damaged))
    assert memory.run("verify").returncode == 1

    done = memory.run("recover", "quarantine", "--yes")
    assert done.returncode == 0, done.stderr
    set_aside = count - index
    assert f"{set_aside} event{'s' if set_aside != 1 else ''}" in done.stdout or where == "torn"
    assert memory.run("verify").returncode == 0
    assert len(ledger.read_bytes().splitlines()) == index  # only the verified prefix is left

    shown = memory.run("recover", "salvage")  # without a terminal: the plan is printed, then --yes is asked for
    assert ("Set aside, not re-appended:" in shown.stdout) == (where == "first"), shown.stdout
    code, body = memory.json("recover", "salvage", "--yes")
    assert code == 0, body
    # The damaged line started a task ("first"): that task's later events would be claims nobody sees, so they stay
    # set aside; every other event comes back.
    damaged_event = json.loads(lines[index])
    lost = damaged_event["task_id"] if damaged_event["event_type"] == "task_started" else None
    aside = [i for i in range(index + 1, count) if json.loads(lines[i])["task_id"] == lost]
    assert bool(aside) == (where == "first")
    appended = count - index - 1 - len(aside)
    assert len(body["appended"]) == appended and body["action"] == ("salvaged" if appended else "none")
    assert [s["line"] for s in body["skipped"]] == [index + 1, *(i + 1 for i in aside)]  # the damaged line, and
    assert [s.get("set_aside", False) for s in body["skipped"][1:]] == [True] * len(aside)  # what it started
    after = ledger.read_bytes()
    check = verify_ledger_bytes(after, project_id=memory.pid)
    assert check.error is None and len(check.events) == count - 1 - len(aside)
    assert {e.event_type for e in check.events} <= EVENT_TYPES  # only event types the original knows
    expected = [_fields(line) for i, line in enumerate(lines) if i != index and i not in aside]
    assert [_fields(line) for line in after.splitlines(keepends=True)] == expected
    listed = {row["task_id"] for row in memory.json("tasks")[1]["tasks"]}
    assert {e.task_id for e in check.events} <= listed  # every event given back belongs to a task readers see
    if appended:
        [record] = list((memory.dir / "quarantine").glob("salvaged-*.json"))
        provenance = json.loads(record.read_bytes())
        originals = [json.loads(line)["event_id"] for i, line in enumerate(lines) if i > index and i not in aside]
        assert [e["original_event_id"] for e in provenance["events"]] == originals
        assert {e["new_event_id"] for e in provenance["events"]} == {e.event_id for e in check.events[index:]}

    again_code, again = memory.json("recover", "salvage", "--yes")  # twice changes nothing more
    assert again_code == 0 and again["action"] == "none" and not again["appended"]
    assert ledger.read_bytes() == after
    assert memory.run("verify").returncode == 0
    if appended:  # the salvaged memory is usable: a new write extends the chain
        task = check.events[-1].task_id
        state = memory.json("tasks")[1]
        if task in {row["task_id"] for row in state["tasks"]}:
            memory.claim(task, "after-salvage", "Written after salvage")
            assert memory.run("verify").returncode == 0


def test_salvage_with_summary_only_has_nothing_to_give_back_and_says_so(memory: Memory) -> None:
    memory.populate()
    ledger = memory.dir / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"occurred_at":"2026-', b'"occurred_at":"2025-', 1)
    ledger.write_bytes(b"".join(lines))
    assert memory.run("recover", "quarantine", "--yes", "--summary-only").returncode == 0
    kept = ledger.read_bytes()
    done = memory.run("recover", "salvage", "--yes")
    assert done.returncode == 0 and "summary only" in done.stdout and "Nothing to salvage" in done.stdout
    assert ledger.read_bytes() == kept


def test_salvage_without_a_terminal_needs_yes(memory: Memory) -> None:
    memory.populate()
    ledger = memory.dir / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"occurred_at":"2026-', b'"occurred_at":"2025-', 1)
    ledger.write_bytes(b"".join(lines))
    assert memory.run("recover", "quarantine", "--yes").returncode == 0
    kept = ledger.read_bytes()
    code, body = memory.json("recover", "salvage")
    assert code == 2 and body["error"]["code"] == "CONFIRMATION_REQUIRED" and ledger.read_bytes() == kept
    assert memory.json("recover", "salvage", "--yes")[0] == 0 and ledger.read_bytes() != kept


# ------------------------------------------------------------------------------------------------- relink


def test_relink_moves_every_event_to_the_new_root_and_both_chains_verify(memory: Memory) -> None:
    from intentloop.store import verify_ledger_bytes

    ids = memory.populate()
    old_lines = (memory.dir / "ledger.jsonl").read_bytes().splitlines(keepends=True)
    moved = memory.tmp / "moved"
    memory.root.rename(moved)  # the folder was moved: its old path no longer exists
    new = Memory(memory.tmp, "moved")
    assert memory.json("tasks", cwd=moved)[0] == 5  # the moved folder finds no memory yet

    code, body = memory.json("relink", "--from", str(memory.root), "--to", str(moved), "--yes", cwd=memory.tmp)
    assert code == 0, body
    assert (body["from_project_id"], body["to_project_id"]) == (memory.pid, new.pid)
    assert body["events"] == len(old_lines) and body["tasks"] == 2 and body["mode"] == "move"
    new_bytes = (new.dir / "ledger.jsonl").read_bytes()
    check = verify_ledger_bytes(new_bytes, project_id=new.pid)
    assert check.error is None and [e.event_id for e in check.events] == [json.loads(x)["event_id"] for x in old_lines]
    assert [_fields(x) for x in new_bytes.splitlines(keepends=True)] == [_fields(x) for x in old_lines]
    assert (memory.dir / "ledger.jsonl").read_bytes() == b""  # the old ledger is emptied (and still verifies)
    [record] = list((memory.dir / "quarantine").glob("relinked-*.json"))
    assert json.loads(record.read_bytes())["to_project_id"] == new.pid
    assert body["left_in_old_quarantine"] == []

    code, body = new.json("show", ids["a"][:8], cwd=moved)  # the memory is found from the new folder
    assert code == 0 and body["project_id"] == new.pid
    new.claim(ids["a"], "after-move", "Written after the move")  # and extends normally
    assert new.run("verify", cwd=moved).returncode == 0
    again = memory.json("relink", "--from", memory.pid[:12], "--to", str(moved), "--yes", cwd=memory.tmp)
    assert again[0] == 0 and again[1]["action"] == "none"  # nothing left to move


def test_relink_refuses_a_target_with_memory_unless_merge(memory: Memory) -> None:
    ids = memory.populate()
    target = Memory(memory.tmp, "target")
    kept = target.call("intent_start_task", {"request_id": "t", "label": "already here"})["task_id"]
    target_before = (target.dir / "ledger.jsonl").read_bytes()
    old_before = (memory.dir / "ledger.jsonl").read_bytes()

    code, body = memory.json("relink", "--from", memory.canonical, "--to", target.canonical, "--yes")
    assert code == 2 and body["error"]["code"] == "RELINK_TARGET_EXISTS" and "--merge" in body["error"]["remedy"]
    assert (target.dir / "ledger.jsonl").read_bytes() == target_before
    assert (memory.dir / "ledger.jsonl").read_bytes() == old_before

    code, body = memory.json("relink", "--from", memory.pid[:10], "--to", target.canonical, "--merge", "--yes")
    assert code == 0, body
    assert body["mode"] == "merge" and {m["task_id"] for m in body["merged"]} == {ids["a"], ids["b"]}
    assert target.run("verify", cwd=target.root).returncode == 0
    tasks = {row["task_id"]: row for row in target.json("tasks", cwd=target.root)[1]["tasks"]}
    assert set(tasks) == {kept, ids["a"], ids["b"]}
    assert tasks[ids["a"]]["label"] == "Ship [the] CLI"
    assert tasks[ids["a"]]["claims"]["active"] == 2 and tasks[ids["b"]]["claims"]["active"] == 1
    assert (memory.dir / "ledger.jsonl").read_bytes() == b""


def test_relink_usage_and_not_found(memory: Memory) -> None:
    memory.populate()
    code, body = memory.json("relink", "--from", memory.canonical, "--to", memory.canonical, "--yes")
    assert code == 2 and body["error"]["code"] == "INVALID_ARGUMENTS"
    code, body = memory.json("relink", "--from", str(memory.tmp / "never-was"), "--to", memory.canonical, "--yes")
    assert code == 5 and body["error"]["code"] == "PROJECT_NOT_FOUND"
    other = memory.tmp / "other"
    other.mkdir()
    code, body = memory.json("relink", "--from", memory.canonical, "--to", str(other))  # no terminal, no --yes
    assert code == 2 and body["error"]["code"] == "CONFIRMATION_REQUIRED"
    assert not (memory.data_root / "projects" / project_id_for(os.path.realpath(other))).exists()


# ------------------------------------------------------------------------------------------------- small things


def test_version_python_dash_m_and_completion(memory: Memory) -> None:
    from intentloop import __version__

    done = memory.run("--version")
    assert done.returncode == 0 and done.stdout == f"intentloop {__version__}\n"
    module = subprocess.run(
        [sys.executable, "-m", "intentloop", "--version"], capture_output=True, text=True, env=memory.env, timeout=60
    )
    assert module.returncode == 0 and module.stdout == done.stdout
    env = {**memory.env, "_INTENTLOOP_COMPLETE": "complete_bash", "COMP_WORDS": "intentloop rel", "COMP_CWORD": "1"}
    completed = subprocess.run([*INTENTLOOP], capture_output=True, text=True, env=env, timeout=60)
    assert completed.returncode == 0 and completed.stdout.split() == ["relink"]
    env["COMP_WORDS"] = "intentloop recover s"
    env["COMP_CWORD"] = "2"
    completed = subprocess.run([*INTENTLOOP], capture_output=True, text=True, env=env, timeout=60)
    assert completed.stdout.split() == ["salvage"]
    assert "--show-completion" in memory.run("--help").stdout


def test_hook_help_prints_help_and_the_hook_path_still_answers(memory: Memory) -> None:
    for flag in ("--help", "-h"):
        done = memory.run("hook", flag)
        assert done.returncode == 0 and "Usage: intentloop hook" in done.stdout and "session-start" in done.stdout
    answer = memory.run("hook", stdin="not json")  # positive control: without --help it is still the hook
    assert answer.returncode == 0 and json.loads(answer.stdout)["continue"] is True


_CRASH = """
import sys
import intentloop.cli.views
def boom(*args, **kwargs):
    raise RuntimeError("secret-looking detail")
intentloop.cli.views._projects = boom
sys.argv = ["intentloop", "projects"]
from intentloop.cli.entry import main
main()
"""


def test_internal_error_debug_prints_one_line_not_a_traceback(memory: Memory) -> None:
    quiet = subprocess.run([sys.executable, "-c", _CRASH], capture_output=True, text=True, env=memory.env, timeout=60)
    assert quiet.returncode == 1 and "error[INTERNAL_ERROR]" in quiet.stderr and "debug" not in quiet.stderr
    loud_env = {**memory.env, "INTENT_LOOP_DEBUG": "1"}
    loud = subprocess.run([sys.executable, "-c", _CRASH], capture_output=True, text=True, env=loud_env, timeout=60)
    assert loud.returncode == 1 and "Traceback" not in loud.stderr
    [debug] = [line for line in loud.stderr.splitlines() if line.startswith("intentloop: debug:")]
    assert debug.startswith("intentloop: debug: RuntimeError at intentloop/cli/views.py:") and "secret" not in debug
    assert len(loud.stderr.splitlines()) == len(quiet.stderr.splitlines()) + 1  # exactly one line more


def test_serve_on_a_terminal_says_what_it_is_and_how_to_stop(memory: Memory) -> None:
    piped = memory.run("serve", stdin="")
    assert piped.returncode == 0 and piped.stderr == "" and piped.stdout == ""  # hosts see nothing extra
    master, slave = pty.openpty()
    proc = subprocess.Popen([*INTENTLOOP, "serve"], stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=memory.env)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 30
    try:
        while b"Ctrl-C" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                seen += os.read(master, 4096)
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
        os.close(master)
    assert b"speaks MCP" in seen and b"Ctrl-C" in seen
    assert not memory.data_root.exists()


def test_relink_names_the_quarantine_files_it_leaves_with_the_old_id(memory: Memory) -> None:
    memory.populate()
    ledger = memory.dir / "ledger.jsonl"
    lines = ledger.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"occurred_at":"2026-', b'"occurred_at":"2025-', 1)
    ledger.write_bytes(b"".join(lines))
    assert memory.run("recover", "quarantine", "--yes").returncode == 0
    left = sorted(p.name for p in (memory.dir / "quarantine").iterdir())
    target = memory.tmp / "new-home"
    target.mkdir()
    done = memory.run("relink", "--from", memory.canonical, "--to", str(target), "--yes")
    assert done.returncode == 0, done.stderr
    assert "Note: 2 earlier quarantine files stayed in" in done.stdout
    code, body = Memory(memory.tmp, "new-home").json("relink", "--from", memory.canonical, "--to", str(target))
    assert code == 0 and body["action"] == "none"  # a second run finds nothing to move (and asks nothing)
    assert len(left) == 2 and {n.rsplit(".", 1)[1] for n in left} == {"json", "bytes"}


def test_a_merge_interrupted_halfway_is_finished_by_running_it_again(memory: Memory) -> None:
    ids = memory.populate()
    target = Memory(memory.tmp, "target")
    target.call("intent_start_task", {"request_id": "t", "task_id": ids["b"], "mode": "off"})  # B cannot take imports
    old_before = (memory.dir / "ledger.jsonl").read_bytes()
    code, body = memory.json("relink", "--from", memory.canonical, "--to", target.canonical, "--merge", "--yes")
    assert code == 1 and body["error"]["code"] == "MODE_OFF"  # A was imported, then B refused
    assert (memory.dir / "ledger.jsonl").read_bytes() == old_before  # so the old ledger was not emptied
    target.call("intent_set_mode", {"task_id": ids["b"], "request_id": "on", "mode": "on"})
    code, body = memory.json("relink", "--from", memory.canonical, "--to", target.canonical, "--merge", "--yes")
    assert code == 0, body
    merged = {m["task_id"]: m for m in body["merged"]}
    assert merged[ids["a"]]["already_imported"] is True and merged[ids["b"]]["already_imported"] is False
    tasks = {row["task_id"]: row for row in target.json("tasks", cwd=target.root)[1]["tasks"]}
    assert tasks[ids["a"]]["claims"]["active"] == 2  # imported once, not twice
    assert tasks[ids["b"]]["claims"]["active"] == 1
    assert (memory.dir / "ledger.jsonl").read_bytes() == b""
